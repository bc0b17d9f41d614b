// SPDX-License-Identifier: BSD-3-Clause
// init_eal_once() (see fuzz_eal.h).
#include "fuzz_eal.h"

#include <rte_eal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace flowcop::fuzz {

bool init_eal_once(const char* argv0)
{
    static int result = -1;
    if (result >= 0)
        return result == 1;
    const std::string prefix = "--file-prefix=flowcop_fuzz_" + std::to_string(getpid());
    const char* argv[] = {argv0,           "--no-huge", "-m", "256",          "--no-pci",
                          "--no-shconf",   "-l",        "0",  prefix.c_str(), "--log-level=error",
                          "--no-telemetry"};
    const int argc = int(sizeof(argv) / sizeof(argv[0]));
    result = rte_eal_init(argc, const_cast<char**>(argv)) >= 0 ? 1 : 0;
    if (result == 1)
        std::atexit([] { rte_eal_cleanup(); });
    else
        std::fprintf(stderr, "fuzz: EAL init failed (--no-huge -m 256 --no-pci --no-shconf -l 0)\n");
    return result == 1;
}

} // namespace flowcop::fuzz
