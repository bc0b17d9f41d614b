// SPDX-License-Identifier: BSD-3-Clause
// Test-only: the flowgen tests start EAL lazily, in the first case that needs it, through the one
// test bootstrap (tests/common/eal_boot.h); 256 MB is room for their pools.
#pragma once

#include <eal_boot.h>

#include <cstdio>

namespace flowcop::flowgen::test {

inline bool eal_up()
{
    flowcop::test::EalOptions options;
    options.memory_mb = 256;
    const std::string why = flowcop::test::start_eal("flowgen_test", options);
    if (!why.empty())
        std::fprintf(stderr, "%s\n", why.c_str());
    return why.empty();
}

} // namespace flowcop::flowgen::test
