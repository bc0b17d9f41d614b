// SPDX-License-Identifier: BSD-3-Clause
// flowcop's time base: Unix-epoch nanoseconds, on every lcore, in both clock modes.
//
// TscClock converts rte_rdtsc() to Unix ns from one (TSC, CLOCK_REALTIME) pair
// taken at start, with a fixed-point multiply (no division, no syscall): it is
// monotonic and as stable as the TSC, and it does not follow later wall-clock
// steps (NTP slews over a run are ignored on purpose — a deadline must never
// jump).
//
// PacketClock is the replay clock (--clock packet): time is the largest packet
// timestamp seen so far, so a capture replays its own timeline deterministically
// at full speed, and a capture with non-monotonic timestamps never moves time
// backwards. It reads the mbuf's standard Rx timestamp dynfield, which DPDK's
// pcap PMD (and flowcop's flowgen port) fill in MICROSECONDS since the Unix
// epoch. Packets without the timestamp flag leave time where it is (counted by
// the caller).
//
// ReplayTime makes that one time for all lcores. Each worker's PacketClock follows the packets it
// tracks, so under the handoff and rss plans an lcore whose flows went quiet (or that polls no queue
// and is handed nothing) would stop its clock and never reach its flows' deadlines. So every worker
// that reads a port publishes the newest packet time it has read, in its own cache line, with one
// plain store per RX burst, and every worker advances its clock to the newest published time once per
// loop turn, between bursts (never per packet), before its cop: every lcore's cop runs on the newest
// packet time any lcore has read from any port, within one loop turn, and time never moves backwards.
// Under the handoff plan a worker adopts the published time only in a turn whose handoff rings it
// emptied: the rings carry the sender's time in order between the packets (time marks, handoff.h),
// so a handed-off packet older than the published time is always tracked before the cop runs at it.
//
// Under the rss plan each lcore reads its own queue of one stream at its own pace, so the newest time
// another lcore has read is not where this lcore stands in the stream: adopting it once per turn would run
// this lcore's cop at the end of another's burst, not where the stream crosses the check instant (and its
// own quiet flows would end up to a burst late). A replay under rss comes from flowcop's own port
// (--flowgen replay=FILE,queues=N; a NIC's rss runs on the TSC clock), and that port's dealer knows the one
// timeline: it deals each queue, beside its frames, time marks (flowgen/time_marks.h: "the stream's time M
// comes before your k-th frame") for every time the stream reached while that queue's frames said nothing
// of it. A worker applies them between the frames of its queue exactly where they fall
// (Worker::replay_burst splits the burst there; the marks after its last frame every loop turn), so its
// clock passes every time of the stream in the stream's order relative to its own frames, and its cop runs
// at the same instants one lcore's would: a flow ends at the same replay time on every layout. Such a
// worker takes its time from its marks alone, never from ReplayTime::newest(): the dealer pushes a burst's
// marks before it enqueues the burst's frames, so another reader that has applied the marks after its last
// frame can publish a time whose frames are still on their way to this queue. Marks need one queue of the
// port per lcore (queues= as many as lcores): an lcore reading two would apply one queue's marks before it
// read the other's frames they stand for, so with more queues the service deals none and each lcore follows
// the newest time read, as above (a warning says so). The cost is the replay's only: a worker reads its
// queue's marks once per burst (a load of the dealer's index), the TSC path has none of it, and the per-
// packet path (handle()) is unchanged. The ICMP errors and fragments the rss plan hands to their flow's
// owner are tracked there no earlier than their own time (Worker::take_related: one read ahead of the
// owner's place in the stream waits for the owner's marks to get there), but may come after it: the sender
// reads its queue at its own pace, so such a packet can be tracked up to the sender's lag late (its flow's
// last seen later by that much, or the owner's cop already past it: a flow that only such packets keep
// alive can end before one lcore would end it). The layout matrix's scenarios hand none;
// tests/integration/test_rss_related.py counts them.
//
// Several ports replayed at different paces combine into that one newest time: a port whose file is
// read behind the others (a slower capture, or one whose packets are older) delivers packets in the
// replay's past; they are tracked at the current replay time (never moving it back), as on one lcore
// polling both ports, so its flows' last seen is the combined timeline's, not the file's. Replay one
// capture per run (or merge captures with mergecap) when per-file timing matters.
#pragma once

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>

