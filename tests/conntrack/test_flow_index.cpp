// SPDX-License-Identifier: BSD-3-Clause
// FlowIndex: lookups, inserts and deletes against a model, the overflow counts, the probe bound, and how
// far from home keys live at the table's design load.
#include <conntrack/flow_index.h>

#include "splitmix64.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <unordered_map>
#include <vector>

using namespace flowcop;
using conntrack::Bucket;
using conntrack::FlowIndex;
using conntrack::kNoPosition;
using conntrack::Probe;

namespace {

// An index over owned buckets, with the "record" of each position holding a 32-bit hash as its key.
struct Fixture {
    explicit Fixture(uint32_t capacity)
        : n(FlowIndex::buckets_for(capacity)), buckets(new (std::align_val_t(64)) Bucket[n]),
          hash_at(std::max<size_t>(capacity, size_t(n) * conntrack::kBucketSlots), 0)
    {
        index.attach(buckets.get(), n);
    }
    uint32_t find(uint32_t hash) const
    {
        return index.find(index.probe(hash), [&](uint32_t pos) { return hash_at[pos] == hash; });
    }
    bool insert(uint32_t hash, uint32_t pos)
    {
        if (!index.insert(index.probe(hash), pos))
            return false;
        hash_at[pos] = hash;
        return true;
    }
    bool erase(uint32_t pos) { return index.erase(index.probe(hash_at[pos]), pos); }
    std::string check() const
    {
        return index.check([&](uint32_t pos) { return index.probe(hash_at[pos]).bucket; });
    }
    // Buckets between each key's home and where it lives (0: in its home bucket).
    std::vector<uint32_t> distances() const
    {
        std::vector<uint32_t> d;
        for (uint32_t b = 0; b < n; ++b)
            for (uint32_t m = FlowIndex::occupied(index.bucket(b)); m != 0; m &= m - 1) {
                const uint32_t home = index.probe(hash_at[index.bucket(b).pos[__builtin_ctz(m)]]).bucket;
                d.push_back(b >= home ? b - home : b + n - home);
            }
        return d;
    }

    struct Free {
        void operator()(Bucket* b) const { ::operator delete[](b, std::align_val_t(64)); }
    };
    uint32_t n;
    std::unique_ptr<Bucket[], Free> buckets;
    std::vector<uint32_t> hash_at;
    FlowIndex index;
};

// A hash whose home bucket is `bucket` (of n <= 2^15) and whose low 16 bits are `sig`: home is
// (h * n) >> 32, so the bucket's hashes start at ceil(bucket * 2^32 / n) and span at least 2^17.
uint32_t hash_in(uint32_t bucket, uint32_t n, uint16_t sig)
{
    const uint64_t lo = ((uint64_t(bucket) << 32) + n - 1) / n;
    uint64_t h = (lo & ~uint64_t(0xffff)) | sig;
    if (h < lo)
        h += 0x10000;
    return uint32_t(h);
}

} // namespace

TEST_CASE("The index finds what was inserted and nothing else, against a model", "[conntrack][index]")
{
    constexpr uint32_t kCap = 4096;
    Fixture f(kCap);
    test::SplitMix64 rng(7);
    std::unordered_map<uint32_t, uint32_t> model; // hash -> position
    std::vector<uint32_t> free_pos;
    for (uint32_t p = 0; p < kCap; ++p)
        free_pos.push_back(kCap - 1 - p);
    // One assertion per property, not per step (Catch2's per-assertion cost made this loop take a
    // minute on a loaded machine): the first step that breaks one is reported.
    int bad_step = -1;
    const char* broken = "";
    for (int step = 0; step < 200000 && bad_step < 0; ++step) {
        const uint32_t h = uint32_t(rng() % 6000) * 2654435761u; // a key space larger than the capacity
        const auto it = model.find(h);
        if (it != model.end()) {
            if (f.find(h) != it->second)
                bad_step = step, broken = "a stored key was not found at its position";
            if (rng() % 2 == 0) {
                if (!f.erase(it->second))
                    bad_step = step, broken = "a stored key could not be erased";
                free_pos.push_back(it->second);
                model.erase(it);
            }
        } else {
            if (f.find(h) != kNoPosition)
                bad_step = step, broken = "an absent key was found";
            if (!free_pos.empty()) {
                const uint32_t pos = free_pos.back();
                // below capacity at the design load an insert never fails
                if (!f.insert(h, pos))
                    bad_step = step, broken = "an insert below capacity failed";
                free_pos.pop_back();
                model.emplace(h, pos);
            }
        }
        if (step % 20000 == 0 && !f.check().empty())
            bad_step = step, broken = "the index's invariants broke";
    }
    INFO("step " << bad_step << ": " << broken);
    REQUIRE(bad_step == -1);
    CHECK(f.check().empty());
    for (const auto& [h, pos] : model)
        CHECK(f.find(h) == pos);
}

TEST_CASE("A full index holds its whole capacity and keeps keys near home", "[conntrack][index]")
{
    for (const uint32_t cap : {8u, 1000u, 1u << 16, 1000003u}) {
        Fixture f(cap);
        test::SplitMix64 rng(cap);
        uint32_t refused = 0;
        for (uint32_t pos = 0; pos < cap; ++pos)
            refused += f.insert(uint32_t(rng()), pos) ? 0 : 1;
        REQUIRE(refused == 0);
        CHECK(f.check().empty());
        const std::vector<uint32_t> d = f.distances();
        size_t away = 0, far = 0;
        uint32_t longest = 0;
        for (const uint32_t x : d) {
            away += x > 0;
            far += x > 1;
            longest = std::max(longest, x);
        }
        std::printf("# index at capacity %u (%u buckets): %.2f%% of keys past their home bucket, %.3f%% more "
                    "than one bucket past, longest %u\n",
                    cap, f.n, 100.0 * double(away) / double(cap), 100.0 * double(far) / double(cap), longest);
        CHECK(longest < conntrack::kMaxProbe);
        if (cap >= 1000)
            CHECK(double(away) / double(cap) < 0.10); // the design load keeps lookups to one bucket
    }
}

