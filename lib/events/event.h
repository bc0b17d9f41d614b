// SPDX-License-Identifier: BSD-3-Clause
// One flow event and its JSON-lines rendering.
//
// Contract: an Event is a plain value (trivially copyable, size a multiple of 8 so the ring copies it
// in whole 32-bit words). Ownership: the lcore fills it on its stack and emit() copies it into each
// subscriber's ring. `state` and `reason` must point to strings with static storage duration, because
// consumers read them later on another thread. Threading: format_json_line() is reentrant and
// allocation-free. Degraded behaviour: a line that does not fit, or an Event whose `kind` is not a
// Kind value, yields 0 and leaves `buf` contents unspecified; the writer counts such an event as
// dropped_write.
//
// Extending it: add fields before the two pointers, keep the size a multiple of 8, and give a field
// whose zero is a real value (as TCP flags are) a bit in `present`, so consumers (the JSON writer,
// the IPFIX exporter) can tell "not known" from "zero". Every consumer copies whole Events, so a
// field costs ring memory (ring events x size) but no code elsewhere.
//
// Line shape (keys in this order; `flow_id` only with kHasFlowId, `in_port` only with kHasInPort, `vlan`
// only when tagged, `reason` only for destroy, `timeout_cap` only for a destroy whose flow had one,
// `flags` only for update (with kHasStatus), `invalid` only for an update with kHasInvalid; "event" is
// "new", "update", "destroy" or "interim"):
//   {"event":"new","time":1.000001,"flow_id":4294967296,"lcore":0,"in_port":0,"proto":"tcp",
//    "src":"10.0.0.1","sport":1,"dst":"10.0.0.2","dport":2,"vlan":[10,20],"state":"SYN_SENT",
//    "reason":"closed","timeout_cap":"close","flags":["SEEN_REPLY","ASSURED"],"invalid":"seq_above_window",
//    "packets_orig":1,"packets_reply":0,"bytes_orig":60,"bytes_reply":0,
//    "first_seen":1.000001,"last_seen":1.000001}
// "proto" is a string: a name (proto_json_name()) or the protocol number in quotes ("47").
// `flags` are conntrack's status words: SEEN_REPLY or UNREPLIED, then ASSURED when assured.
// `invalid` says the update reports a TCP segment the flow refused, which changed neither its state nor
// its deadline: the counter's word for why (tcpstate::window_reason_name(), "seq_above_window", ...,
// or "tcp_invalid_for_state"); state and flags are the flow's unchanged ones.
// (an ICMP/ICMPv6 query flow, "proto":"icmp"/"icmpv6", adds "icmp_id" and "icmp_type" after
// "dport": its key's ports; UDP, ICMP and other protocols' state is "UNREPLIED" or "REPLIED")
// `timeout_cap` names the cap TCP window tracking had put on the flow's timeout (timeout_cap_name()), so
// a reader can tell which timeout applied: the --tcp-timeout-<name> of that name, when lower than the
// state's own.
// `bytes_orig`/`bytes_reply` are IP bytes (Event::bytes): the sum of the packets' IP lengths (IPv4 total
// length, IPv6 40 + payload length), as conntrack's bytes= and IPFIX's octetDeltaCount (RFC 7012), no
// Ethernet or VLAN header, no padding. (They were frame bytes before issue 27; the names stayed.)
// Times are Unix seconds with 6 decimals, truncated (not rounded) so a line never shows a time later
// than the nanosecond clock it came from. A nullptr `state` (or `reason` on destroy) prints as null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace flowcop::events {

// created: a flow's first packet. destroyed: it ended (reason_code says why). interim: a long flow's
// periodic report that does not end it (--ipfix-active-timeout): counts and times so far, reason 0.
// updated: the flow changed state or status (conntrack's UPDATE: a TCP state change, the first reply,
// assured), made on the packet that changed it, never on a steady packet; or, with kHasInvalid, a TCP
// segment the flow refused (invalid for its state, or out of its window), a bounded number a second.
enum class Kind : uint8_t { created, destroyed, interim, updated };

// A set of kinds, as a subscriber asks for them (bit 1 << kind).
using KindMask = uint32_t;
constexpr KindMask kind_bit(Kind k) noexcept
{
    return KindMask{1} << static_cast<unsigned>(k);
}
inline constexpr KindMask kAllKinds =
    kind_bit(Kind::created) | kind_bit(Kind::destroyed) | kind_bit(Kind::interim) | kind_bit(Kind::updated);

