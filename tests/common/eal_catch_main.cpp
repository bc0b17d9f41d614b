// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for test binaries that need DPDK's EAL (suite 'dpdk').
//
// EAL starts without hugepages or PCI (--no-huge --no-pci), with a file
// prefix named after the binary so concurrent test processes never share
// runtime state, and logs only errors. Catch2's own arguments (-r tap, tags)
// are passed through untouched.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>

#include <rte_eal.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

int main(int argc, char** argv)
{
    const char* base = std::strrchr(argv[0], '/');
    std::string prefix = "--file-prefix=" + std::string(base ? base + 1 : argv[0]) + "_" + std::to_string(getpid());
    std::string mem = "-m";
    std::string mem_mb = "1024";
    const char* eal_argv[] = {argv[0],    "--no-huge",    mem.c_str(),         mem_mb.c_str(),
                              "--no-pci", prefix.c_str(), "--log-level=error", "--no-telemetry"};
    if (rte_eal_init(int(sizeof(eal_argv) / sizeof(eal_argv[0])), const_cast<char**>(eal_argv)) < 0) {
        std::fprintf(stderr, "EAL init failed\n");
        return 1;
    }
    const int rc = Catch::Session().run(argc, argv);
    rte_eal_cleanup();
    return rc;
}
