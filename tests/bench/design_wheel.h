// SPDX-License-Identifier: BSD-3-Clause
// flowcop's design: the real 64-byte conntrack::FlowRecord with its 12-byte hook, in a flat array,
// on the real TimerWheel with flowcop's defaults (4096 one-second buckets). A packet stores last_seen
// and nothing else (lazy rearm); a pass visits the flows whose cached due tick has come, fires the
// ones really due and re-links the extended ones, within the fire and visit budgets.
#pragma once

#include "design_flow.h"

#include <conntrack/flow_record.h>
#include <timerwheel/timer_wheel.h>

#include <vector>

namespace flowcop::bench::designs {

class WheelDesign {
public:
    static constexpr const char* kName = "flowcop wheel";
    static constexpr const char* kWork = "visits";
    static constexpr const char* kTouchWork = "timer writes";
    static constexpr bool kRealTime = false;

    WheelDesign(uint32_t slots, uint64_t timeout_ns, uint64_t now_ns)
        : _recs(slots), _timeout(timeout_ns), _wheel(timerwheel::Config{}, HookOf{_recs.data()}, now_ns)
    {
        for (auto& r : _recs)
            timerwheel::init_hook(r.hook);
    }

    void open(uint32_t slot, uint64_t now_ns) noexcept
    {
        conntrack::FlowRecord& r = _recs[slot];
        r.tcp = tcpstate::Tracker{tcpstate::State::syn_sent, 0};
        r.flags = conntrack::FlowRecord::kInUse;
        r.first_seen_ns = r.last_seen_ns = now_ns;
        r.packets[0] = 1;
        r.packets[1] = 0;
        r.bytes[0] = 60;
        r.bytes[1] = 0;
        _wheel.schedule(slot, now_ns + _timeout);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        conntrack::FlowRecord& r = _recs[slot];
        r.last_seen_ns = now_ns; // the deadline moved later: no wheel work (lazy rearm)
        ++r.packets[0];
        r.bytes[0] += 128;
    }

    PassResult expire(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget, Sink& sink) noexcept
    {
        const timerwheel::ExpireResult r = _wheel.expire(now_ns, fire_budget, visit_budget, Callbacks{this, &sink});
        return {r.fired, r.visited, r.budget_exhausted};
    }

    uint64_t touch_work() const noexcept { return 0; }

private:
    struct HookOf {
        conntrack::FlowRecord* recs;
        timerwheel::Hook& operator()(uint32_t i) const noexcept { return recs[i].hook; }
    };
    struct Callbacks {
        WheelDesign* d;
        Sink* sink;
        uint64_t deadline(uint32_t e) const noexcept
        {
            const conntrack::FlowRecord& r = d->_recs[e];
            return (r.flags & conntrack::FlowRecord::kInUse) ? r.last_seen_ns + d->_timeout : 0;
        }
        bool fire(uint32_t e) const noexcept
        {
            conntrack::FlowRecord& r = d->_recs[e];
            sink->fire(e, r.flags, r.last_seen_ns + d->_timeout, r.packets);
            return true;
        }
    };

    std::vector<conntrack::FlowRecord> _recs;
    uint64_t _timeout;
    timerwheel::TimerWheel<HookOf> _wheel;
};

} // namespace flowcop::bench::designs
