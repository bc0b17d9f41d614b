// SPDX-License-Identifier: BSD-3-Clause
// EventBudget: the token bucket that bounds one lcore's update events for invalid TCP segments (issue 17).
//
// Contract: at most `rate` events pass in any one-second span after a burst of up to `rate`; rate 0 lets
// none pass. take(now_ns) spends one token and returns true, or returns false and spends nothing. The
// bucket starts full and a full second of time refills it whole. Owner lcore only (FlowTable's), no
// atomics, no allocation; only the table's cold branches for invalid segments call it, and only when a
// subscriber takes update events, so the steady packet never touches it.
// Degraded behaviour: a clock that steps back (the packet clock reads capture timestamps, which a looped
// replay restarts) grants nothing for the step and refills from the earlier time on, so the bucket is
// never starved; what it may grant twice is bounded by the burst.
// Arithmetic: credit is kept in token-nanoseconds (tokens x 10^9), exact for every rate up to
// kMaxInvalidEventRate: credit never exceeds rate x 10^9 <= 10^15, far inside 64 bits.
#pragma once

#include <cstdint>

namespace flowcop::conntrack {

// --events-invalid-rate's default: invalid segments' update events per second per lcore. A forged or
// broken stream makes an invalid segment per packet, millions a second; 100 a second (13.6 KB/s of ring at
// 136 bytes per event, ~50 KB/s of JSON lines) still shows an operator which flows and why, and cannot
// crowd state changes out of a 65535-event ring or a follower's socket.
inline constexpr uint32_t kDefaultInvalidEventRate = 100;
// The largest rate: a million a second per lcore is more than any consumer reads.
inline constexpr uint32_t kMaxInvalidEventRate = 1'000'000;

class EventBudget {
public:
    explicit EventBudget(uint32_t rate = kDefaultInvalidEventRate) noexcept : _rate(rate), _credit(full()) {}

    bool take(uint64_t now_ns) noexcept
    {
        if (now_ns > _last_ns) {
            const uint64_t elapsed = now_ns - _last_ns;
            // A second or more refills the whole burst; below that the product stays under 10^15.
            const uint64_t gained = elapsed >= kNsPerSecond ? full() : elapsed * _rate;
            _credit = gained >= full() - _credit ? full() : _credit + gained;
        }
        _last_ns = now_ns;
        if (_credit < kNsPerSecond)
            return false;
        _credit -= kNsPerSecond;
        return true;
    }

private:
    static constexpr uint64_t kNsPerSecond = 1'000'000'000;
    uint64_t full() const noexcept { return uint64_t(_rate) * kNsPerSecond; }

    uint32_t _rate;
    uint64_t _credit;      // token-nanoseconds: one event costs kNsPerSecond
    uint64_t _last_ns = 0; // the time of the last take()
};

} // namespace flowcop::conntrack
