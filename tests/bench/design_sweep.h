// SPDX-License-Identifier: BSD-3-Clause
// Seed 000's "previous implementation" (and seed 003's IdleScanner): no timer structure at all. A
// packet stores last_seen; once per tick the cop walks every flow and fires those whose
// last_seen + timeout has passed. A tick costs the flows open, not the flows due.
#pragma once

#include "design_flow.h"

#include <vector>

namespace flowcop::bench::designs {

class SweepDesign {
public:
    static constexpr const char* kName = "full sweep";
    static constexpr const char* kWork = "flows read";
    static constexpr const char* kTouchWork = "timer writes";
    static constexpr bool kRealTime = false;

    SweepDesign(uint32_t slots, uint64_t timeout_ns, uint64_t) : _flows(slots), _timeout(timeout_ns) {}

    void open(uint32_t slot, uint64_t now_ns) noexcept { open_payload(_flows[slot].m, _flows[slot].p, now_ns); }
    void touch(uint32_t slot, uint64_t now_ns) noexcept { touch_payload(_flows[slot].p, now_ns); }

    PassResult expire(uint64_t now_ns, uint64_t, uint64_t, Sink& sink) noexcept
    {
        PassResult r;
        const uint32_t n = uint32_t(_flows.size());
        for (uint32_t i = 0; i < n; ++i) {
            Flow& f = _flows[i];
            if ((f.m.flags & kOpen) && f.p.last_seen_ns + _timeout <= now_ns) {
                sink.fire(i, f.m.flags, f.p.last_seen_ns + _timeout, f.p.packets);
                ++r.fired;
            }
        }
        r.work = n;
        return r;
    }

    uint64_t touch_work() const noexcept { return 0; }

private:
    struct Flow {
        Meta m;
        Payload p;
    };
    std::vector<Flow> _flows;
    uint64_t _timeout;
};

} // namespace flowcop::bench::designs
