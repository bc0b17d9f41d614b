// SPDX-License-Identifier: BSD-3-Clause
// Contract: parse_tcp_lite() reads the common frame of an established TCP connection into a 32-byte
// TcpLite, the only fields a steady segment's tracking reads, with a compact IPv4 key (issue 29's
// steady lane: FlowTable::process_lite in conntrack/flow_table.h). The frame it takes: untagged IPv4
// without options, not a fragment, TCP with a data offset of 5, or 8 with Linux's lone aligned timestamp
// option (NOP, NOP, timestamp: nothing tracked), ACK set and none of SYN, FIN and RST (kLiteKind: the
// only segments the fused path takes), total length >= 40 within the frame (0, BIG TCP, is not taken),
// all of it readable in `len` bytes of the frame's `frame_len` (frame_len >= len: an mbuf's pkt_len and
// data_len). For such a frame every field equals what parse() puts in a Packet (the key as the
// IPv4-mapped FlowKey lite_key() builds, src_is_lo as src_lo_bit, tcp_opt aside, which tracking does not
// read on this lane) and it returns true; for any other frame it returns false, and the caller parses the
// frame with parse(), which takes every frame. tests/packet checks both on every fuzzed input.
// Two readers, one result: the vector one where the target has SSE4.2 (x86-64 with DPDK's -march=corei7,
// as the worker is built), else the portable one. They take the same frames and write the same 32 bytes
// for every input (tests/packet runs both on every fuzzed frame, from garbage), so whichever copy of
// parse_tcp_lite() a link keeps from units built with and without SSE4.2 reads alike.
// Pure, thread-safe, allocation-free, inline (a caller's burst loop holds it); reads only [b, b+len).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

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
    uint16_t l4_payload_len;   // TCP payload bytes (beside the window: the fingerprint loads both as one word)
    uint16_t ip_len;           // IPv4 total length (Packet::ip_len)
    uint8_t tcp_flags;
    uint8_t src_lo_bit; // kLiteSrcIsLo when the packet's source is addr_lo/port_lo (Packet::src_is_lo), else 0
};
static_assert(sizeof(TcpLite) == 32, "a burst of them is 1 KiB");

static_assert(offsetof(TcpLite, addr_hi) == 4 && offsetof(TcpLite, port_lo) == 8 && offsetof(TcpLite, port_hi) == 10 &&
                  offsetof(TcpLite, seq) == 12 && offsetof(TcpLite, ack) == 16 && offsetof(TcpLite, sack) == 20 &&
                  offsetof(TcpLite, window) == 24 && offsetof(TcpLite, l4_payload_len) == 26 &&
                  offsetof(TcpLite, ip_len) == 28 && offsetof(TcpLite, tcp_flags) == 30 &&
                  offsetof(TcpLite, src_lo_bit) == 31,
              "detail::parse_tcp_lite_sse() writes TcpLite as two 16-byte vectors in this layout");

namespace detail {

inline constexpr uint32_t kLiteL3 = wire::kEthHeaderLen;
inline constexpr uint32_t kLiteL4 = kLiteL3 + wire::kIpv4MinHeaderLen;
inline constexpr uint32_t kLiteMin = kLiteL4 + wire::kTcpMinHeaderLen;
} // namespace detail

// The TCP flags the reader tests (ACK alone of them: an established connection's every segment but its
// ends), in the flags byte's place: the steady path tests nothing else of a lane segment's flags.
inline constexpr uint8_t kLiteKind = kTcpFin | kTcpSyn | kTcpRst | kTcpAck;
inline constexpr uint8_t kLiteKindAck = kTcpAck;
// TcpLite::src_lo_bit's value for a packet from the key's lower endpoint: the bit the flow table's record
// keeps for its originator's side (conntrack::FlowRecord::kOrigIsLo), so the lane finds a segment's side
// with one exclusive or.
inline constexpr uint8_t kLiteSrcIsLo = 0x02;

