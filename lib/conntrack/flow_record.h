// SPDX-License-Identifier: BSD-3-Clause
// One tracked flow: a 128-byte hot record (two cache lines, 128-byte aligned) holding everything a
// steady packet reads or writes, and a 32-byte cold entry for what no steady packet touches.
//
// Records and cold entries live in two per-lcore arrays indexed by the flow's position (flow_table.h),
// which the table's index (flow_index.h) maps keys to. The key is stored in the record, so a lookup is
// two dependent memory rounds: the index bucket, then the record (key and state together). The pair of
// lines is 128-byte aligned so that one round brings both when both are prefetched (and Intel's
// adjacent-line prefetcher fetches the buddy line of a 128-byte pair anyway).
//
// Byte map. Hot record (FlowRecord), line 0 then line 1:
//   0..41    key              FlowKey (42 bytes; zone at 40..41: issue 15 fills it per port)
//   42       flags            kInUse | kOrigIsLo | kReset | kKilled | kLiteKey | kSteady, and
//                             (kCapMask) the timeout cap TCP window tracking chose (tcpstate::Cap), which
//                             the deadline reads; equal to the window's meta.cap once a packet was
//                             accepted (the steady path stores meta.cap only when it differs)
//   43       timeout_slot     the table's slot holding the deadline an operator set (FlowTable::
//                             set_flow_timeout, 1..255) until the flow's next accepted packet; 0: none.
//                             Beside the flags, so the packet path tests both as one 16-bit word
//                             (FlowTable::marks_of)
//   44..45   l4               L4State: tcpstate::Tracker for TCP (state byte + its flag bits); for every
//                             other protocol its timeout slot (tcpstate::kStateCount + protostate::Timeout,
//                             so the deadline reads one byte whatever the protocol) and its
//                             protostate::Tracker byte
//   46..47   tcp_flags_seen   OR of the TCP flags each direction sent ([orig, reply]; IPFIX tcpControlBits,
//                             issue 18)
//   48..55   last_seen_ns
//   56..71   packets[2]       [orig, reply], exact 64-bit counters
//   72..87   bytes[2]         IP bytes (RFC 7012: from the IP header), exact 64-bit counters
//   88..127  window           WindowSpan: tcpstate::WindowState for TCP (issue 16: per direction
//                             end/maxend/maxwin/maxack, scale, flags and the retransmission bookkeeping
//                             it updates on every in-window packet); zero for other protocols
// A steady established packet reads the key, flags, l4 and last_seen (line 0) and writes last_seen,
// tcp_flags_seen, its direction's counters (lines 0 and 1) and the window (line 1).
// A cop visit reads the hook (cold) and flags (with the timeout cap), l4 and last_seen (line 0).
//
// Cold entry (FlowCold, 32 bytes, two per cache line):
//   0..11    hook             the timer wheel's linkage (lib/timerwheel/hook.h): the cop touches it,
//                             packets do not (a packet's extension is a store of last_seen only)
//   12..15   generation       bumped each time the position starts a flow: (generation, position) is
//                             the flow's id from creation to destroy (issue 17)
//   16..23   first_seen_ns    (while the position is free: the next free position, in the low 32 bits)
//   24..27   related          ICMP errors related to this flow (issue 15)
//   28..29   in_port          the DPDK port of the flow's first packet (packet::Packet::in_port; IPFIX
//                             ingressInterface, issue 18)
//   30..31   exports          interim report boundaries passed (reported, or skipped as idle; issue 18)
//
// Ownership: the owning lcore writes every field. Fields other threads read (listing, snapshot) are
// accessed through stats/relaxed.h; `flags` carries kInUse, which the owner sets with release order after
// the record, its key and its cold entry are complete and clears only while holding the record's
// shard lock, so a reader holding that lock sees either a whole flow or no flow.
#pragma once

#include <conntrack/proto.h>
#include <packet/flow_key.h>
#include <protostate/proto_state.h>
#include <tcpstate/tcp_state.h>
#include <tcpstate/window.h>
#include <timerwheel/hook.h>

#include <cstddef>
#include <cstdint>

