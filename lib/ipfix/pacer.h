// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// How fast the IPFIX exporter may send: a token bucket over messages (issue 28). UDP has no flow
// control, so a burst a collector cannot read in time overflows its socket receive buffer and is lost
// there, uncounted on this side: at a stop with 10.7k open flows nfcapd kept 14,997 of 24,387 records
// while flowcop, which had sent them all, counted no error. Pacing keeps every burst within what a
// collector's default buffer holds (kBurstMessages) and the sustained rate at `rate` messages a second
// per collector; the export thread sleeps for the rest (it is no lcore: nothing else waits on it but its
// rings, whose overflow is counted).
//
// A GCRA-style bucket in integer nanoseconds: each message costs 1e9 / rate ns of "theoretical arrival
// time"; a message may go when that time is at most kBurstMessages messages ahead of now. Single owner
// (the export thread); `now` is any monotonic clock. rate 0 means unpaced: grant() gives all it is asked.
#include <algorithm>
#include <cstdint>

namespace flowcop::ipfix {

class Pacer {
public:
    // Messages that may leave back to back: 32 x 1472-byte messages is ~75 KiB of datagrams (~70 KiB
    // more of kernel overhead), within Linux's default 208 KiB net.core.rmem_default, so a collector
    // that runs with the default buffer still takes a whole burst while it is busy writing a file.
    static constexpr uint32_t kBurstMessages = 32;

    explicit Pacer(uint32_t rate_per_s = 0) noexcept
        : _cost_ns(rate_per_s == 0 ? 0 : std::max<uint64_t>(1, 1'000'000'000ull / rate_per_s))
    {}
    bool paced() const noexcept { return _cost_ns != 0; }

    // How many of `want` messages may be sent at `now_ns`; they are taken from the bucket.
    uint32_t grant(uint64_t now_ns, uint32_t want) noexcept
    {
        if (_cost_ns == 0)
            return want;
        const uint64_t tat = std::max(_tat_ns, now_ns);
        const uint64_t horizon = now_ns + uint64_t(kBurstMessages) * _cost_ns;
        const uint64_t room = horizon > tat ? (horizon - tat) / _cost_ns : 0;
        const uint32_t n = uint32_t(std::min<uint64_t>(want, room));
        _tat_ns = tat + n * _cost_ns;
        return n;
    }
    // Nanoseconds from `now_ns` until grant() gives at least one message (0: now).
    uint64_t wait_ns(uint64_t now_ns) const noexcept
    {
        if (_cost_ns == 0)
            return 0;
        const uint64_t ready = _tat_ns + _cost_ns; // one more message fits once now + burst * cost > tat
        const uint64_t at =
            ready > uint64_t(kBurstMessages) * _cost_ns ? ready - uint64_t(kBurstMessages) * _cost_ns : 0;
        return at > now_ns ? at - now_ns : 0;
    }

private:
    uint64_t _cost_ns;
    uint64_t _tat_ns = 0; // theoretical arrival time of the next message
};

} // namespace flowcop::ipfix
