// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer entry for the state file's reader and the table's restore (tests/fuzzing.md); the checks
// are in statefile_check.h. Linked to libFuzzer with -Dfuzz=true, to replay_main.cpp in every build.
#include "statefile_check.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (const char* broken = flowcop::fuzz::check_statefile(data, size)) {
        std::fprintf(stderr, "fuzz_statefile: %s (input of %zu bytes)\n", broken, size);
        std::abort();
    }
    return 0;
}
