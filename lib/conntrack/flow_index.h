// SPDX-License-Identifier: BSD-3-Clause
// FlowIndex: the flow table's map from a key's hash to record positions, over caller-provided buckets.
//
// Layout. Buckets of one cache line: kBucketSlots 16-bit signatures, then as many 32-bit record
// positions. A key's hash picks its home bucket (the high bits, by multiply-shift, so any bucket count
// works) and its signature (the low 16 bits with the top one set: 0 marks an empty slot; one or-ed bit
// where a test for 0 and a conditional move cost three instructions a packet, for a 2^-15 rather than
// 2^-16 chance that another key's signature matches a slot).
// A lookup compares the signatures of a bucket in two SSE2 compares, and only for a matching signature
// reads the record, which holds the key: one bucket line, then the record. The index never reads keys
// itself: find() asks the caller whether a candidate position holds the key.
//
// Collisions: bounded linear probing over whole buckets. A key lives in its home bucket or in one of
// the next kMaxProbe - 1 (wrapping at the end; fewer when there are fewer buckets). Each bucket counts, in `overflow`, the keys whose home
// is at or before it and that live after it, so a lookup stops at the first bucket whose count is 0
// (nearly always the home bucket) and a delete needs no tombstones: it decrements the counts its key
// had incremented. An insert that finds its kMaxProbe buckets full fails, and the caller decides (the
// flow table evicts in the home bucket or refuses: flow_table.h). Sized at kKeysPerBucket keys per
// 10-slot bucket at capacity (a load of 0.5), random keys rarely leave their home bucket and never come
// near the probe bound. Simulated for 10^6 and 10^7 random keys: at 0.5, 0.45% of keys live past their
// home bucket and the farthest 3-4 buckets past it; at 0.6, 1.4% and 5-11; at 0.7, 3.2% and 10-15; at
// 0.8, 6.4% and 27-36, beyond the bound (test_flow_index.cpp prints the same figures for the real index).
// The index costs 64 / 5 = 12.8 bytes per flow of capacity; the records cost 160.
//
// Threading: single-threaded (the owning lcore). No call allocates, locks, throws or makes a syscall;
// every walk is bounded by kMaxProbe buckets. The buckets are the caller's memory (attach()).
#pragma once

