// SPDX-License-Identifier: BSD-3-Clause
// The protocol families the flow table tracks (--track tcp,udp,icmp,other) and the one mapping from a
// parsed packet to its family, used for the table's admission, its per-family counters (the metrics'
// `proto` label) and the control plane's protocol filter.
//
// - tcp: IP protocol 6 (lib/tcpstate); udp: 17; icmp: ICMP (1) over IPv4 and ICMPv6 (58) over IPv6,
//   queries and the errors that relate to flows; other: every other IP protocol (lib/protostate's
//   generic family). ICMP over IPv6 (1) and ICMPv6 over IPv4 (58) are `other` as the parser keys them.
// - A packet's family comes from its verdict, not from key.proto: an ICMP error's key names the flow it
//   quotes (key.proto is the quoted protocol) but the error is an ICMP packet, tracked or not as icmp
//   says. A flow's family comes from its key's protocol (proto_of_ip()), which only a packet of that
//   family can create.
// Pure, constexpr, allocation-free, any thread.
#pragma once

#include <packet/verdict.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowcop::conntrack {

enum class Proto : uint8_t { tcp, udp, icmp, other, count };
inline constexpr size_t kProtoCount = static_cast<size_t>(Proto::count);

// A set of families, bit (1 << Proto).
using TrackMask = uint8_t;
inline constexpr TrackMask kTrackAll = (1u << kProtoCount) - 1;

constexpr TrackMask track_bit(Proto p) noexcept
{
    return TrackMask(1u << static_cast<unsigned>(p));
}

// "tcp", "udp", "icmp", "other": the --track words and the `proto` label values; "unknown" out of range.
constexpr const char* proto_name(Proto p) noexcept
{
    switch (p) {
    case Proto::tcp: return "tcp";
    case Proto::udp: return "udp";
    case Proto::icmp: return "icmp";
    case Proto::other: return "other";
    case Proto::count: break;
    }
    return "unknown";
}

// The family a flow with this key protocol belongs to.
constexpr Proto proto_of_ip(uint8_t ip_proto, bool ipv4) noexcept
{
    if (ip_proto == 6)
        return Proto::tcp;
    if (ip_proto == 17)
        return Proto::udp;
    if ((ip_proto == 1 && ipv4) || (ip_proto == 58 && !ipv4))
        return Proto::icmp;
    return Proto::other;
}

// The family whose --track bit admits a packet of this verdict into the table, or Proto::count for
// verdicts the table never tracks (icmp_other, non_ip, malformed; fragments are attributed by the
// caller, see FlowTable::submit()).
constexpr Proto proto_of_verdict(packet::Verdict v) noexcept
{
    switch (v) {
    case packet::Verdict::tcp: return Proto::tcp;
    case packet::Verdict::udp: return Proto::udp;
    case packet::Verdict::icmp:
    case packet::Verdict::icmp_error: return Proto::icmp;
    case packet::Verdict::other_l4: return Proto::other;
    default: return Proto::count;
    }
}

// Parses a comma-separated list of family names ("tcp,udp"; "all" for every family) into `out`.
// Empty items, unknown words and an empty list are errors: false, `out` unchanged. Header-only, so
// the DPDK-free options library uses it.
constexpr bool parse_track_mask(std::string_view text, TrackMask& out) noexcept
{
    if (text == "all") {
        out = kTrackAll;
        return true;
    }
    TrackMask mask = 0;
    while (true) {
        const size_t comma = text.find(',');
        const std::string_view word = text.substr(0, comma);
        bool known = false;
        for (size_t p = 0; p < kProtoCount; ++p) {
            if (word == proto_name(static_cast<Proto>(p))) {
                mask |= track_bit(static_cast<Proto>(p));
                known = true;
            }
        }
        if (!known)
            return false; // also an empty item ("tcp,,udp", a trailing comma, "")
        if (comma == std::string_view::npos)
            break;
        text.remove_prefix(comma + 1);
    }
    out = mask;
    return true;
}

} // namespace flowcop::conntrack
