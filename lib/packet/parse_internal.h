// SPDX-License-Identifier: BSD-3-Clause
// Private to lib/packet: the state one parse() call threads through its layers,
// and the steps shared by the IPv4 and IPv6 paths (L4 and key building). Inline so
// the IPv4/TCP fast path in parse.cpp compiles into one function.
#pragma once

#include <cstring>

#include <packet/packet.h>

#include "wire_internal.h"

namespace flowcop::packet::detail {

// Bytes of one frame. `window` is what may be read (min of the bytes given, the frame
// and max_header_bytes); `frame` is the true frame length that lengths are checked
// against. Offsets are frame offsets; all arithmetic stays within uint32_t because
// offsets never exceed window <= max_header_bytes before a check.
struct View {
    const uint8_t* bytes;
    uint32_t window;
    uint32_t frame;

    bool readable(uint32_t off, uint32_t n) const noexcept { return n <= window && off <= window - n; }

    // The verdict for a header [off, off+n) that is not readable: the layer's own
    // truncation verdict, unless the frame does go on and only the header-byte cap
    // cut it off, which happens only behind a long IPv6 extension chain.
    Verdict unreadable(uint32_t off, uint32_t n, Verdict layer) const noexcept
    {
        const bool capped = window == kMaxHeaderBytes && uint64_t{off} + n <= frame;
        return capped ? Verdict::ipv6_ext_too_long : layer;
    }
};

// Writes the canonical key: addresses are `alen` (4 or 16) bytes in network order.
inline void set_key(Packet& out, const uint8_t* src, const uint8_t* dst, uint32_t alen, uint16_t sport,
                    uint16_t dport) noexcept
{
    FlowKey& k = out.key;
    // Network-order bytes compared as memcmp() would; IPv4's four as one big-endian integer, which
    // compilers do inline (a memcmp() for order, unlike one for equality, stays a library call).
    int c;
    if (alen == 4) {
        const uint32_t s = wire::be32(src), d = wire::be32(dst);
        c = s < d ? -1 : (s > d ? 1 : 0);
    } else {
        c = std::memcmp(src, dst, alen);
    }
    const bool src_lo = c < 0 || (c == 0 && sport <= dport);
    const uint8_t* lo = src_lo ? src : dst;
    const uint8_t* hi = src_lo ? dst : src;
    if (alen == 4) {
        // IPv4-mapped: bytes 0..9 stay zero from parse()'s memset.
        k.addr_lo[10] = k.addr_lo[11] = 0xff;
        k.addr_hi[10] = k.addr_hi[11] = 0xff;
        std::memcpy(k.addr_lo + 12, lo, 4);
        std::memcpy(k.addr_hi + 12, hi, 4);
    } else {
        std::memcpy(k.addr_lo, lo, 16);
        std::memcpy(k.addr_hi, hi, 16);
    }
    k.port_lo = src_lo ? sport : dport;
    k.port_hi = src_lo ? dport : sport;
    k.proto = out.l4_proto;
    out.src_is_lo = src_lo;
}

// The frag_* fields of a fragment (first or not). offset in bytes; data_len: the fragmentable part's
// bytes in this fragment (<= 65535: IP lengths are 16-bit and BIG TCP is never fragmented).
inline void set_fragment(Packet& out, uint32_t id, uint32_t offset, bool more, uint32_t data_len) noexcept
{
    out.extra.frag_flags = static_cast<uint8_t>(kFragmented | (more ? kFragMore : 0));
    out.extra.frag_id = id;
    out.extra.frag_offset = static_cast<uint16_t>(offset);
    out.extra.frag_data_len = static_cast<uint16_t>(data_len);
}

// The TCP fields a Packet carries, from the 20-byte fixed header at th (readable: the caller checked).
inline void read_tcp_fixed_header(const uint8_t* th, Packet& out) noexcept
{
    out.sport = wire::be16(th);
    out.dport = wire::be16(th + 2);
    out.seq = wire::be32(th + 4);
    out.ack = wire::be32(th + 8);
    out.tcp_flags = th[13];
    out.window = wire::be16(th + 14);
}

// Packet::sack and tcp_opt from the options of the TCP header at th, whose hlen bytes the caller
// checked are readable. Both parse paths call this, so they agree on every frame.
inline void read_tcp_options(const uint8_t* th, uint32_t hlen, Packet& out) noexcept
{
    out.sack = out.ack;
    if (hlen == wire::kTcpMinHeaderLen)
        return;
    // Linux's usual segment carries NOP, NOP, timestamp and nothing else: none of it is tracked, so
    // the walk is skipped (netfilter's tcp_sack() has the same shortcut).
    if (hlen == wire::kTcpMinHeaderLen + wire::kTcpTimestampAlignedLen &&
        wire::be32(th + wire::kTcpMinHeaderLen) == wire::kTcpTimestampAlignedLead) {
        out.tcp_opt = kTcpOptPresent;
        return;
    }
    const TcpOptions o = parse_tcp_options(th + wire::kTcpMinHeaderLen, hlen - wire::kTcpMinHeaderLen, out.ack);
    out.tcp_opt = o.bits;
    out.sack = o.sack;
}

// Addresses of the IP header being parsed, for set_key.
struct Endpoints {
    const uint8_t* src;
    const uint8_t* dst;
    uint32_t alen;
};

// The IPv6 extension headers the parser walks (packet.h).
inline bool is_walked_ext(uint8_t nh) noexcept
{
    return nh == wire::kProtoHopopts || nh == wire::kProtoRouting || nh == wire::kProtoDstopts ||
           nh == wire::kProtoFragment || nh == wire::kProtoAh;
}

// Length of a walked extension header other than Fragment (always 8), from its first 2 bytes at h.
inline uint32_t ext_header_len(uint8_t nh, const uint8_t* h) noexcept
{
    if (nh == wire::kProtoAh)
        return (uint32_t{h[1]} + 2) * 4; // RFC 4302 2.2: 32-bit words minus 2
    return (uint32_t{h[1]} + 1) * 8;     // RFC 8200 4.3: 8-octet units, not counting the first 8
}

// ICMP (ep.alen == 4) or ICMPv6 (16) at [off, end), end <= frame: the query / error / other
// classes of packet.h, errors through their quoted packet. parse_icmp.cpp; out of line, since
// ICMP is a small share of traffic.
Verdict parse_icmp(const View& v, uint32_t off, uint32_t end, const Endpoints& ep, Packet& out) noexcept;

// L4 dispatch, generic over protocols with ports. [off, end) is the IP payload
// (end <= frame, checked by the caller). length_from_frame: the IP length was 0
// (BIG TCP), which only TCP may use.
inline Verdict parse_l4(const View& v, uint32_t off, uint32_t end, bool length_from_frame, const Endpoints& ep,
                        Packet& out) noexcept
{
    const uint8_t proto = out.l4_proto;
    const uint32_t seg = end - off;
    if (proto == wire::kProtoTcp) {
        if (seg < wire::kTcpMinHeaderLen) {
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return Verdict::truncated_l4;
        }
        if (!v.readable(off, wire::kTcpMinHeaderLen)) {
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return v.unreadable(off, wire::kTcpMinHeaderLen, Verdict::truncated_l4);
        }
        const uint8_t* th = v.bytes + off;
        read_tcp_fixed_header(th, out);
        set_key(out, ep.src, ep.dst, ep.alen, out.sport, out.dport);
        const uint32_t hlen = (uint32_t{th[12]} >> 4) * 4;
        if (hlen < wire::kTcpMinHeaderLen || hlen > seg)
            return Verdict::tcp_bad_data_offset;
        out.l4_payload_len = seg - hlen;
        if (v.readable(off, hlen))
            read_tcp_options(th, hlen, out);
        else
            out.sack = out.ack; // options past the header-byte cap: read as absent (packet.h)
        return Verdict::tcp;
    }
    if (length_from_frame)
        return Verdict::ip_bad_total_length;

    if ((proto == wire::kProtoIcmp && ep.alen == 4) || (proto == wire::kProtoIcmpv6 && ep.alen == 16))
        return parse_icmp(v, off, end, ep, out);
    if (proto != wire::kProtoUdp) {
        set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
        return Verdict::other_l4;
    }
    constexpr uint32_t kNeed = wire::kUdpHeaderLen;
    if (seg < kNeed || !v.readable(off, kNeed)) {
        set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
        return seg < kNeed ? Verdict::truncated_l4 : v.unreadable(off, kNeed, Verdict::truncated_l4);
    }
    // Every port-carrying L4 (UDP, and SCTP, DCCP, UDP-Lite, which are keyed as other_l4)
    // starts with source port, destination port.
    out.sport = wire::be16(v.bytes + off);
    out.dport = wire::be16(v.bytes + off + 2);
    out.l4_payload_len = seg - kNeed;
    set_key(out, ep.src, ep.dst, ep.alen, out.sport, out.dport);
    return Verdict::udp;
}

Verdict parse_ipv6(const View& v, uint32_t l3, Packet& out) noexcept;

// parse() is these two: the fast path takes the common frame (untagged IPv4 without options, TCP with
// a valid data offset, whole headers and TCP options in `window` bytes) and fills `out` exactly as the general path
// would; for any other frame it returns false without writing, and the general path, which handles
// every frame, decides. `window` = min(bytes given, frame_len, max_header_bytes). tests/packet
// checks that both give the same Packet on every frame the fast path takes.
bool parse_ipv4_tcp_fast(const uint8_t* hdr, uint32_t window, uint32_t frame_len, Packet& out) noexcept;
Verdict parse_general(const uint8_t* hdr, uint32_t window, uint32_t frame_len, Packet& out) noexcept;

} // namespace flowcop::packet::detail
