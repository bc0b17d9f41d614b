// SPDX-License-Identifier: BSD-3-Clause
// Test-only: run a flowgen Core over a whole stream and read it back through trace.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <flowgen/config.h>
#include <flowgen/core.h>
#include <flowgen/stats.h>

#include "trace.h"

namespace flowcop::flowgen::test {

// parse_config() that must succeed (throws std::invalid_argument with the sentence otherwise).
Config config(const char* kvargs);

struct RunResult {
    Tracker tracker;
    Stats stats; // at the end of the run
    uint64_t frames = 0;
    uint64_t bad_frames = 0; // frames parse_frame() rejected
    std::string first_bad;   // its reason
    uint64_t first_us = 0, last_us = 0;
    bool timestamps_monotonic = true;
};

using FrameHook = std::function<void(const Frame&, uint64_t index, uint64_t ts_us, const Stats& so_far)>;

// Generates until Core is finished or max_frames (0: no cap) frames were produced.
RunResult run(const Config& cfg, uint64_t max_frames, const FrameHook& hook = {});

} // namespace flowcop::flowgen::test