namespace detail {

// The bytes a, b, c, d as a 4-byte word loaded from memory holds them (either byte order).
constexpr uint32_t lite_bytes(uint8_t a, uint8_t b, uint8_t c, uint8_t d) noexcept
{
    return std::bit_cast<uint32_t>(std::array<uint8_t, 4>{a, b, c, d});
}

inline uint32_t lite_load32(const uint8_t* p) noexcept
{
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// The reader in portable C++ (any target; tests/packet checks it against parse() and the vector one).
inline bool parse_tcp_lite_portable(const uint8_t* b, uint32_t len, uint32_t frame_len, TcpLite& out) noexcept
{
    namespace w = wire;
    if (len < kLiteMin)
        return false;
    const uint8_t* ip = b + kLiteL3;
    const uint8_t* th = b + kLiteL4;
    // The header as two masked words, one branch: bytes 12-15 the ethertype and version 4 with IHL 5
    // (the TOS is free), bytes 20-23 neither MF nor an offset (DF and the TTL are free) and TCP.
    const uint32_t head = ((lite_load32(b + 12) & lite_bytes(0xff, 0xff, 0xff, 0)) ^ lite_bytes(0x08, 0x00, 0x45, 0)) |
                          ((lite_load32(ip + 6) & lite_bytes(0x3f, 0xff, 0, 0xff)) ^ lite_bytes(0, 0, 0, w::kProtoTcp));
    const uint32_t doff = th[12] & 0xf0; // the data offset in its place: 0x50 no options, 0x80 the timestamp's
    if ((th[13] & kLiteKind) != kLiteKindAck)
        return false;
    if ((head | (doff ^ 0x50)) != 0 && (head != 0 || doff != 0x80 || len < kLiteMin + w::kTcpTimestampAlignedLen ||
                                        w::be32(th + w::kTcpMinHeaderLen) != w::kTcpTimestampAlignedLead))
        return false;
    const uint32_t hlen = doff >> 2;
    const uint32_t total = w::be16(ip + 2);
    // The IP datagram holds both headers and fits the frame (padding after it is fine, as in parse()),
    // as the vector reader tests it.
    const uint32_t headers = w::kIpv4MinHeaderLen + hlen;
    if (total - headers > frame_len - kLiteL3 - headers)
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
    out.l4_payload_len = uint16_t(total - headers);
    out.tcp_flags = th[13];
    out.src_lo_bit = src_lo ? kLiteSrcIsLo : 0;
    return true;
}

#if defined(__SSE4_2__)
// The reader in SSE4.2 (x86-64's DPDK baseline, -march=corei7): three 16-byte loads, all within the 54
// bytes len covers, every check of the header in one compare, TcpLite written as two vectors built by
// byte shuffles.
inline bool parse_tcp_lite_sse(const uint8_t* b, uint32_t len, uint32_t frame_len, TcpLite& out) noexcept
{
    namespace w = wire;
    if (len < kLiteMin)
        return false;
    const uint8_t* ip = b + kLiteL3;
    const uint8_t* th = b + kLiteL4;
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 12));  // ethertype..IP checksum
    const __m128i ends = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ip + 12)); // addresses, ports, seq
    const __m128i tcp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(th));       // the TCP header
    // Bytes 12-14 the ethertype and version 4 with IHL 5, 20-21 neither MF nor an offset (DF free),
    // 23 TCP, in head; the data offset 5 and the flags' kind (bytes 12 and 13 of tcp, where head's bytes
    // are free), in one compare.
    const __m128i checked =
        _mm_or_si128(_mm_and_si128(head, _mm_setr_epi8(-1, -1, -1, 0, 0, 0, 0, 0, 0x3f, -1, 0, -1, 0, 0, 0, 0)),
                     _mm_and_si128(tcp, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -16, kLiteKind, 0, 0)));
    const int same = _mm_movemask_epi8(_mm_cmpeq_epi8(
        checked, _mm_setr_epi8(0x08, 0x00, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, w::kProtoTcp, 0x50, kLiteKindAck, 0, 0)));
    constexpr uint32_t kHeaders = w::kIpv4MinHeaderLen + w::kTcpMinHeaderLen;
    constexpr uint32_t kStampHeaders = kHeaders + w::kTcpTimestampAlignedLen;
    const uint32_t total = w::be16(ip + 2);
    // The IP datagram holds both headers and fits the frame (padding after it is fine, as in parse()):
    // its payload in [0, frame_len - kLiteL3 - headers], one unsigned compare (frame_len >= len >= both
    // headers' end: no wrap). Written out for each header length, so each is a constant.
    uint32_t payload;
    if (same == 0xffff) [[likely]] {
        payload = total - kHeaders;
        if (payload > frame_len - (kLiteL3 + kHeaders))
            return false;
    } else {
        // All but the data offset: the timestamp's 8 with its aligned lead, or not taken.
        if (same != 0xefff || (th[12] & 0xf0) != 0x80 || len < kLiteMin + w::kTcpTimestampAlignedLen ||
            w::be32(th + w::kTcpMinHeaderLen) != w::kTcpTimestampAlignedLead)
            return false;
        payload = total - kStampHeaders;
        if (payload > frame_len - (kLiteL3 + kStampHeaders))
            return false;
    }
    // Each endpoint as a 48-bit number (address, then port, host order) in a 64-bit lane: the canonical
    // order is one compare of the lanes (both below 2^63: pcmpgtq's signed compare is the unsigned one).
    const __m128i keyed = _mm_shuffle_epi8(ends, _mm_setr_epi8(9, 8, 3, 2, 1, 0, -1, -1, 11, 10, 7, 6, 5, 4, -1, -1));
    const __m128i src_gt = _mm_cmpgt_epi64(keyed, _mm_shuffle_epi32(keyed, _MM_SHUFFLE(1, 0, 3, 2)));
    const __m128i swap = _mm_shuffle_epi32(src_gt, _MM_SHUFFLE(1, 0, 1, 0)); // all ones: the source is hi
    // Bytes 0-15: the addresses as they are or swapped, each port and the sequence number byte-swapped.
    const __m128i as_is = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 11, 10, 15, 14, 13, 12);
    const __m128i swapped = _mm_setr_epi8(4, 5, 6, 7, 0, 1, 2, 3, 11, 10, 9, 8, 15, 14, 13, 12);
    const __m128i order = _mm_xor_si128(as_is, _mm_and_si128(swap, _mm_xor_si128(as_is, swapped)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&out), _mm_shuffle_epi8(ends, order));
    // Bytes 16-31: ack and sack (the ack twice), window, flags from the TCP header; the lengths inserted;
    // src_lo_bit kLiteSrcIsLo unless swapped.
    __m128i rest = _mm_shuffle_epi8(tcp, _mm_setr_epi8(11, 10, 9, 8, 11, 10, 9, 8, 15, 14, -1, -1, -1, -1, 13, -1));
    rest = _mm_insert_epi16(rest, int(payload), 5);
    rest = _mm_insert_epi16(rest, int(total), 6);
    rest = _mm_or_si128(
        rest, _mm_andnot_si128(swap, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, kLiteSrcIsLo)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&out) + 1, rest);
    return true;
}
#endif

} // namespace detail

