// SPDX-License-Identifier: BSD-3-Clause
#include "run.h"

#include <stdexcept>

namespace flowcop::flowgen::test {

Config config(const char* kvargs)
{
    Config c;
    const std::string err = parse_config(kvargs, c);
    if (!err.empty())
        throw std::invalid_argument(err);
    return c;
}

RunResult run(const Config& cfg, uint64_t max_frames, const FrameHook& hook)
{
    Core core(cfg);
    std::vector<uint8_t> buf(core.max_frame_len());
    RunResult r;
    uint64_t ts = 0, prev = 0;
    uint32_t len;
    while ((max_frames == 0 || r.frames < max_frames) && (len = core.next(buf.data(), ts)) != 0) {
        const Frame f = parse_frame(buf.data(), len);
        if (!f.error.empty() && r.bad_frames++ == 0)
            r.first_bad = f.error;
        if (r.frames == 0)
            r.first_us = ts;
        else if (ts < prev)
            r.timestamps_monotonic = false;
        prev = r.last_us = ts;
        if (f.error.empty())
            r.tracker.add(f, ts);
        if (hook)
            hook(f, r.frames, ts, core.stats());
        ++r.frames;
    }
    r.stats = core.stats();
    return r;
}

} // namespace flowcop::flowgen::test