namespace flowcop::app {

// GCC's 128-bit integer for the fixed-point TSC conversion (__extension__: not ISO C++).
__extension__ typedef unsigned __int128 uint128;

class TscClock {
public:
    TscClock() noexcept
    {
        _hz = rte_get_tsc_hz();
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        _tsc0 = rte_rdtsc();
        _unix0_ns = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
        // ns = cycles * 1e9 / hz  ==  (cycles * mult) >> 32
        _mult = (static_cast<uint128>(1'000'000'000ull) << 32) / _hz;
    }
    uint64_t ns_from_tsc(uint64_t tsc) const noexcept
    {
        const uint64_t d = tsc - _tsc0;
        return _unix0_ns + uint64_t((static_cast<uint128>(d) * _mult) >> 32);
    }
    uint64_t now_ns() const noexcept { return ns_from_tsc(rte_rdtsc()); }
    uint64_t cycles_from_ns(uint64_t ns) const noexcept
    {
        return uint64_t(static_cast<uint128>(ns) * _hz / 1'000'000'000ull);
    }
    uint64_t hz() const noexcept { return _hz; }

private:
    uint64_t _hz = 1;
    uint64_t _tsc0 = 0;
    uint64_t _unix0_ns = 0;
    uint128 _mult = 0;
};

// Offsets of the timestamp dynfield/dynflag, looked up once after ports start
// (the PMD registers them); -1 / 0 when no port provides timestamps.
struct TimestampField {
    int offset = -1;
    uint64_t flag = 0;
    static TimestampField lookup() noexcept
    {
        TimestampField f;
        f.offset = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
        const int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
        f.flag = bit >= 0 ? (uint64_t(1) << bit) : 0;
        return f;
    }
};

class PacketClock {
public:
    explicit PacketClock(TimestampField f) noexcept : _field(f) {}
    // Advances to the packet's time; false if the packet carries no timestamp.
    bool observe(const rte_mbuf* m) noexcept
    {
        if (_field.offset < 0 || !(m->ol_flags & _field.flag))
            return false;
        const uint64_t us = *RTE_MBUF_DYNFIELD(m, _field.offset, const rte_mbuf_timestamp_t*);
        const uint64_t ns = us * 1000;
        if (ns > _now_ns)
            _now_ns = ns;
        return true;
    }
    uint64_t now_ns() const noexcept { return _now_ns; }
    // Moves time to ns if that is later (another lcore's newer packet, a time mark); never backwards.
    void advance_to(uint64_t ns) noexcept
    {
        if (ns > _now_ns)
            _now_ns = ns;
    }
    // The time observe(m) would advance to, without advancing (now_ns() for a packet with no timestamp).
    uint64_t time_of(const rte_mbuf* m) const noexcept
    {
        if (_field.offset < 0 || !(m->ol_flags & _field.flag))
            return _now_ns;
        const uint64_t ns = *RTE_MBUF_DYNFIELD(m, _field.offset, const rte_mbuf_timestamp_t*) * 1000;
        return ns > _now_ns ? ns : _now_ns;
    }

private:
    TimestampField _field;
    uint64_t _now_ns = 0;
};

// The newest packet time each worker has read from its ports (see the header comment). Worker w alone
// writes slot w (publish(), once per RX burst, a release store: on x86 a plain store); any worker reads
// them all (newest(), once per loop turn). Created by the service before the workers under --clock
// packet, destroyed after them.
class ReplayTime {
public:
    explicit ReplayTime(unsigned workers) : _slots(std::make_unique<Slot[]>(workers)), _workers(workers) {}
    void publish(unsigned worker, uint64_t ns) noexcept { _slots[worker].ns.store(ns, std::memory_order_release); }
    uint64_t newest() const noexcept
    {
        uint64_t t = 0;
        for (unsigned w = 0; w < _workers; ++w) {
            const uint64_t v = _slots[w].ns.load(std::memory_order_acquire);
            t = v > t ? v : t;
        }
        return t;
    }

private:
    struct alignas(64) Slot {
        std::atomic<uint64_t> ns{0};
    };
    std::unique_ptr<Slot[]> _slots;
    unsigned _workers;
};

} // namespace flowcop::app