namespace flowcop::conntrack {

// The timeout slot of a non-TCP flow: the deadline indexes one array (deadline.h) with the first byte
// of L4State, TCP's state or this.
constexpr uint8_t timeout_slot(protostate::Tracker t) noexcept
{
    return uint8_t(tcpstate::kStateCount + static_cast<size_t>(protostate::timeout_of(t)));
}
inline constexpr size_t kTimeoutSlots = tcpstate::kStateCount + protostate::kTimeoutCount;

// The per-protocol state bytes. For TCP the whole tcpstate::Tracker; for the other protocols their
// timeout slot (first byte, where TCP keeps its state) and protostate's Tracker (second byte, where TCP
// keeps its flag bits). The assured and seen-reply bits are the same bits in both (asserted below), so
// the table's early drop reads `tcp.assured()` whatever the protocol.
union L4State {
    tcpstate::Tracker tcp{};
    struct {
        uint8_t slot;
        uint8_t bits; // protostate::Tracker::bits
        protostate::Tracker tracker() const noexcept { return protostate::Tracker{bits}; }
    } other;
    uint8_t raw[2];
};
static_assert(sizeof(L4State) == 2);
static_assert(protostate::Tracker::kAssured == tcpstate::detail::kAssured &&
                  protostate::Tracker::kSeenReply == tcpstate::detail::kSeenReply,
              "early drop and listings read assured/seen_reply from the same bits for every protocol");

inline L4State other_l4_state(protostate::Tracker t) noexcept
{
    L4State s;
    s.other.slot = timeout_slot(t);
    s.other.bits = t.bits;
    return s;
}

// TCP window tracking's state (issue 16, lib/tcpstate/window.h).
union alignas(8) WindowSpan {
    tcpstate::WindowState tcp{};
    uint8_t bytes[40];
    uint64_t words[5];
};
static_assert(sizeof(WindowSpan) == 40);

struct alignas(128) FlowRecord {
    static constexpr uint8_t kInUse = 0x01;
    static constexpr uint8_t kOrigIsLo = 0x02; // the originator is the key's lower endpoint
    static constexpr uint8_t kReset = 0x04;    // an RST ended it: due on the next tick
    static constexpr uint8_t kKilled = 0x08;   // a control-plane kill: due on the next tick
    static constexpr uint8_t kCapShift = 4;    // the timeout cap (tcpstate::Cap) in bits 0x30
    static constexpr uint8_t kCapMask = 0x30;
    // The key is one the steady lane's reader can give (packet::is_lite_key: IPv4, TCP, untagged, zone 0),
    // so the lane compares only the 12 bytes its segment carries (lite_key.h). Set when the record starts
    // a flow (or is restored), from the key, which never changes while the record is in use.
    static constexpr uint8_t kLiteKey = 0x40;
    // TCP only, kept by FlowTable::track() (issue 29): the flow is ESTABLISHED with every tracker bit a
    // steady ACK sets (tcpstate::steady() holds for its next plain ACK) and both sides' windows and
    // highest acks known (tcpstate::steady_window(); the fused path clears the bit when it leaves a window
    // unknown), so that packet may take the fused steady path (FlowTable::track_steady) without reading
    // the tracker. Only track() changes the tracker, and it sets or clears this bit with it; any other
    // write of the flags that drops it costs one packet on the slow path, never a wrong result. Restored
    // with the record, it must come with the tracker it was computed from (or be cleared).
    static constexpr uint8_t kSteady = 0x80;

    packet::FlowKey key;
    uint8_t flags;
    uint8_t timeout_slot;
    L4State l4; // owner writes; readers load `l4.tcp` relaxed
    uint8_t tcp_flags_seen[2];
    uint64_t last_seen_ns;
    uint64_t packets[2]; // [orig, reply]
    uint64_t bytes[2];   // IP bytes (packet::Packet::ip_len)
    WindowSpan window;
};

static_assert(sizeof(FlowRecord) == 128, "a flow record is two cache lines");
static_assert(offsetof(FlowRecord, flags) == 42 && offsetof(FlowRecord, timeout_slot) == 43 &&
                  offsetof(FlowRecord, l4) == 44 && offsetof(FlowRecord, tcp_flags_seen) == 46 &&
                  offsetof(FlowRecord, last_seen_ns) == 48 && offsetof(FlowRecord, packets) == 56 &&
                  offsetof(FlowRecord, bytes) == 72 && offsetof(FlowRecord, window) == 88,
              "the byte map above");

inline constexpr uint8_t kIpProtoTcp = 6;

// The family of a flow: TCP by its key's protocol, the others by their protostate family.
inline Proto proto_of_flow(uint8_t key_proto, L4State l4) noexcept
{
    if (key_proto == kIpProtoTcp)
        return Proto::tcp;
    switch (l4.other.tracker().family()) {
    case protostate::Family::udp: return Proto::udp;
    case protostate::Family::icmp: return Proto::icmp;
    default: return Proto::other;
    }
}
inline Proto record_proto(const FlowRecord& r) noexcept
{
    return proto_of_flow(r.key.proto, r.l4);
}

struct alignas(32) FlowCold {
    timerwheel::Hook hook; // owner only
    uint32_t generation;
    union {
        uint64_t first_seen_ns; // in use
        uint32_t next_free;     // free: the next free position
    };
    uint32_t related;
    uint16_t in_port;
    uint16_t exports;
};

static_assert(sizeof(FlowCold) == 32, "two cold entries per cache line");
static_assert(offsetof(FlowCold, generation) == 12 && offsetof(FlowCold, first_seen_ns) == 16 &&
                  offsetof(FlowCold, related) == 24 && offsetof(FlowCold, in_port) == 28 &&
                  offsetof(FlowCold, exports) == 30,
              "the byte map above");

} // namespace flowcop::conntrack
