// SPDX-License-Identifier: BSD-3-Clause
// Contract: Verdict is the one classification every frame gets from parse().
// Exactly one value per frame, never "unknown": the parser only returns values
// below Verdict::count. `tcp` is the only tracked class today; udp/icmp/other_l4
// are well-formed IP that nothing tracks yet; non_ip and fragment are well-formed
// but carry no trackable 4-tuple; every value from truncated_l2 on is a malformed
// frame (is_malformed() is true), named after the first rule it broke, checked
// outer layer first. The numeric values are stable only within one build: store
// and export verdict_name(), not the number.
#pragma once

#include <cstdint>

namespace flowcop::packet {

enum class Verdict : uint8_t {
    tcp, // tracked
    udp,
    icmp,
    other_l4,            // recognised IP, not tracked (yet)
    non_ip,              // ARP, MPLS, LLDP, ... any non-IPv4/IPv6 ethertype
    fragment,            // non-first IP fragment (offset != 0): no ports, counted, not tracked
    truncated_l2,        // shorter than the Ethernet header / a VLAN tag
    truncated_l3,        // IPv4/IPv6 fixed header does not fit
    truncated_l4,        // TCP/UDP/ICMP fixed header does not fit in the frame (or in the IP payload)
    ip_bad_version,      // version nibble does not match the ethertype
    ipv4_bad_ihl,        // IHL < 5 or IHL*4 beyond the frame
    ip_bad_total_length, // IPv4 total length < IHL*4 or > frame; IPv6 payload length > frame (padding is fine)
    ipv6_ext_truncated,  // an extension header runs off the packet
    ipv6_ext_too_long,   // more extension headers than the limit
    tcp_bad_data_offset, // data offset < 5 or beyond the segment
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
