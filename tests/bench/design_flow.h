// SPDX-License-Identifier: BSD-3-Clause
// What every expiry design in the comparison benchmarks shares: the flow record payload (the fields
// flowcop's 64-byte record had besides its wheel hook until issue 19), the work done when a flow times out, and the
// result of one expiry pass. Each design adds only its own timer bookkeeping to the payload, laid out
// as its authors would (the member first, packed with the 4 bytes of state and flags).
//
// The design interface (a template parameter of the drivers, not a base class):
//   static constexpr const char* kName, kWork, kTouchWork; // work units of expire() and touch()
//   static constexpr bool kRealTime;            // the design reads the real clock (rte_timer)
//   D(uint32_t slots, uint64_t timeout_ns, uint64_t now_ns);
//   void open(uint32_t slot, uint64_t now_ns);  // a new flow: first/last seen = now, deadline now + timeout
//   void touch(uint32_t slot, uint64_t now_ns); // a packet: what it does to the flow's timer
//   PassResult expire(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget, Sink&);
//   uint64_t touch_work() const;                // cumulative work units spent by touch() and open()
// Only the wheel honours the budgets: the other designs fire everything due in one go, as they do
// in nginx (ngx_event_expire_timers), libuv (uv__run_timers), rte_timer_manage and the seeds.
#pragma once

#include <tcpstate/tcp_state.h>

#include <cstdint>
#include <vector>

namespace flowcop::bench::designs {

struct Meta {
    tcpstate::Tracker tcp; // 2 bytes
    uint8_t flags;         // kOpen
    uint8_t spare;
};
static_assert(sizeof(Meta) == 4);
inline constexpr uint8_t kOpen = 0x01;

struct Payload {
    uint64_t first_seen_ns;
    uint64_t last_seen_ns;
    uint64_t packets[2];
    uint64_t bytes[2];
};
static_assert(sizeof(Payload) == 48);

inline void open_payload(Meta& m, Payload& p, uint64_t now_ns) noexcept
{
    m.tcp = tcpstate::Tracker{tcpstate::State::syn_sent, 0};
    m.flags = kOpen;
    p = Payload{now_ns, now_ns, {1, 0}, {60, 0}};
}

// The per-packet payload update every design makes; the designs differ only in the timer work after it.
inline void touch_payload(Payload& p, uint64_t now_ns) noexcept
{
    p.last_seen_ns = now_ns;
    ++p.packets[0];
    p.bytes[0] += 128;
}

// The work of ending a flow, identical in every design: read the record as an event would, clear it,
// and remember the slot so the driver can open a new flow there (steady state).
struct Sink {
    uint64_t now_ns = 0;
    uint64_t fired = 0;
    uint64_t lag_max_ns = 0; // now - true deadline, over the flows fired
    uint64_t checksum = 0;   // keeps the record reads alive
    std::vector<uint32_t> slots;

    void fire(uint32_t slot, uint8_t& flags, uint64_t deadline_ns, const uint64_t* packets) noexcept
    {
        flags = 0;
        ++fired;
        checksum += packets[0] + packets[1];
        if (now_ns > deadline_ns && now_ns - deadline_ns > lag_max_ns)
            lag_max_ns = now_ns - deadline_ns;
        slots.push_back(slot); // reserved by the driver: no allocation in a timed pass
    }
};

struct PassResult {
    uint64_t fired = 0;
    uint64_t work = 0;      // in the design's kWork units
    bool exhausted = false; // a budget stopped the pass with due work left (wheel only)
};

} // namespace flowcop::bench::designs
