// SPDX-License-Identifier: BSD-3-Clause
// protostate: the per-flow state of every IP protocol but TCP (lib/tcpstate) — UDP, ICMP/ICMPv6
// queries, and any other protocol — and their inactivity timeouts, modelled on netfilter's
// nf_conntrack_proto_{udp,icmp,icmpv6,generic}. protocol-tracking.md has the rules and every
// difference from netfilter.
//
// Contract
// - Pure and clock-free, like tcpstate: every function is noexcept, allocates nothing and touches no
//   global state; the caller passes the flow's age. A Tracker is one byte of plain data inside the
//   caller's flow record, stepped by one thread at a time (the lcore that owns the flow); readers on
//   other threads may load the byte whole (relaxed) and use the accessors.
// - Direction: Dir::orig is the sender of the packet that created the flow, Dir::reply the other
//   end (the same meaning as tcpstate::Dir).
// - What creates a flow is the caller's decision (any UDP or other-protocol packet; an ICMP query
//   request only, never a reply or an error: packet::icmp_is_request()). ICMP errors never reach
//   step(): they are counted on the flow they quote and neither refresh nor change it (netfilter's
//   RELATED packets do neither).
//
// Lifecycle, as the flow table drives it
//   1. First packet: Tracker t = initial(family_of(proto)); arm now + timeouts.seconds(timeout_of(t)).
//      The creating packet is NOT passed to step().
//   2. Every later packet: step(t, dir, now - first_seen). Every packet extends the flow (deadline =
//      now + the timeout of the state after the step); step() returns true when the state changed,
//      i.e. when the timeout may have changed, so the caller re-arms then and only then.
//   3. Deadline passed: destroy the flow, reason "inactivity" (no non-TCP state is a closed end).
//
// Degraded behaviour: a Tracker byte that is not one initial() or step() produced (a corrupt record)
// still maps to a defined family and timeout (an out-of-range family is generic) and state names;
// seconds() never returns 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowcop::protostate {

// Which rules a flow follows, from its IP protocol (family_of).
enum class Family : uint8_t {
    udp,     // 17
    icmp,    // ICMP (1) over IPv4 and ICMPv6 (58) over IPv6: queries keyed by identifier
    generic, // every other protocol (GRE, ESP, SCTP, ...): keyed by addresses + protocol
    count
};

// 17 -> udp, 1 and 58 -> icmp, anything else -> generic (TCP, 6, is lib/tcpstate's and never here).
constexpr Family family_of(uint8_t ip_proto) noexcept
{
    return ip_proto == 17 ? Family::udp : (ip_proto == 1 || ip_proto == 58) ? Family::icmp : Family::generic;
}

// "udp", "icmp", "generic"; "unknown" out of range.
const char* family_name(Family f) noexcept;

enum class Dir : uint8_t { orig = 0, reply = 1 };

// The timeouts a flow can be under, in Timeouts::seconds index order.
enum class Timeout : uint8_t {
    udp_unreplied, // a UDP flow before it is assured
    udp_stream,    // an assured UDP flow
    icmp,          // every ICMP/ICMPv6 query flow
    generic,       // every other protocol's flow
    count
};
inline constexpr size_t kTimeoutCount = static_cast<size_t>(Timeout::count);

// The per-flow state: one byte, zero-initialisable, trivially copyable. Build it with initial().
struct Tracker {
    static constexpr uint8_t kFamilyMask = 0x03;
    static constexpr uint8_t kSeenReply = 0x04; // a packet came from the reply side
    static constexpr uint8_t kAssured = 0x08;   // UDP only: replied, and seen again after kUdpStreamAgeNs
    uint8_t bits = 0;

    constexpr Family family() const noexcept
    {
        const auto f = static_cast<uint8_t>(bits & kFamilyMask);
        return f < static_cast<uint8_t>(Family::count) ? static_cast<Family>(f) : Family::generic;
    }
    constexpr bool seen_reply() const noexcept { return (bits & kSeenReply) != 0; }
    // Never cleared once set. Assured flows are never early-dropped to make room for new ones.
    constexpr bool assured() const noexcept { return (bits & kAssured) != 0; }
    bool operator==(const Tracker&) const = default;
};
static_assert(sizeof(Tracker) == 1, "the protocol state is one byte of the flow record");

