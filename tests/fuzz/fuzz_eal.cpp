// SPDX-License-Identifier: BSD-3-Clause
// init_eal_once() (see fuzz_eal.h), through the one test bootstrap (tests/common/eal_boot.h).
#include "fuzz_eal.h"

#include <eal_boot.h>

#include <cstdio>
#include <string>

namespace flowcop::fuzz {

bool init_eal_once(const char* argv0)
{
    flowcop::test::EalOptions options;
    options.memory_mb = 256;
    options.main_lcore_only = true;
    options.no_shconf = true;
    const std::string why = flowcop::test::start_eal(argv0, options);
    if (!why.empty())
        std::fprintf(stderr, "fuzz: %s\n", why.c_str());
    return why.empty();
}

} // namespace flowcop::fuzz
