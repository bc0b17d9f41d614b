// SPDX-License-Identifier: BSD-3-Clause
// Contract: Verdict is the one classification every frame gets from parse().
// Exactly one value per frame, never "unknown": the parser only returns values
// below Verdict::count. The classes before non_ip are well-formed IP whose key
// names a flow (what the flow table does with each is flow_table.h's business):
// tcp, udp, icmp (an ICMP/ICMPv6 query or its reply), icmp_error (an ICMP error
// whose key is the quoted packet's flow: it belongs to that flow, never starts one),
// icmp_other (ICMP that is neither: neighbour discovery, MLD, router discovery,
// unknown types; netfilter leaves these untracked) and other_l4 (any other IP
// protocol, keyed by addresses and protocol). non_ip and fragment are well-formed
// but carry no complete key (a non-first fragment's key has no ports: the fragment
// attributor, lib/fragattr, finds its flow); every value from truncated_l2 on is a
// malformed frame (is_malformed() is true), named after the first rule it broke,
// checked outer layer first. The numeric values are stable only within one build:
// store and export verdict_name(), not the number.
#pragma once

#include <cstdint>

namespace flowcop::packet {

enum class Verdict : uint8_t {
    tcp,
    udp,
    icmp,                // ICMP/ICMPv6 query or reply (echo, ...): key = addresses + identifier + query type
    icmp_error,          // ICMP/ICMPv6 error: key = the quoted packet's flow (packet.h)
    icmp_other,          // ICMP/ICMPv6 that is neither a query nor an error (ND, MLD, router discovery, ...)
    other_l4,            // any other IP protocol: key = addresses + protocol
    non_ip,              // ARP, MPLS, LLDP, ... any non-IPv4/IPv6 ethertype
    fragment,            // non-first IP fragment (offset != 0): no ports (see Packet::extra)
    truncated_l2,        // shorter than the Ethernet header / a VLAN tag
    truncated_l3,        // IPv4/IPv6 fixed header does not fit
    truncated_l4,        // TCP/UDP/ICMP fixed header (an ICMP query: 8 bytes) does not fit in the IP payload
    ip_bad_version,      // version nibble does not match the ethertype
    ipv4_bad_ihl,        // IHL < 5 or IHL*4 beyond the frame
    ip_bad_total_length, // IPv4 total length < IHL*4 or > frame; IPv6 payload length > frame (padding is fine)
    ipv6_ext_truncated,  // an extension header runs off the packet
    ipv6_ext_too_long,   // more extension headers than the limit
    tcp_bad_data_offset, // data offset < 5 or beyond the segment
    icmp_bad_quote,      // an ICMP error whose quoted packet cannot be read or is itself an ICMP error
    vlan_too_deep,       // more VLAN tags than the limit
    count
};

inline constexpr unsigned kVerdictCount = static_cast<unsigned>(Verdict::count);

// Stable snake_case name of each value ("tcp", "truncated_l4", ...), used as a
// Prometheus label value, so a rename is a breaking change for dashboards.
// Returns "invalid" for Verdict::count and anything beyond it; never nullptr.
const char* verdict_name(Verdict v) noexcept;

// True for the malformed classes (truncated_l2 .. vlan_too_deep): frames a
// correct sender and a correct NIC never produce. fragment and non_ip are not
// malformed, they are merely untrackable.
constexpr bool is_malformed(Verdict v) noexcept
{
    return v >= Verdict::truncated_l2 && v < Verdict::count;
}

} // namespace flowcop::packet
