// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer entry points of the parser target: every input is one Ethernet frame (parse_check.h).
// Linked with -fsanitize=fuzzer in the fuzz build, and with replay_main.cpp in every build.
#include "parse_check.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (const char* broken = flowcop::fuzz::check_parse(data, size)) {
        std::fprintf(stderr, "fuzz_parse: %s (frame of %zu bytes)\n", broken, size);
        std::abort();
    }
    return 0;
}
