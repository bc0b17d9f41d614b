// SPDX-License-Identifier: BSD-3-Clause
// flowcop's design: the real TimerWheel with flowcop's defaults (4096 one-second buckets) over 64-byte
// records of its 12-byte hook, the shared 4 bytes of state and the 48-byte payload, in a flat array.
// (The flow table keeps the hook in a 32-byte cold entry beside a 128-byte record, flow_record.h; the
// design benchmarks compare timer structures on one record shape, and the table's own cost is
// measured by bench_table_*.) A packet stores last_seen
// and nothing else (lazy rearm); a pass visits the flows whose cached due tick has come, fires the
// ones really due and re-links the extended ones, within the fire and visit budgets.
#pragma once

#include "design_flow.h"

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
        Record& r = _recs[slot];
        open_payload(r.meta, r.p, now_ns);
        _wheel.schedule(slot, now_ns + _timeout);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        touch_payload(_recs[slot].p, now_ns); // the deadline moved later: no wheel work (lazy rearm)
    }

    PassResult expire(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget, Sink& sink) noexcept
    {
        const timerwheel::ExpireResult r = _wheel.expire(now_ns, fire_budget, visit_budget, Callbacks{this, &sink});
        return {r.fired, r.visited, r.budget_exhausted};
    }

    uint64_t touch_work() const noexcept { return 0; }

private:
    struct alignas(64) Record {
        timerwheel::Hook hook;
        Meta meta;
        Payload p;
    };
    static_assert(sizeof(Record) == 64);
    struct HookOf {
        Record* recs;
        timerwheel::Hook& operator()(uint32_t i) const noexcept { return recs[i].hook; }
    };
    struct Callbacks {
        WheelDesign* d;
        Sink* sink;
        uint64_t deadline(uint32_t e) const noexcept
        {
            const Record& r = d->_recs[e];
            return (r.meta.flags & kOpen) ? r.p.last_seen_ns + d->_timeout : 0;
        }
        bool fire(uint32_t e) const noexcept
        {
            Record& r = d->_recs[e];
            sink->fire(e, r.meta.flags, r.p.last_seen_ns + d->_timeout, r.p.packets);
            return true;
        }
    };

    std::vector<Record> _recs;
    uint64_t _timeout;
    timerwheel::TimerWheel<HookOf> _wheel;
};

} // namespace flowcop::bench::designs