constexpr Tracker initial(Family f) noexcept
{
    return Tracker{static_cast<uint8_t>(static_cast<uint8_t>(f) & Tracker::kFamilyMask)};
}

// netfilter's udp stream_ts: a replied UDP flow becomes a stream (assured, stream timeout) at the
// first packet more than 2 s after its creation.
inline constexpr uint64_t kUdpStreamAgeNs = 2'000'000'000;

// Steps the tracker for a packet from `dir`, age_ns after the flow's first packet. As netfilter's
// udp_packet() and its core: a UDP flow that has already seen a reply and is older than
// kUdpStreamAgeNs becomes assured; then a packet from the reply side sets seen_reply (so the first
// reply itself is still under the unreplied timeout, as in netfilter, where IPS_SEEN_REPLY is set
// after the protocol handler ran). ICMP and generic flows only record seen_reply and are never
// assured (netfilter's icmp_packet and generic_packet only refresh). Returns true if the tracker
// changed.
bool step(Tracker& t, Dir dir, uint64_t age_ns) noexcept;

// The timeout a flow in this state is under.
constexpr Timeout timeout_of(Tracker t) noexcept
{
    switch (t.family()) {
    case Family::udp: return t.assured() ? Timeout::udp_stream : Timeout::udp_unreplied;
    case Family::icmp: return Timeout::icmp;
    default: return Timeout::generic;
    }
}

// "UNREPLIED" until a reply was seen, then "REPLIED" (conntrack -L prints [UNREPLIED] and, once
// assured, [ASSURED]; flowcop names the state and reports assured separately, as for TCP).
const char* state_name(Tracker t) noexcept;

// Inactivity timeouts in seconds, indexed by Timeout.
struct Timeouts {
    uint32_t seconds_by_timeout[kTimeoutCount];

    // netfilter's defaults (Linux 5.x and later), whose reasons are:
    //   udp_unreplied 30 (nf_conntrack_udp_timeout): a query that gets no answer, or a one-way
    //                 stream (syslog, NetFlow export), is dropped soon;
    //   udp_stream 120 (nf_conntrack_udp_timeout_stream): a conversation that has lasted more than
    //                 2 s in both directions (DNS over a slow link, QUIC, VPNs, RTP) keeps its state
    //                 through pauses;
    //   icmp 30 (nf_conntrack_icmp_timeout, nf_conntrack_icmpv6_timeout): an echo reply comes within
    //                 a second or never; 30 s covers `ping -i 20`;
    //   generic 600 (nf_conntrack_generic_timeout): protocols whose conversations cannot be told
    //                 apart (GRE, ESP, SCTP keyed by addresses) must survive long idle periods.
    static constexpr Timeouts netfilter_defaults() noexcept { return Timeouts{{30, 120, 30, 600}}; }
    // The fallback for a 0 entry (a config parser should reject 0): netfilter's generic timeout.
    static constexpr uint32_t kFallback = 600;

    // seconds_by_timeout[t], or kFallback when that is 0 or t is out of range: never 0.
    constexpr uint32_t seconds(Timeout t) const noexcept
    {
        const size_t i = static_cast<size_t>(t);
        const uint32_t own = i < kTimeoutCount ? seconds_by_timeout[i] : 0;
        return own != 0 ? own : kFallback;
    }
};

// The flag suffix of each timeout, the spelling of --<name> and of /flowcop/set's name with '-'
// as '_': "udp-timeout", "udp-timeout-stream", "icmp-timeout", "generic-timeout" (netfilter's
// nf_conntrack_<name> sysctls with '_' as '-'); "unknown" out of range.
const char* timeout_flag_name(Timeout t) noexcept;
// Exact inverse of timeout_flag_name for the four timeouts; false (out unchanged) otherwise.
bool parse_timeout_flag_name(std::string_view name, Timeout& out) noexcept;

} // namespace flowcop::protostate
