// SPDX-License-Identifier: BSD-3-Clause
// The flow table's hash: CRC32-C of a FlowKey's 42 bytes (five 8-byte words, then the 2-byte zone),
// one dependent chain of six crc32 instructions. Pure, thread-safe, allocation-free, inline (the
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

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
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

inline uint32_t crc_half(uint16_t half, uint32_t h) noexcept
{
#if defined(__SSE4_2__)
    return _mm_crc32_u16(h, half);
#else
    return rte_hash_crc_2byte(half, h);
#endif
}

} // namespace detail

inline uint32_t flow_hash(const packet::FlowKey& key, uint32_t seed = 0) noexcept
{
    static_assert(sizeof(packet::FlowKey) == 42, "flow_hash hashes five 8-byte words and the 2-byte zone");
    uint64_t h = seed;
    for (size_t i = 0; i < 5; ++i)
        h = detail::crc_word(detail::key_word(key, i), h);
    return detail::crc_half(key.zone, uint32_t(h));
}

// The steady lane (packet/tcp_lite.h): the 8-byte words of packet::lite_key(t) that are not constant
// (words 0 and 2, the IPv4-mapped addresses' first 8 bytes, are 0; so are the zone and the VLAN IDs),
// built in registers from the segment's own fields, so the lane hashes and compares without a FlowKey.
struct LiteWords {
    uint64_t lo, hi, ports; // words 1, 3 and 4 of the key
};

inline LiteWords lite_words(const packet::TcpLite& t) noexcept
{
    if constexpr (std::endian::native == std::endian::little) {
        constexpr uint64_t kMapped = 0xffff0000u; // bytes 8..11 of an IPv4-mapped address: 00 00 ff ff
        constexpr uint64_t kTcp = 6;
        return {kMapped | uint64_t{t.addr_lo} << 32, kMapped | uint64_t{t.addr_hi} << 32,
                uint64_t{t.port_lo} | uint64_t{t.port_hi} << 16 | kTcp << 32};
    } else {
        const packet::FlowKey k = packet::lite_key(t);
        return {detail::key_word(k, 1), detail::key_word(k, 3), detail::key_word(k, 4)};
    }
}

// flow_hash(packet::lite_key(t)) (tests/conntrack checks it), from the words.
inline uint32_t flow_hash(const LiteWords& w, uint32_t seed = 0) noexcept
{
    uint64_t h = detail::crc_word(0, seed);
    h = detail::crc_word(w.lo, h);
    h = detail::crc_word(0, h);
    h = detail::crc_word(w.hi, h);
    h = detail::crc_word(w.ports, h);
    return detail::crc_half(0, uint32_t(h));
}

// Equality of two keys over all 42 bytes (memcmp semantics), without a branch per word.
inline bool same_key(const packet::FlowKey& a, const packet::FlowKey& b) noexcept
{
    uint64_t diff = 0;
    for (size_t i = 0; i < 5; ++i)
        diff |= detail::key_word(a, i) ^ detail::key_word(b, i);
    return (diff | uint64_t(a.zone ^ b.zone)) == 0;
}

// same_key(a, packet::lite_key(t)) from t's words.
inline bool same_key(const packet::FlowKey& a, const LiteWords& w) noexcept
{
    const uint64_t diff = detail::key_word(a, 0) | (detail::key_word(a, 1) ^ w.lo) | detail::key_word(a, 2) |
                          (detail::key_word(a, 3) ^ w.hi) | (detail::key_word(a, 4) ^ w.ports);
    return (diff | a.zone) == 0;
}

} // namespace flowcop::conntrack