#include <conntrack/position.h>

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace flowcop::conntrack {

inline constexpr unsigned kBucketSlots = 10;
// Buckets an insert may walk from the home bucket: the bound on every probe sequence.
inline constexpr unsigned kMaxProbe = 16;
// Keys per bucket at full capacity (5 of 10 slots: a load of 0.5; see above).
inline constexpr unsigned kKeysPerBucket = 5;
struct alignas(64) Bucket {
    uint16_t sig[kBucketSlots]; // 0: the slot is empty
    uint16_t overflow;          // keys homed at or before this bucket that live after it
    uint16_t unused;
    uint32_t pos[kBucketSlots]; // record position of each occupied slot
};
static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");

// A signature's bit that is always set, so none is 0 (an empty slot).
inline constexpr uint16_t kSigSet = 0x8000;

// Where a key lives in the index: its home bucket and its signature (never 0).
struct Probe {
    uint32_t bucket;
    uint16_t sig;
};

class FlowIndex {
public:
    // Buckets for `capacity` keys.
    static uint32_t buckets_for(uint32_t capacity) noexcept
    {
        return capacity / kKeysPerBucket + (capacity % kKeysPerBucket != 0 ? 1 : 0);
    }

    // Uses (and empties) n >= 1 buckets at `buckets`, 64-byte aligned, which outlive the index.
    void attach(Bucket* buckets, uint32_t n) noexcept;

    Probe probe(uint32_t hash) const noexcept
    {
        return {uint32_t((uint64_t(hash) * _n) >> 32), uint16_t(hash | kSigSet)};
    }
    const Bucket* home(const Probe& p) const noexcept { return &_buckets[p.bucket]; }

    // The first position in the home bucket whose signature matches (kNoPosition if none): a candidate
    // the caller verifies against the record's key. Reads one bucket line.
    uint32_t first_candidate(const Probe& p) const noexcept
    {
        const Bucket& b = _buckets[p.bucket];
        const uint32_t m = matches(b, p.sig);
        return m != 0 ? b.pos[slot_of(m)] : kNoPosition;
    }
    // The same from the home bucket b (home(p), kept by the caller) as an element of `base` (base + the
    // position), or `none` when no signature matches: a matching slot always holds a position, so there is
    // one test. Slots 0..7 first, in one compare: an insert takes a bucket's first free slot, so at the
    // design load (5 keys of 10) a key is nearly always there; the whole bucket only when none matches.
    template <typename T>
    static T* first_candidate(const Bucket& b, uint16_t sig, T* base, T* none) noexcept
    {
        if (const uint32_t m8 = matches_first8(b, sig); m8 != 0) [[likely]]
            return base + b.pos[unsigned(__builtin_ctz(m8)) >> 1];
        const uint32_t m = matches(b, sig);
        return m != 0 ? base + b.pos[slot_of(m)] : none;
    }
    // The Probe whose home(p) is b and signature sig.
    Probe probe_of(const Bucket* b, uint16_t sig) const noexcept { return {uint32_t(b - _buckets), sig}; }

    // The position whose record holds the key (is_key(position) says), or kNoPosition.
    template <typename IsKey>
    uint32_t find(const Probe& p, IsKey&& is_key) const noexcept
    {
        uint32_t b = p.bucket;
        for (unsigned k = 0; k < _max_probe; ++k) {
            const Bucket& bk = _buckets[b];
            for (uint32_t m = matches(bk, p.sig); m != 0; m &= m - 1)
                if (const uint32_t pos = bk.pos[slot_of(m)]; is_key(pos))
                    return pos;
            if (bk.overflow == 0)
                return kNoPosition;
            b = next(b);
        }
        return kNoPosition;
    }

    // Adds a key (not present: the caller looked it up) at `pos`. False, changing nothing, when the
    // kMaxProbe buckets from its home are all full.
    bool insert(const Probe& p, uint32_t pos) noexcept;
    // Removes the entry (p, pos). False if there is none (a caller bug; nothing changes).
    bool erase(const Probe& p, uint32_t pos) noexcept;

    uint32_t buckets() const noexcept { return _n; }
    const Bucket& bucket(uint32_t b) const noexcept { return _buckets[b]; }
    uint32_t next(uint32_t b) const noexcept { return b + 1 == _n ? 0 : b + 1; }

    // Occupied slots of a bucket: bit i set for slot i.
    static uint32_t occupied(const Bucket& b) noexcept { return ~matches(b, 0) & kSlotBits; }

    // "" when every bucket's overflow count equals the keys that pass it (tests, fuzzing: O(buckets));
    // home_of(position) gives the home bucket of the key at a position.
    template <typename HomeOf>
    const char* check(HomeOf&& home_of) const noexcept;

private:
    static unsigned slot_of(uint32_t m) noexcept { return unsigned(__builtin_ctz(m)); }

    static constexpr uint32_t kSlotBits = (1u << kBucketSlots) - 1;

    // Matching slots among 0..7: bits 2i and 2i + 1 set where sig[i] == sig.
    static uint32_t matches_first8(const Bucket& b, uint16_t sig) noexcept
    {
#if defined(__SSE2__)
        const __m128i lo = _mm_load_si128(reinterpret_cast<const __m128i*>(b.sig));
        return uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi16(lo, _mm_set1_epi16(short(sig)))));
#else
        uint32_t m = 0;
        for (unsigned i = 0; i < 8; ++i)
            if (b.sig[i] == sig)
                m |= 3u << (2 * i);
        return m;
#endif
    }
    // Matching slots of a bucket: bit i set where sig[i] == sig.
    static uint32_t matches(const Bucket& b, uint16_t sig) noexcept
    {
#if defined(__SSE2__)
        // Both compares' words narrowed to bytes in one vector (-1 stays -1), so one mask holds a bit per
        // slot: 4 instructions fewer than a mask per compare merged, a lookup's bucket scan.
        const __m128i s = _mm_set1_epi16(short(sig));
        const __m128i lo = _mm_load_si128(reinterpret_cast<const __m128i*>(b.sig));      // slots 0..7
        const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.sig + 8)); // 8, 9 and the counts
        const __m128i both = _mm_packs_epi16(_mm_cmpeq_epi16(lo, s), _mm_cmpeq_epi16(hi, s));
        return uint32_t(_mm_movemask_epi8(both)) & kSlotBits;
#else
        uint32_t m = 0;
        for (unsigned i = 0; i < kBucketSlots; ++i)
            if (b.sig[i] == sig)
                m |= 1u << i;
        return m;
#endif
    }

    Bucket* _buckets = nullptr;
    uint32_t _n = 0;
    uint32_t _max_probe = 0; // min(kMaxProbe, _n): a probe never wraps back to its home
};

template <typename HomeOf>
const char* FlowIndex::check(HomeOf&& home_of) const noexcept
{
    // Recount: every key living k buckets past its home passes its home and the k - 1 after it.
    for (uint32_t b = 0; b < _n; ++b) {
        uint32_t passing = 0;
        // A key passes b when it lives d buckets after b (1 <= d < the probe bound) and at least d
        // buckets after its own home.
        uint32_t at = b;
        for (unsigned d = 1; d < _max_probe; ++d) {
            at = next(at);
            const Bucket& bk = _buckets[at];
            for (unsigned i = 0; i < kBucketSlots; ++i) {
                if (bk.sig[i] == 0)
                    continue;
                const uint32_t h = home_of(bk.pos[i]);
                if (h >= _n)
                    return "a key's home bucket is out of range";
                const uint32_t from_home = at >= h ? at - h : at + _n - h;
                if (from_home >= _max_probe)
                    return "a key lives further from its home than the probe bound";
                if (from_home >= d)
                    ++passing;
            }
        }
        if (passing != _buckets[b].overflow)
            return "a bucket's overflow count is not the number of keys that probed past it";
    }
    return "";
}

} // namespace flowcop::conntrack
