// SPDX-License-Identifier: BSD-3-Clause
// Private to lib/packet: protocol numbers and alignment-safe big-endian loads.
// Frames arrive at any alignment (VLAN tags shift IP by 4 bytes, IPv4 options by
// any multiple of 4), so every multi-byte field is read byte-wise; compilers turn
// these into one load plus bswap on x86-64 and arm64.
#pragma once

#include <cstdint>

namespace flowcop::packet::wire {

inline uint16_t be16(const uint8_t* p) noexcept
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

inline uint32_t be32(const uint8_t* p) noexcept
{
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Ethertypes (IEEE 802.3 / IANA). 0x9100 is the pre-802.1ad QinQ TPID still
// emitted by older switches; we accept it wherever 0x8100/0x88a8 are accepted.
inline constexpr uint16_t ethertype_ipv4 = 0x0800;
inline constexpr uint16_t ethertype_ipv6 = 0x86dd;
inline constexpr uint16_t ethertype_vlan = 0x8100;
inline constexpr uint16_t ethertype_qinq = 0x88a8;
inline constexpr uint16_t ethertype_qinq_old = 0x9100;

inline constexpr uint32_t eth_header_len = 14;
inline constexpr uint32_t vlan_tag_len = 4;
inline constexpr uint32_t ipv4_min_header_len = 20;
inline constexpr uint32_t ipv6_header_len = 40;
inline constexpr uint32_t tcp_min_header_len = 20;
inline constexpr uint32_t udp_header_len = 8;
inline constexpr uint32_t icmp_header_len = 8;   // RFC 792: every message has type..4 bytes rest-of-header
inline constexpr uint32_t icmpv6_header_len = 4; // RFC 4443 2.1: type, code, checksum
inline constexpr uint32_t ipv6_ext_min_len = 8;  // every walked extension header is >= 8 bytes

// IP protocol / IPv6 next-header numbers (IANA).
inline constexpr uint8_t proto_hopopts = 0;
inline constexpr uint8_t proto_icmp = 1;
inline constexpr uint8_t proto_tcp = 6;
inline constexpr uint8_t proto_udp = 17;
inline constexpr uint8_t proto_routing = 43;
inline constexpr uint8_t proto_fragment = 44;
inline constexpr uint8_t proto_ah = 51;
inline constexpr uint8_t proto_icmpv6 = 58;
inline constexpr uint8_t proto_dstopts = 60;

inline constexpr uint16_t ipv4_frag_offset_mask = 0x1fff; // 13-bit offset, 8-byte units
inline constexpr uint16_t ipv4_mf_and_offset = 0x3fff;    // MF flag plus offset: any fragment
inline constexpr uint16_t ipv6_frag_offset_mask = 0xfff8; // offset in the top 13 bits

} // namespace flowcop::packet::wire
