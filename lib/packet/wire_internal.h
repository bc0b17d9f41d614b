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
inline constexpr uint16_t kEthertypeIpv4 = 0x0800;
inline constexpr uint16_t kEthertypeIpv6 = 0x86dd;
inline constexpr uint16_t kEthertypeVlan = 0x8100;
inline constexpr uint16_t kEthertypeQinq = 0x88a8;
inline constexpr uint16_t kEthertypeQinqOld = 0x9100;

inline constexpr uint32_t kEthHeaderLen = 14;
inline constexpr uint32_t kVlanTagLen = 4;
inline constexpr uint32_t kIpv4MinHeaderLen = 20;
inline constexpr uint32_t kIpv6HeaderLen = 40;
inline constexpr uint32_t kTcpMinHeaderLen = 20;
inline constexpr uint32_t kUdpHeaderLen = 8;
inline constexpr uint32_t kIcmpHeaderLen = 8;   // RFC 792: every message has type..4 bytes rest-of-header
inline constexpr uint32_t kIcmpv6HeaderLen = 4; // RFC 4443 2.1: type, code, checksum
inline constexpr uint32_t kIpv6ExtMinLen = 8;   // every walked extension header is >= 8 bytes
// RFC 7323 appendix A's layout of a timestamp-only option block: NOP, NOP, kind 8, length 10.
inline constexpr uint32_t kTcpTimestampAlignedLen = 12;
inline constexpr uint32_t kTcpTimestampAlignedLead = 0x0101080a;

// IP protocol / IPv6 next-header numbers (IANA).
inline constexpr uint8_t kProtoHopopts = 0;
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoRouting = 43;
inline constexpr uint8_t kProtoFragment = 44;
inline constexpr uint8_t kProtoAh = 51;
inline constexpr uint8_t kProtoIcmpv6 = 58;
inline constexpr uint8_t kProtoDstopts = 60;

inline constexpr uint16_t kIpv4FragOffsetMask = 0x1fff; // 13-bit offset, 8-byte units
inline constexpr uint16_t kIpv4MoreFragments = 0x2000;  // MF
inline constexpr uint16_t kIpv4MfAndOffset = 0x3fff;    // MF flag plus offset: any fragment
inline constexpr uint16_t kIpv6FragOffsetMask = 0xfff8; // offset in the top 13 bits, in 8-byte units
inline constexpr uint16_t kIpv6FragMore = 0x0001;       // M

// ICMPv4 types (RFC 792, 950) and ICMPv6 types (RFC 4443, 4620) the parser classifies.
inline constexpr uint8_t kIcmpEchoReply = 0, kIcmpDestUnreach = 3, kIcmpSourceQuench = 4, kIcmpRedirect = 5,
                         kIcmpEcho = 8, kIcmpTimeExceeded = 11, kIcmpParamProblem = 12, kIcmpTimestamp = 13,
                         kIcmpTimestampReply = 14, kIcmpInfoRequest = 15, kIcmpInfoReply = 16, kIcmpAddrMask = 17,
                         kIcmpAddrMaskReply = 18;
inline constexpr uint8_t kIcmpv6DestUnreach = 1, kIcmpv6PacketTooBig = 2, kIcmpv6TimeExceeded = 3,
                         kIcmpv6ParamProblem = 4, kIcmpv6EchoRequest = 128, kIcmpv6EchoReply = 129,
                         kIcmpv6NiQuery = 139, kIcmpv6NiReply = 140;
inline constexpr uint32_t kIcmpQueryLen = 8; // type, code, checksum, identifier, sequence
inline constexpr uint32_t kIcmpErrorLen = 8; // type, code, checksum, 4 bytes (unused, pointer or MTU)
inline constexpr uint32_t kQuotedL4Len = 8;  // RFC 792: the quote holds the first 8 bytes of the datagram's data

} // namespace flowcop::packet::wire
