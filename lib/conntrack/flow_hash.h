// SPDX-License-Identifier: BSD-3-Clause
// The flow table's hash: CRC32-C of a FlowKey's 42 bytes (the 2-byte zone and five 8-byte words, two
// of them regrouped), one dependent chain of six crc32 instructions. Pure, thread-safe, allocation-free, inline (the
// packet path hashes a whole burst itself). The key is read with memcpy loads, so any alignment is
// fine (a FlowKey is 2-byte aligned; x86 turns the copies into plain unaligned moves).
//
// Why CRC32-C: one instruction per 8 bytes on every x86-64 DPDK runs on (SSE4.2, which DPDK's own
// build flags require), and flow keys are not chosen by an attacker who can see the table's layout:
// a flood of colliding keys is still bounded by the table's probing limit (flow_index.h) and early
// drop. Without SSE4.2 (another architecture) the same values come from DPDK's software CRC.
#pragma once

#include <packet/flow_key.h>
#include <packet/tcp_lite.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#include <smmintrin.h>
#else
#include <rte_hash_crc.h>
#endif

namespace flowcop::conntrack {

namespace detail {

inline uint64_t key_word(const packet::FlowKey& key, size_t i) noexcept
{
    uint64_t word;
    std::memcpy(&word, reinterpret_cast<const uint8_t*>(&key) + 8 * i, sizeof word);
    return word;
}

// One step of the CRC32-C chain, kept in 64 bits: the instruction's result is already zero-extended, so
// a chain needs no 32-bit truncation between steps (3 instructions a steady packet fewer than a uint32_t
// chain, profile_handle.py).
inline uint64_t crc_word(uint64_t word, uint64_t h) noexcept
{
#if defined(__SSE4_2__)
    return _mm_crc32_u64(h, word);
#else
    return rte_hash_crc_8byte(word, uint32_t(h));
#endif
}

inline uint64_t crc_quad(uint32_t quad, uint64_t h) noexcept
{
#if defined(__SSE4_2__)
    return _mm_crc32_u32(uint32_t(h), quad);
#else
    return rte_hash_crc_4byte(quad, uint32_t(h));
#endif
}

inline uint32_t key_quad(const packet::FlowKey& key, size_t offset) noexcept
{
    uint32_t quad;
    std::memcpy(&quad, reinterpret_cast<const uint8_t*>(&key) + offset, sizeof quad);
    return quad;
}

inline uint32_t crc_half(uint16_t half, uint32_t h) noexcept
{
#if defined(__SSE4_2__)
    return _mm_crc32_u16(h, half);
#else
    return rte_hash_crc_2byte(half, h);
#endif
}

} // namespace detail

// The chain's order puts every byte an IPv4 key from the steady lane has constant first (the zone, the
// IPv4-mapped addresses' first 8 bytes each, and their next 4: 00 00 ff ff), so the lane starts from a
// constant state (lite_hash_base) and runs two crc32 per segment: the two addresses as one 8-byte word,
// then the ports and protocol. Every key byte enters the chain once: words 1 and 3 regrouped as their
// low halves, then their high halves (CRC-32C over an 8-byte word is its two 4-byte halves, low first).
// Regrouped in registers (one unpack), not as four 4-byte steps from the key: the four steps were fewer
// instructions but a longer chain before the bucket's prefetch, and ran the churn 0.91x (tests/benchmarks.md).
inline uint32_t flow_hash(const packet::FlowKey& key, uint32_t seed = 0) noexcept
{
    static_assert(sizeof(packet::FlowKey) == 42, "flow_hash hashes five 8-byte words and the 2-byte zone");
    uint64_t h = detail::crc_half(key.zone, seed);
    h = detail::crc_word(detail::key_word(key, 0), h);
    h = detail::crc_word(detail::key_word(key, 2), h);
#if defined(__SSE4_2__)
    const __m128i halves = _mm_unpacklo_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint8_t*>(&key) + 8)),
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint8_t*>(&key) + 24)));
    h = detail::crc_word(uint64_t(_mm_cvtsi128_si64(halves)), h);
    h = detail::crc_word(uint64_t(_mm_extract_epi64(halves, 1)), h);
#else
    const uint64_t w1 = detail::key_word(key, 1), w3 = detail::key_word(key, 3);
    h = detail::crc_word((w1 & 0xffffffffu) | w3 << 32, h);
    h = detail::crc_word(w1 >> 32 | (w3 & ~uint64_t{0xffffffffu}), h);
#endif
    return uint32_t(detail::crc_word(detail::key_word(key, 4), h));
}

// The steady lane (packet/tcp_lite.h): the words of packet::lite_key(t) that are not constant, from the
// segment's own fields (little-endian: the addresses are TcpLite's first 8 bytes as they stand, so the
// lane loads them as one word), so the lane hashes and compares without a FlowKey.
struct LiteWords {
    uint64_t addrs; // key bytes 12..15 (addr_lo's last 4) as the low half, 28..31 (addr_hi's) as the high
    uint64_t ports; // word 4 without its constant part: port_lo, port_hi (the protocol's byte and the VLAN IDs 0)
};