inline bool parse_tcp_lite(const uint8_t* b, uint32_t len, uint32_t frame_len, TcpLite& out) noexcept
{
    // Why vectors: read field by field (a compare and a branch per field checked, a load and a byte swap
    // per field read, a store per field) the reader cost 94 instructions a frame in the worker's loop, and
    // a reader from five 8-byte words with masked compares spilled its words (tests/benchmarks.md, issue
    // 29, "The reader"). Three 16-byte loads hold every byte the vector reader reads; one masked compare
    // checks the header, a 64-bit lane compare orders the key and one shuffle each builds TcpLite's two
    // halves: 54 a frame, loop included, with no general register held across the loop.
#if defined(__SSE4_2__)
    return detail::parse_tcp_lite_sse(b, len, frame_len, out);
#else
    return detail::parse_tcp_lite_portable(b, len, frame_len, out);
#endif
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

// True when k is a key lite_key() gives for some TcpLite: both addresses IPv4-mapped, TCP, no VLAN IDs,
// zone 0. Such a key is equal to lite_key(t) exactly when its IPv4 addresses and ports are t's
// (conntrack/lite_key.h compares only those for a record that holds one).
inline bool is_lite_key(const FlowKey& k) noexcept
{
    // Every byte but the addresses' IPv4 parts and the ports, as words, one branch (a flow's creation asks).
    static_assert(offsetof(FlowKey, proto) == 36 && offsetof(FlowKey, vlan) == 37 && offsetof(FlowKey, zone) == 40);
    const auto* b = reinterpret_cast<const uint8_t*>(&k);
    uint64_t lo_zeros, hi_zeros;
    uint32_t lo_prefix, hi_prefix, proto_vlan;
    uint16_t zone;
    std::memcpy(&lo_zeros, b, 8);
    std::memcpy(&lo_prefix, b + 8, 4);
    std::memcpy(&hi_zeros, b + 16, 8);
    std::memcpy(&hi_prefix, b + 24, 4);
    std::memcpy(&proto_vlan, b + 36, 4);
    std::memcpy(&zone, b + 40, 2);
    constexpr uint32_t kMapped = detail::lite_bytes(0, 0, 0xff, 0xff);
    return (lo_zeros | hi_zeros | (lo_prefix ^ kMapped) | (hi_prefix ^ kMapped) |
            (proto_vlan ^ detail::lite_bytes(wire::kProtoTcp, 0, 0, 0)) | zone) == 0;
}

// The TcpLite of a parsed Packet the lane can carry (TCP of kind kLiteKindAck, IPv4 key, no VLAN IDs,
// zone 0, no SACK block), false for any other: what parse_tcp_lite() gives for the frame parse() gave p
// for, whatever its options (tests and fuzz drivers feed the lane from Packets with it).
inline bool lite_of(const Packet& p, TcpLite& t) noexcept
{
    if (p.verdict != Verdict::tcp || !key_is_ipv4(p.key) || p.sack != p.ack || p.key.vlan[0] || p.key.vlan[1] ||
        p.key.vlan[2] || p.key.zone != 0 || p.ip_len > 0xffff || (p.tcp_flags & kLiteKind) != kLiteKindAck)
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
    t.src_lo_bit = p.src_is_lo ? kLiteSrcIsLo : 0;
    return true;
}

} // namespace flowcop::packet
