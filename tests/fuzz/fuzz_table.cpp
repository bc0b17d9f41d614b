// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer entry point of the flow-table target: every input is a script (table_script.h) of inserts,
// lookups, deletes and cop passes run against a fresh FlowTable and a simple model (table_driver.h).
// No EAL: the table lives in heap memory. Linked with -fsanitize=fuzzer in the fuzz build, and with
// replay_main.cpp in every build.
#include "table_driver.h"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string broken = flowcop::fuzz::run_table(data, size);
    if (!broken.empty()) {
        std::fprintf(stderr, "fuzz_table: %s (input of %zu bytes)\n", broken.c_str(), size);
        std::abort();
    }
    return 0;
}