TEST_CASE("Keys that collide fill their probe window, then inserts fail and change nothing", "[conntrack][index]")
{
    Fixture f(1u << 12); // 820 buckets
    const uint32_t home = 100;
    uint32_t pos = 0;
    for (; pos < conntrack::kMaxProbe * conntrack::kBucketSlots; ++pos)
        REQUIRE(f.insert(hash_in(home, f.n, uint16_t(1 + pos)), pos));
    CHECK(f.index.bucket(home).overflow == (conntrack::kMaxProbe - 1) * conntrack::kBucketSlots);
    CHECK(f.check().empty());
    // The window (home .. home + 15) is full: the next colliding key is refused, nothing moves.
    CHECK_FALSE(f.insert(hash_in(home, f.n, 0x7777), pos));
    CHECK(f.check().empty());
    // A key homed just past the window is unaffected.
    CHECK(f.insert(hash_in(home + conntrack::kMaxProbe, f.n, 5), pos));
    // Every colliding key is still found (the last ones 15 buckets from home), and erasing one from the
    // home bucket makes room again.
    for (uint32_t p = 0; p < conntrack::kMaxProbe * conntrack::kBucketSlots; ++p)
        REQUIRE(f.find(hash_in(home, f.n, uint16_t(1 + p))) == p);
    REQUIRE(f.erase(3));
    CHECK(f.insert(hash_in(home, f.n, 0x7777), 3));
    CHECK(f.find(hash_in(home, f.n, 0x7777)) == 3);
    CHECK(f.check().empty());
}

// first_candidate(home bucket, signature, base, none), the steady lane's (slots 0..7 in one compare, then the whole bucket):
// the first matching slot's element wherever it is, none when no slot matches.
TEST_CASE("A bucket's first candidate is found in every slot, and none where no signature matches",
          "[conntrack][index]")
{
    Fixture f(1u << 12);
    const uint32_t home = 7;
    std::vector<int> elements(f.hash_at.size());
    for (uint32_t slot = 0; slot < conntrack::kBucketSlots; ++slot)
        REQUIRE(f.insert(hash_in(home, f.n, uint16_t(100 + slot)), 1000 + slot));
    for (uint32_t slot = 0; slot < conntrack::kBucketSlots; ++slot) {
        CAPTURE(slot);
        REQUIRE(f.index.bucket(home).sig[slot] == (100 + slot | conntrack::kSigSet)); // first free slot first
        const Probe p = f.index.probe(hash_in(home, f.n, uint16_t(100 + slot)));
        CHECK(FlowIndex::first_candidate(*f.index.home(p), p.sig, elements.data(), static_cast<int*>(nullptr)) ==
              elements.data() + 1000 + slot);
        CHECK(f.index.first_candidate(p) == 1000 + slot);
    }
    const Probe absent = f.index.probe(hash_in(home, f.n, 99));
    CHECK(FlowIndex::first_candidate(*f.index.home(absent), absent.sig, elements.data(), static_cast<int*>(nullptr)) ==
          nullptr);
    CHECK(f.index.probe_of(f.index.home(absent), absent.sig).bucket == absent.bucket);
    CHECK(f.index.first_candidate(absent) == kNoPosition);
}

TEST_CASE("Equal signatures in one bucket are told apart by the caller's key check", "[conntrack][index]")
{
    Fixture f(64);
    // Three keys with one home and one signature, but different hashes: the index offers each position,
    // the caller's predicate picks.
    const uint32_t h0 = hash_in(2, f.n, 9);
    REQUIRE(f.index.probe(h0).bucket == 2);
    REQUIRE(f.insert(h0, 0));
    REQUIRE(f.index.probe(h0 + 0x10000).bucket == 2); // same low bits: the same signature
    REQUIRE(f.insert(h0 + 0x10000, 1));
    CHECK(f.find(h0) == 0);
    CHECK(f.find(h0 + 0x10000) == 1);
    // Signature 0 marks an empty slot: a hash whose low 16 bits are 0 still gets a non-zero signature,
    // and one whose low 16 bits differ only in the top one shares it.
    const uint32_t z = hash_in(3, f.n, 0);
    CHECK(f.index.probe(z).sig == conntrack::kSigSet);
    CHECK(f.index.probe(hash_in(3, f.n, conntrack::kSigSet)).sig == conntrack::kSigSet);
    REQUIRE(f.insert(z, 2));
    CHECK(f.find(z) == 2);
    CHECK(f.erase(2));
    CHECK(f.find(z) == kNoPosition);
    CHECK_FALSE(f.erase(2)); // already gone: nothing changes
    CHECK(f.check().empty());
}

TEST_CASE("A bucket count below the probe bound never probes back into the home bucket", "[conntrack][index]")
{
    Fixture f(conntrack::kKeysPerBucket); // one bucket of 10 slots
    REQUIRE(f.n == 1);
    for (uint32_t p = 0; p < conntrack::kBucketSlots; ++p)
        REQUIRE(f.insert(uint32_t(p * 977 + 1), p));
    CHECK_FALSE(f.insert(12345, 0));
    CHECK(f.index.bucket(0).overflow == 0);
    CHECK(f.check().empty());
}