// Bits of Event::present: which optional fields hold a value.
inline constexpr uint8_t kHasTcpFlags = 0x01; // tcp_flags[] were accumulated for this flow
inline constexpr uint8_t kHasInPort = 0x02;   // in_port is the port the flow's first packet arrived on
inline constexpr uint8_t kHasFlowId = 0x04;   // flow_id is set
inline constexpr uint8_t kHasStatus = 0x08;   // status holds the flow's kStatus* bits
inline constexpr uint8_t kHasInvalid = 0x10;  // an update for a refused segment: reason_code and reason say why

// Bits of Event::status: conntrack's status words for the flow.
inline constexpr uint8_t kStatusSeenReply = 0x01; // a reply was accepted (else UNREPLIED)
inline constexpr uint8_t kStatusAssured = 0x02;   // assured: the handshake (or its protocol's rule) completed

struct Event {
    uint64_t time_ns; // Unix-epoch ns when it happened (the lcore's clock)
    uint64_t first_seen_ns, last_seen_ns;
    // Stable from new to destroy within one flowcop run (kHasFlowId): (generation << 32) | slot, where a
    // slot of the lcore's flow table holds one flow at a time and its generation grows with each flow,
    // so a consumer may keep per-flow state by slot and know a newer generation replaced an older flow.
    // Pack and unpack it with conntrack/flow_id.h only.
    uint64_t flow_id;
    uint64_t packets[2];             // [0] originator -> responder, [1] reply
    uint64_t bytes[2];               // IP bytes (packet::Packet::ip_len summed), [0] originator, [1] reply
    uint8_t src[16], dst[16];        // src = originator; IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), printed dotted
    uint16_t sport, dport;           // host order
    uint16_t vlan_outer, vlan_inner; // 0 = none
    uint16_t lcore;
    uint16_t in_port;     // DPDK port id (kHasInPort); the JSON line's "in_port"
    uint8_t proto;        // 6 "tcp", 17 "udp", 1 over IPv4 "icmp", 58 over IPv6 "icmpv6", else the number
    Kind kind;            //
    uint8_t tcp_flags[2]; // OR of the TCP flags seen, [0] originator, [1] reply (kHasTcpFlags)
    uint8_t state_code;   // TCP: tcpstate::State's value; others: protostate::Tracker bits
    // destroyed: conntrack::Reason's value; updated with kHasInvalid: tcpstate::WindowReason's value of an
    // out-of-window segment, 0 for one invalid for the state; else 0.
    uint8_t reason_code;
    uint8_t present;     // kHas* bits
    uint8_t timeout_cap; // TCP: tcpstate::Cap's value (0 none) of the flow's timeout cap when the event was made
    uint16_t interims;   // report boundaries the flow has passed, reported or skipped as idle (kHasFlowId only)
    uint8_t status;      // kStatus* bits (kHasStatus)
    const char* state;   // static string, e.g. "ESTABLISHED"
    const char* reason;  // static string: destroyed, why it ended; updated with kHasInvalid, why refused; else nullptr
};
static_assert(std::is_trivially_copyable_v<Event>);
static_assert(sizeof(Event) % 8 == 0);
static_assert(sizeof(Event) == 136, "ring memory per event: lib/ipfix/ipfix.md says 136 bytes");

// "max_retrans", "unacknowledged", "close" for tcpstate::Cap's values 1..3 (the suffixes of the
// --tcp-timeout-<name> options that set them); nullptr for 0 (no cap) and anything else. lib/conntrack,
// which fills timeout_cap, checks at compile time that these are tcpstate::Cap's numbers.
const char* timeout_cap_name(uint8_t cap) noexcept;

// A buffer of this size holds any line whose state and reason are at most 256 printable ASCII bytes
// each that need no escaping (a quote or backslash prints as two): everything else in a line takes at
// most 562 bytes (all numbers at their maximum, the flow id, two 39-character IPv6 addresses, in_port,
// two VLAN tags, the ICMP fields, the longest timeout cap name: the formatter prints any of them it is
// given), so a destroy line is at most 1074 bytes; an update's flags and `invalid` key take 2 bytes more
// than a destroy's reason key and cap, 1076; the shortest line is 226 bytes ("proto":"0").
inline constexpr size_t kTypicalMaxLine = 1152;

// The name a line gives protocol `proto` of a flow of this family: "tcp", "udp", "icmp" (1 over IPv4),
// "icmpv6" (58 over IPv6), else nullptr, and the line gives the number as a string ("47"): "proto" is
// always a JSON string, in events and in flowcopctl's listing (app/service/control/ctl_format.h), which use this.
const char* proto_json_name(uint8_t proto, bool ipv4) noexcept;

// Appends one JSON line for `e`, including the trailing '\n', at `buf`.
// @return bytes written, or 0 if `buflen` is too small or `e.kind` is not a Kind value.
size_t format_json_line(const Event& e, char* buf, size_t buflen) noexcept;

} // namespace flowcop::events