// Word 4's constant part in a lane key, as an 8-byte load of key bytes 32..39 holds it: the protocol
// (TCP, byte 36) and no VLAN IDs, or-ed into LiteWords::ports.
inline constexpr uint64_t kLiteWord4Const = uint64_t{packet::wire::kProtoTcp}
                                            << (std::endian::native == std::endian::little ? 32 : 24);

inline LiteWords lite_words(const packet::TcpLite& t) noexcept
{
    if constexpr (std::endian::native == std::endian::little) {
        uint64_t addrs;
        std::memcpy(&addrs, &t, sizeof addrs); // addr_lo, then addr_hi (offsets asserted in tcp_lite.h)
        return {addrs, uint64_t{t.port_lo} | uint64_t{t.port_hi} << 16};
    } else {
        const packet::FlowKey k = packet::lite_key(t);
        return {detail::key_quad(k, 12) | uint64_t{detail::key_quad(k, 28)} << 32,
                detail::key_word(k, 4) & ~kLiteWord4Const};
    }
}

namespace detail {
// The state s with crc_word(0, crc_word(0, s)) == target: CRC-32C without inversions (the instruction's,
// and DPDK's software one) is linear over GF(2) in state and data together, and two steps of a zero word
// are an invertible linear map of the 32-bit state (multiplication by x^128 modulo the polynomial), so its
// columns are solved by Gaussian elimination. Once per table, never per packet.
inline uint32_t crc_state_two_zero_words_before(uint32_t target) noexcept
{
    // Row i: the image of the basis state 1 << i, with the basis state itself beside it (bits 32..63).
    uint64_t rows[32];
    for (unsigned i = 0; i < 32; ++i)
        rows[i] = uint64_t(uint32_t(crc_word(0, crc_word(0, uint64_t{1} << i)))) | uint64_t{1} << (32 + i);
    // Reduce to rows whose image is one bit each: then the states whose images make `target` sum to it.
    for (unsigned bit = 0; bit < 32; ++bit) {
        unsigned pivot = bit;
        while (pivot < 32 && !(rows[pivot] >> bit & 1))
            ++pivot;
        if (pivot == 32) // not invertible: cannot happen for a CRC polynomial with a constant term
            return 0;
        std::swap(rows[bit], rows[pivot]);
        for (unsigned r = 0; r < 32; ++r)
            if (r != bit && (rows[r] >> bit & 1))
                rows[r] ^= rows[bit];
    }
    uint32_t state = 0;
    for (unsigned bit = 0; bit < 32; ++bit)
        if (target >> bit & 1)
            state ^= uint32_t(rows[bit] >> 32);
    return state;
}
} // namespace detail

// The chain's state after the constant part of every lane key (zone 0, words 0 and 2 zero, the mapped
// prefixes), with word 4's constant part (kLiteWord4Const, the protocol) folded in as well: by the
// chain's linearity, crc(crc(b ^ d, addrs), ports) == crc(crc(b, addrs), ports | kLiteWord4Const) for
// the d below, so a segment's second step takes its ports as they are (one `or` a segment fewer).
// Computed once per table; each segment is hashed from it.
inline uint64_t lite_hash_base(uint32_t seed = 0) noexcept
{
    constexpr uint32_t kMappedPrefix = 0xffff0000u; // bytes 8..11 of an IPv4-mapped address: 00 00 ff ff
    uint64_t h = detail::crc_half(0, seed);
    h = detail::crc_word(0, h);
    h = detail::crc_word(0, h);
    h = detail::crc_quad(kMappedPrefix, h);
    h = detail::crc_quad(kMappedPrefix, h);
    return h ^ detail::crc_state_two_zero_words_before(uint32_t(detail::crc_word(kLiteWord4Const, 0)));
}

// flow_hash(packet::lite_key(t), seed) (tests/conntrack checks it), from the words and lite_hash_base(seed).
inline uint32_t flow_hash(const LiteWords& w, uint64_t base) noexcept
{
    return uint32_t(detail::crc_word(w.ports, detail::crc_word(w.addrs, base)));
}

// Equality of two keys over all 42 bytes (memcmp semantics), without a branch per word.
inline bool same_key(const packet::FlowKey& a, const packet::FlowKey& b) noexcept
{
    uint64_t diff = 0;
    for (size_t i = 0; i < 5; ++i)
        diff |= detail::key_word(a, i) ^ detail::key_word(b, i);
    return (diff | uint64_t(a.zone ^ b.zone)) == 0;
}

// same_key(a, packet::lite_key(t)) from t's words (any byte order: the key read as 4-byte pieces).
inline bool same_key(const packet::FlowKey& a, const LiteWords& w) noexcept
{
    constexpr uint32_t kMapped = std::bit_cast<uint32_t>(std::array<uint8_t, 4>{0, 0, 0xff, 0xff});
    const uint64_t diff = detail::key_word(a, 0) | detail::key_word(a, 2) | (detail::key_quad(a, 8) ^ kMapped) |
                          (detail::key_quad(a, 24) ^ kMapped) | (detail::key_quad(a, 12) ^ uint32_t(w.addrs)) |
                          (detail::key_quad(a, 28) ^ uint32_t(w.addrs >> 32)) |
                          (detail::key_word(a, 4) ^ (w.ports | kLiteWord4Const));
    return (diff | a.zone) == 0;
}

} // namespace flowcop::conntrack
