// SPDX-License-Identifier: BSD-3-Clause
// DPDK's own per-object timers: a struct rte_timer (120 bytes: a 10-level skiplist node) in every
// flow, on this lcore's skiplist. A packet calls rte_timer_reset() with the full timeout (unlink and
// re-insert); a tick calls rte_timer_manage(), which splits off every expired timer and runs their
// callbacks in one go. rte_timer reads the TSC itself, so this design runs on real time: the driver
// waits for the real clock where the others just set a virtual one. Needs EAL and
// rte_timer_subsystem_init() (done by the constructor; a second call is harmless).
// The library's internal work (skiplist levels walked) is not observable: its work column is "n/a".
#pragma once

#include "design_flow.h"

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_timer.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>
#include <vector>

namespace flowcop::bench::designs {

class RteTimerDesign {
public:
    static constexpr const char* kName = "rte_timer (DPDK)";
    static constexpr const char* kWork = "n/a";
    static constexpr const char* kTouchWork = "n/a";
    static constexpr bool kRealTime = true;

    // The real clock rte_timer runs on, in ns.
    static uint64_t clock_ns() noexcept { return ns_of(rte_get_timer_cycles()); }

    RteTimerDesign(uint32_t slots, uint64_t timeout_ns, uint64_t) : _flows(slots), _timeout(timeout_ns)
    {
        const int rc = rte_timer_subsystem_init();
        if (rc < 0 && rc != -EALREADY)
            throw std::runtime_error("rte_timer_subsystem_init failed");
        for (Flow& f : _flows)
            rte_timer_init(&f.tim);
        _timeout_cycles = cycles_of(timeout_ns);
    }
    // The skiplist is the library's: nothing may stay on it pointing at freed flows. Stopped in
    // expiry order, each stop unlinks the list's head. In slot order (random against expiry) 10^6
    // stops took minutes: deletions empty the top levels, rte_timer lowers its search depth, never
    // raises it again faster than one level per 4^depth inserts, and each search then walks the
    // crowded remaining top level linearly.
    ~RteTimerDesign()
    {
        std::vector<std::pair<uint64_t, uint32_t>> pending;
        for (uint32_t i = 0; i < _flows.size(); ++i)
            if (_flows[i].tim.status.state == RTE_TIMER_PENDING)
                pending.emplace_back(_flows[i].tim.expire, i);
        std::sort(pending.begin(), pending.end());
        for (const auto& [expire, i] : pending)
            rte_timer_stop(&_flows[i].tim);
    }
    RteTimerDesign(const RteTimerDesign&) = delete;
    RteTimerDesign& operator=(const RteTimerDesign&) = delete;

    // now_ns is on clock_ns()'s scale; a deadline already past is armed to fire at the next manage.
    void open(uint32_t slot, uint64_t now_ns) noexcept
    {
        Flow& f = _flows[slot];
        open_payload(f.m, f.p, now_ns);
        const uint64_t deadline = now_ns + _timeout;
        const uint64_t now = clock_ns();
        rte_timer_reset(&f.tim, deadline > now ? cycles_of(deadline - now) : 0, SINGLE, rte_lcore_id(), on_timer, this);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        Flow& f = _flows[slot];
        touch_payload(f.p, now_ns);
        rte_timer_reset(&f.tim, _timeout_cycles, SINGLE, rte_lcore_id(), on_timer, this);
    }

    PassResult expire(uint64_t, uint64_t, uint64_t, Sink& sink) noexcept
    {
        _sink = &sink;
        const uint64_t before = sink.fired;
        rte_timer_manage();
        _sink = nullptr;
        return {sink.fired - before, 0, false};
    }

    uint64_t touch_work() const noexcept { return 0; }

private:
    __extension__ typedef unsigned __int128 u128; // ns <-> TSC cycles without overflow

    struct Flow {
        rte_timer tim; // first member: the callback gets the flow from the timer's address
        Meta m;
        Payload p;
    };

    static uint64_t cycles_of(uint64_t ns) noexcept
    {
        return uint64_t(static_cast<u128>(ns) * rte_get_timer_hz() / 1'000'000'000u);
    }
    static uint64_t ns_of(uint64_t cycles) noexcept
    {
        return uint64_t(static_cast<u128>(cycles) * 1'000'000'000u / rte_get_timer_hz());
    }
    static void on_timer(rte_timer* tim, void* arg)
    {
        auto* d = static_cast<RteTimerDesign*>(arg);
        auto* f = reinterpret_cast<Flow*>(tim);
        d->_sink->fire(uint32_t(f - d->_flows.data()), f->m.flags, f->p.last_seen_ns + d->_timeout, f->p.packets);
    }

    std::vector<Flow> _flows;
    uint64_t _timeout;
    uint64_t _timeout_cycles = 0;
    Sink* _sink = nullptr;
};

} // namespace flowcop::bench::designs
