// SPDX-License-Identifier: BSD-3-Clause
// Contract: FlowKey is the canonical, direction-free identity of a flow: 42 bytes, used
// verbatim as the flow table's key (hashed and compared as bytes), so every byte is
// defined (no padding, all fields written by parse()) and equal flows compare equal
// with memcmp.
// - Canonical order: the (address, port) endpoint that is smaller (address bytes
//   compared with memcmp, i.e. numerically in network order, then port) goes to
//   *_lo. Both directions of a flow therefore give the same bytes; Packet::src_is_lo
//   tells which way a packet went. A flow from an endpoint to itself (same address
//   and port) puts the sender in *_lo in both directions: src_is_lo is true both
//   ways, since the key cannot tell the directions apart.
// - IPv4 addresses are stored IPv4-mapped (::ffff:a.b.c.d, RFC 4291 2.5.5.2).
//   An IPv6 packet that carries IPv4-mapped addresses on the wire (forbidden by that
//   RFC) therefore gets the same key as the IPv4 flow; we accept that collision
//   rather than widen the key.
// - VLAN: the outer and inner 12-bit VLAN IDs are part of the key, so the same
//   4-tuple untagged, in VLAN 42 and in QinQ 10/20 is three flows (overlapping
//   address plans in different VLANs are distinct networks). Packing:
//   vlan[0..2] = outer(12 bits) << 12 | inner(12 bits), big-endian. Untagged is 0/0;
//   a priority-only tag (VID 0) therefore keys like untagged, as 802.1Q intends.
//   A third or fourth tag is skipped and not part of the key (Packet::extra.vlan_tags
//   counts it). --vlan-key outer|none zeroes IDs after parsing (key_policy.h).
// - Ports are host byte order: the L4 ports for TCP and UDP; for an ICMP/ICMPv6
//   query the originator's (identifier, query type) — netfilter's ICMP tuple, so a
//   request and its reply give the same key, and echo and timestamp queries with
//   one identifier stay apart; 0/0 for protocols keyed without ports (other_l4,
//   ICMP that is neither query nor error) and for fragments. An ICMP error's key is
//   the quoted packet's (packet.h).
// - Zone: a 16-bit conntrack zone (netfilter's CT zone), so the same tuple seen on
//   ports with overlapping address plans is kept apart. parse() leaves it 0 (its
//   memset); whoever knows the ingress port sets it before the packet is tracked.
// All functions are pure, thread-safe and allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace flowcop::packet {

struct FlowKey {
    uint8_t addr_lo[16]; // the lower (address, port) endpoint; IPv4 stored IPv4-mapped (::ffff:a.b.c.d)
    uint8_t addr_hi[16];
    uint16_t port_lo; // host byte order
    uint16_t port_hi;
    uint8_t proto;   // IPPROTO_TCP, ...
    uint8_t vlan[3]; // outer VLAN ID (12 bits) and inner VLAN ID (12 bits) packed; 0/0 when untagged
    uint16_t zone;   // conntrack zone, host byte order; 0 unless the ingress port has one
};
static_assert(sizeof(FlowKey) == 42, "FlowKey is 42 bytes, every one defined: no padding");

inline bool operator==(const FlowKey& a, const FlowKey& b) noexcept
{
    return std::memcmp(&a, &b, sizeof(FlowKey)) == 0;
}

// Recover (source, destination) of a flow's originator, or of one packet:
// orig_is_lo == true means the originator is the key's lo endpoint (pass
// Packet::src_is_lo to get the packet's own source and destination back).
void key_endpoints(const FlowKey& key, bool orig_is_lo, uint8_t src[16], uint16_t& sport, uint8_t dst[16],
                   uint16_t& dport) noexcept;

// True when both addresses are IPv4-mapped, i.e. the key came from an IPv4 packet
// (see the collision note above).
bool key_is_ipv4(const FlowKey& key) noexcept;

// True when addr is in the IPv4-mapped form (::ffff:a.b.c.d) keys store IPv4 addresses in.
bool is_ipv4_mapped(const uint8_t addr[16]) noexcept;

// The key of the flow between (a, port_a) and (b, port_b), canonical as the parser builds a packet's:
// addresses in the 16-byte form, the lower (address, port) endpoint first, so either direction gives
// the same key; the VLAN IDs packed into vlan, the zone as given. For tuples typed by an operator
// (telemetry, flowcopctl); off the per-packet path.
FlowKey make_flow_key(const uint8_t a[16], uint16_t port_a, const uint8_t b[16], uint16_t port_b, uint8_t proto,
                      uint16_t vlan_outer, uint16_t vlan_inner, uint16_t zone) noexcept;

// The VLAN IDs packed in key.vlan (0 when absent).
uint16_t key_vlan_outer(const FlowKey& key) noexcept;
uint16_t key_vlan_inner(const FlowKey& key) noexcept;

// Buffer size format_addr() needs: INET6_ADDRSTRLEN, the longest IPv6 text form
// plus its NUL.
inline constexpr size_t kAddrStrLen = 46;

// Formats a key address: IPv4-mapped addresses as dotted quad ("192.0.2.1"),
// everything else in RFC 5952 canonical IPv6 form (lower-case hex, no leading
// zeros, the longest run of two or more zero groups - the first on a tie - as
// "::"). Writes a NUL-terminated string into buf and returns its length (without
// the NUL). If buflen is smaller than the text plus NUL, writes an empty string
// (when buflen > 0) and returns 0; buflen >= addr_str_len always fits.
size_t format_addr(const uint8_t addr[16], char* buf, size_t buflen) noexcept;

} // namespace flowcop::packet
