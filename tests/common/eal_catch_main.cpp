// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for test binaries that need DPDK's EAL (suite 'dpdk'): boots EAL with the one test
// bootstrap (eal_boot.h: no hugepages, no PCI, a file prefix per process, errors-only logging), then
// hands Catch2 its own arguments (-r tap, tags) untouched.
#define CATCH_CONFIG_RUNNER
#include "eal_boot.h"

#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>

#include <cstdio>

int main(int argc, char** argv)
{
    if (const std::string why = flowcop::test::start_eal(argv[0]); !why.empty()) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return 1;
    }
    return Catch::Session().run(argc, argv);
}
