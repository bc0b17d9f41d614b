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

inline uint32_t crc_word(uint64_t word, uint32_t h) noexcept
{
#if defined(__SSE4_2__)
    return uint32_t(_mm_crc32_u64(h, word));
#else
    return rte_hash_crc_8byte(word, h);
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
    uint32_t h = seed;
    for (size_t i = 0; i < 5; ++i)
        h = detail::crc_word(detail::key_word(key, i), h);
    return detail::crc_half(key.zone, h);
}

// Equality of two keys over all 42 bytes (memcmp semantics), without a branch per word.
inline bool same_key(const packet::FlowKey& a, const packet::FlowKey& b) noexcept
{
    uint64_t diff = 0;
    for (size_t i = 0; i < 5; ++i)
        diff |= detail::key_word(a, i) ^ detail::key_word(b, i);
    return (diff | uint64_t(a.zone ^ b.zone)) == 0;
}

} // namespace flowcop::conntrack
