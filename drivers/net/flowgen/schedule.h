// SPDX-License-Identifier: BSD-3-Clause
// Private: what the generator sends, slot by slot: flow arrivals, handshakes, data turns, closes.
//
// Time is a count of slots, pps per virtual second; each emitted segment takes the current slot. A slot
// is filled by the first of:
//   1. the fast lane: a flow in its handshake or FIN exchange whose next segment is due. Every entry
//      is queued exactly `rtt` slots after the segment before it, so the FIFO is sorted by due slot,
//      and since at most one entry is queued per slot it never holds more than rtt + 1 entries;
//   2. an arrival (the `flows` initial ones at slot 0, then one every pps/new_flow_rate slots):
//      a new flow sends its SYN;
//   3. a data turn, round robin over the established flows. A flow whose lifetime is over (and which
//      has sent data both ways) instead sends RST, or its first FIN, or goes silent without a segment.
//      While a wave is running, each turn is a wave flow's last data segment.
// When nothing is due the clock jumps to the next event, so idle stretches cost nothing.
// Initial flows get the residual lifetime of a flow already running (uniform for `fixed`, the same
// exponential for `exp`), so concurrency starts at `flows` instead of doubling when they all expire.
// Threading: single owner; no allocation after construction; next() is noexcept.
#pragma once

#include <cstdint>
#include <memory>

#include <flowgen/config.h>
#include <flowgen/stats.h>

#include "flow.h"
#include "frame_writer.h"
#include "rng.h"

namespace flowcop::flowgen::detail {

// Virtual RTT between a flow's handshake (and close) segments: far below any tracker's SYN or FIN
// timeout, yet long enough at the default pps (100 slots) that handshakes of different flows
// interleave as on a real link.
inline constexpr uint64_t kRttUs = 100;

class Schedule {
public:
    // cfg must pass check_config(). payload_v4/v6: data payload bytes (FrameWriter::data_payload).
    Schedule(const Config& cfg, uint16_t payload_v4, uint16_t payload_v6);

    // The next segment and its slot; false once finished (packets= or duration= reached).
    bool next(Segment& seg, uint64_t& slot) noexcept;

    const Stats& stats() const noexcept { return _stats; }
    uint64_t slot() const noexcept { return _slot; }
    // Flows the round-robin array can hold: ~flows * 17/16 (arrivals beyond are dropped and counted).
    uint64_t capacity() const noexcept { return _cap; }

private:
    struct Pending {
        Flow flow;
        uint64_t due;
    };

    bool emit(Segment& seg) noexcept;
    bool fast_lane(Segment& seg) noexcept;
    bool data_turn(Segment& seg) noexcept;
    void arrive(Segment& seg) noexcept;
    void advance_arrival() noexcept;
    uint64_t next_event() const noexcept;
    void push(const Flow& f) noexcept;
    void remove_turn() noexcept;
    void segment(Flow& f, bool from_client, uint8_t flags, uint16_t payload, Segment& seg) const noexcept;

    Rng _rng;
    Stats _stats{};
    uint64_t _slot = 0;
    uint64_t _pps;
    uint64_t _end_slot;    // duration limit, UINT64_MAX if none
    uint64_t _max_packets; // 0: none
    bool _finished = false;

    // Flow plan.
    uint64_t _key; // address permutation key (from the seed)
    uint64_t _serial = 0;
    double _lifetime_slots;
    bool _exp;
    uint32_t _idle_pct, _rst_pct, _ipv6_pct;
    uint16_t _payload[2];

    // Arrivals: `_prefill` initial flows, then slot k * num / den (Bresenham, exact in integers).
    uint64_t _prefill;
    uint64_t _next_arrival, _arr_whole, _arr_rem, _arr_den, _arr_acc = 0;

    // Established flows, round robin.
    std::unique_ptr<Flow[]> _rr;
    uint64_t _rr_size = 0, _cursor = 0, _cap;

    // Fast lane FIFO (power-of-two ring).
    std::unique_ptr<Pending[]> _fifo;
    uint64_t _fifo_mask, _fifo_head = 0, _fifo_size = 0;
    uint64_t _rtt;

    // Wave.
    bool _wave_armed;
    uint64_t _wave_slot = 0, _wave_end = 0, _wave_flows = 0, _wave_left = 0;
};

} // namespace flowcop::flowgen::detail
