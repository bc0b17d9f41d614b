// SPDX-License-Identifier: BSD-3-Clause
// Contract: parse_tcp_lite() reads the common frame of an established TCP connection into a 32-byte
// TcpLite, the only fields a steady segment's tracking reads, with a compact IPv4 key (issue 29's
// steady lane: FlowTable::process_lite in conntrack/flow_table.h). The frame it takes: untagged IPv4 without options, not a
// fragment, TCP with a data offset of 5, or 8 with Linux's lone aligned timestamp option (NOP, NOP,
// timestamp: nothing tracked), total length >= 40 within the frame (0, BIG TCP, is not taken), all of
// it readable in `len` bytes. For such a frame every field equals what parse() puts in a Packet (the
// key as the IPv4-mapped FlowKey lite_key() builds, tcp_opt aside, which tracking does not read on
// this lane) and it returns true; for any other frame it returns false, and the caller parses the
// frame with parse(), which takes every frame. tests/packet checks both on every fuzzed input.
// Pure, thread-safe, allocation-free, inline (a caller's burst loop holds it); reads only [b, b+len).
#pragma once

#include <cstdint>
#include <cstring>

#include <packet/flow_key.h>
#include <packet/packet.h>

#include "wire_internal.h"

namespace flowcop::packet {

struct TcpLite {
    uint32_t addr_lo, addr_hi; // the key's addresses, network order as on the wire (flow_key.h's order)
    uint16_t port_lo, port_hi; // host order
    uint32_t seq, ack;         // host order
    uint32_t sack;             // == ack: this frame carries no SACK block
    uint16_t window;           // as on the wire (unscaled)
    uint16_t ip_len;           // IPv4 total length (Packet::ip_len)
    uint16_t l4_payload_len;   // TCP payload bytes
    uint8_t tcp_flags;
    bool src_is_lo; // the packet's source is addr_lo/port_lo (Packet::src_is_lo)
};
static_assert(sizeof(TcpLite) == 32, "a burst of them is 1 KiB");

inline bool parse_tcp_lite(const uint8_t* b, uint32_t len, uint32_t frame_len, TcpLite& out) noexcept
{
    // Field by field: a reader from five 8-byte loads with masked compares was measured slower in gcc's
    // code (585 against 567 instructions per steady packet: its values spilled; tests/benchmarks.md).
    namespace w = wire;
    constexpr uint32_t kL3 = w::kEthHeaderLen;
    constexpr uint32_t kL4 = kL3 + w::kIpv4MinHeaderLen;
    constexpr uint32_t kMin = kL4 + w::kTcpMinHeaderLen;
    if (len < kMin)
        return false;
    const uint8_t* ip = b + kL3;
    const uint8_t* th = b + kL4;
    // Untagged IPv4 with IHL 5, TCP, neither MF nor an offset.
    if (w::be16(b + 12) != w::kEthertypeIpv4 || ip[0] != 0x45 || ip[9] != w::kProtoTcp ||
        (w::be16(ip + 6) & w::kIpv4MfAndOffset) != 0)
        return false;
    const uint32_t hlen = (uint32_t{th[12]} >> 4) * 4;
    const uint32_t total = w::be16(ip + 2);
    if (hlen != w::kTcpMinHeaderLen &&
        (hlen != w::kTcpMinHeaderLen + w::kTcpTimestampAlignedLen || len < kMin + w::kTcpTimestampAlignedLen ||
         w::be32(th + w::kTcpMinHeaderLen) != w::kTcpTimestampAlignedLead))
        return false;
    // The IP datagram holds both headers and fits the frame (padding after it is fine, as in parse()).
    if (total < w::kIpv4MinHeaderLen + hlen || total > frame_len - kL3)
        return false;
    const uint16_t sport = w::be16(th), dport = w::be16(th + 2);
    const uint32_t src = w::be32(ip + 12), dst = w::be32(ip + 16);
    const bool src_lo = src < dst || (src == dst && sport <= dport);
    uint32_t src_raw, dst_raw;
    std::memcpy(&src_raw, ip + 12, 4);
    std::memcpy(&dst_raw, ip + 16, 4);
    out.addr_lo = src_lo ? src_raw : dst_raw;
    out.addr_hi = src_lo ? dst_raw : src_raw;
    out.port_lo = src_lo ? sport : dport;
    out.port_hi = src_lo ? dport : sport;
    out.seq = w::be32(th + 4);
    out.ack = w::be32(th + 8);
    out.sack = out.ack;
    out.window = w::be16(th + 14);
    out.ip_len = uint16_t(total);
    out.l4_payload_len = uint16_t(total - w::kIpv4MinHeaderLen - hlen);
    out.tcp_flags = th[13];
    out.src_is_lo = src_lo;
    return true;
}

// The FlowKey parse() gives the frame a TcpLite came from: IPv4-mapped addresses, protocol TCP, no VLAN
// IDs, zone 0.
inline FlowKey lite_key(const TcpLite& t) noexcept
{
    FlowKey k{};
    k.addr_lo[10] = k.addr_lo[11] = 0xff;
    k.addr_hi[10] = k.addr_hi[11] = 0xff;
    std::memcpy(k.addr_lo + 12, &t.addr_lo, 4);
    std::memcpy(k.addr_hi + 12, &t.addr_hi, 4);
    k.port_lo = t.port_lo;
    k.port_hi = t.port_hi;
    k.proto = wire::kProtoTcp;
    return k;
}

// The TcpLite of a parsed Packet the lane can carry (TCP, IPv4 key, no VLAN IDs, zone 0, no SACK block),
// false for any other: what parse_tcp_lite() gives for the frame parse() gave p for, whatever its options
// (tests and fuzz drivers feed the lane from Packets with it).
inline bool lite_of(const Packet& p, TcpLite& t) noexcept
{
    if (p.verdict != Verdict::tcp || !key_is_ipv4(p.key) || p.sack != p.ack || p.key.vlan[0] || p.key.vlan[1] ||
        p.key.vlan[2] || p.key.zone != 0 || p.ip_len > 0xffff)
        return false;
    std::memcpy(&t.addr_lo, p.key.addr_lo + 12, 4);
    std::memcpy(&t.addr_hi, p.key.addr_hi + 12, 4);
    t.port_lo = p.key.port_lo;
    t.port_hi = p.key.port_hi;
    t.seq = p.seq;
    t.ack = p.ack;
    t.sack = p.sack;
    t.window = p.window;
    t.ip_len = uint16_t(p.ip_len);
    t.l4_payload_len = uint16_t(p.l4_payload_len);
    t.tcp_flags = p.tcp_flags;
    t.src_is_lo = p.src_is_lo;
    return true;
}

} // namespace flowcop::packet
