// SPDX-License-Identifier: BSD-3-Clause
// Which worker owns a flow under the handoff plan (port_plan.h): a software symmetric hash of the
// canonical flow key the parser produced (after --vlan-key, so it is the key the table uses), mapped
// onto the workers. Pure, inline, allocation-free; any thread.
//
// Symmetric because the key is: both directions of a flow parse to the same FlowKey bytes
// (flow_key.h), so they hash alike whichever port or queue they came from. A packet whose key has no
// ports (a fragment after the first, which the parser keys by addresses and protocol) hashes by what
// its key has: it reaches the owner of its address pair, which is the flow's owner only by chance
// (app/architecture.md, "Fragments").
//
// Why not the flow table's hash (CRC32-C of the same key, conntrack/flow_hash.h): workers pick their
// share of keys by this hash, and the table picks buckets by its own (the high bits, multiply-shift).
// Were they the same function, or CRCs that differ only in their seed (CRC is linear: crc(s1, k) ^
// crc(s2, k) depends on the length alone), each worker's keys would all share those bits and crowd a
// fraction of its table's buckets. A multiply-xorshift mix
// is unrelated to CRC. The seed is drawn at start (rte_rand), so where a flow lands differs between
// runs and a sender cannot aim every flow at one worker.
//
// Cost: one multiply per 8 key bytes and a final mix, a few ns (tests/benchmarks.md, "Handoff").
#pragma once

#include <packet/flow_key.h>
#include <packet/mix.h>

#include <cstdint>
#include <cstring>

namespace flowcop::app {

inline uint64_t owner_hash(const packet::FlowKey& key, uint64_t seed) noexcept
{
    constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull; // 2^64 / golden ratio, odd
    const auto* bytes = reinterpret_cast<const uint8_t*>(&key);
    uint64_t h = seed ^ (sizeof(packet::FlowKey) * kMul);
    size_t i = 0;
    for (; i + 8 <= sizeof(packet::FlowKey); i += 8) {
        uint64_t w;
        std::memcpy(&w, bytes + i, 8);
        h = (h ^ w) * kMul;
        h ^= h >> 29;
    }
    if (i < sizeof(packet::FlowKey)) { // a key whose size is not a multiple of 8 (a zone, ...)
        uint64_t w = 0;
        std::memcpy(&w, bytes + i, sizeof(packet::FlowKey) - i);
        h = (h ^ w) * kMul;
    }
    return packet::fmix64(h); // every key bit reaches the high bits owner() uses
}

// The owner among `workers` (> 0): the hash's high 32 bits scaled onto [0, workers) (Lemire's
// multiply-shift: no division, and as even as a modulo).
inline unsigned flow_owner(const packet::FlowKey& key, uint64_t seed, unsigned workers) noexcept
{
    return unsigned(((owner_hash(key, seed) >> 32) * workers) >> 32);
}

} // namespace flowcop::app
