// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer entry points of the tracking target: every input is a script (track_script.h) run
// against a fresh 256- or 8-flow FlowTable under the Oracle (track_driver.h). EAL starts once, in
// LLVMFuzzerInitialize. Linked with -fsanitize=fuzzer in the fuzz build, and with replay_main.cpp
// in every build.
#include "fuzz_eal.h"
#include "track_driver.h"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char*** argv)
{
    if (!flowcop::fuzz::init_eal_once((*argv)[0]))
        std::exit(1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string broken = flowcop::fuzz::run_track(data, size);
    if (!broken.empty()) {
        std::fprintf(stderr, "fuzz_track: %s (input of %zu bytes)\n", broken.c_str(), size);
        std::abort();
    }
    return 0;
}
