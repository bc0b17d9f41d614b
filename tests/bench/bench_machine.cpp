// SPDX-License-Identifier: BSD-3-Clause
// The machine the other benchmarks ran on, in the two numbers their explanations use: the latency of
// one dependent load from memory (a linked-list walk over scattered elements, what a wheel bucket's
// list is), and the time per load when 8 such chains are walked side by side (what the wheel's lanes
// do), in EAL's memory (hugepages when EAL has them) and in anonymous memory with 4 KiB pages. The
// ratio of the two is the memory-level parallelism a pass can get; a pass whose time per fire is far
// above the second number is bound by something else (instructions). And ([machine-overlap], below)
// whether work done per packet hides under a flow table's DRAM lines, by the order the lines are asked
// for: the steady lane's question at 10^6 flows (issue 29).
#include "bench_util.h"

#include <rte_malloc.h>
#include <rte_prefetch.h>

#include <catch2/catch.hpp>

#include <nmmintrin.h>
#include <sys/mman.h>

#include <cstdio>
#include <vector>

using namespace flowcop::bench;

namespace {

constexpr size_t kBytes = size_t{1} << 30; // far above any cache here
constexpr size_t kLine = 64;
constexpr size_t kSteps = 1'000'000;

// Links every line of `mem` into `chains` random cycles; returns each chain's start.
std::vector<uint64_t> link(uint8_t* mem, size_t lines, unsigned chains)
{
    const std::vector<uint32_t> order = permutation(uint32_t(lines), kSeed);
    std::vector<uint64_t> starts;
    const size_t per = lines / chains;
    for (unsigned c = 0; c < chains; ++c) {
        for (size_t i = 0; i < per; ++i) {
            const uint64_t from = order[c * per + i], to = order[c * per + (i + 1) % per];
            *reinterpret_cast<uint64_t*>(mem + from * kLine) = to;
        }
        starts.push_back(order[c * per]);
    }
    return starts;
}

// ns per load, median of 5 walks of kSteps loads in all, over `chains` chains advanced in turn.
double walk(uint8_t* mem, unsigned chains)
{
    std::vector<uint64_t> at = link(mem, kBytes / kLine, chains);
    std::vector<double> t;
    for (int rep = 0; rep < 5; ++rep)
        t.push_back(time_ns([&] {
                        for (size_t s = 0; s < kSteps / chains; ++s)
                            for (unsigned c = 0; c < chains; ++c)
                                at[c] = *reinterpret_cast<const volatile uint64_t*>(mem + at[c] * kLine);
                    }) /
                    double(kSteps));
    return median(t);
}

void report(const char* what, uint8_t* mem)
{
    const double one = walk(mem, 1), eight = walk(mem, 8);
    std::printf("  %-44s 1 chain %6.1f ns per load   8 chains %6.1f ns per load   (%.1fx)\n", what, one, eight,
                one / eight);
    std::fflush(stdout);
}

} // namespace

TEST_CASE("machine: memory latency, one dependent chain against eight side by side", "[!benchmark][machine-latency]")
{
    provenance("machine: dependent-load latency over 1 GiB, 1 chain and 8 chains walked in turn");
    auto* eal = static_cast<uint8_t*>(rte_malloc("bench_latency", kBytes, 64));
    REQUIRE(eal != nullptr);
    report("EAL memory (this run's EAL pages)", eal);
    rte_free(eal);
    void* anon = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(anon != MAP_FAILED);
    madvise(anon, kBytes, MADV_NOHUGEPAGE);
    report("anonymous memory, 4 KiB pages", static_cast<uint8_t*>(anon));
    munmap(anon, kBytes);
    anon = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(anon != MAP_FAILED);
    madvise(anon, kBytes, MADV_HUGEPAGE);
    report("anonymous memory, transparent huge pages", static_cast<uint8_t*>(anon));
    std::printf("  (THP: %llu MiB of this process in huge pages)\n", (unsigned long long)thp_mib());
    munmap(anon, kBytes);
}

// --- Whether work hides under a flow table's DRAM lines (issue 29, tests/benchmarks.md "The floor at 10^6") ---
//
// The shape of the steady lane at 10^6 flows, and nothing of its logic: a stream of 2N packets over N
// flows in random order, in bursts of 64; per packet a 64-byte bucket (which holds the flow's record
// position), then both lines of its 128-byte record, read and written; between the read and the write
// W steps of a dependent crc32 chain stand for the lane's instructions. Four orders:
//   in turn     each burst's buckets asked for, then read (the records asked for), then each record
//               worked on: the lane's order (FlowTable::process_lite);
//   one ahead   the next burst's buckets in flight while this burst's records are worked on (the
//               held burst tried in the tenth session);
//   two ahead   the next burst's records and the buckets of the one after it in flight while this
//               burst's records are worked on (a three-stage pipeline across bursts);
//   spread      the same distances, but the asks spread over the work: before packet i of a burst is
//               worked on, packet i's bucket two bursts on and its record one burst on are asked for
//               (a sliding distance of 64 and 128 packets).
// With W = 0 an order's time is the lines' alone; with the table small enough for the cache (N = 10^4),
// the work's alone. An order that hides the work under the lines takes max(lines, work), one that does
// not, their sum.
namespace {

struct alignas(64) OverlapBucket {
    uint32_t pos[16];
};
struct alignas(128) OverlapRecord {
    uint64_t word[16];
};

class OverlapTable {
public:
    explicit OverlapTable(uint32_t flows)
        : _buckets(flows / 4 + 1), _bucket_mem(static_cast<OverlapBucket*>(
                                       rte_zmalloc("bench_overlap_b", _buckets * sizeof(OverlapBucket), 64))),
          _records(static_cast<OverlapRecord*>(rte_zmalloc("bench_overlap_r", flows * sizeof(OverlapRecord), 128)))
    {
        REQUIRE(_bucket_mem != nullptr);
        REQUIRE(_records != nullptr);
        Rng rng(kSeed);
        _home.resize(flows);
        for (uint32_t f = 0; f < flows; ++f) {
            _home[f] = uint32_t(rng.below(_buckets));
            _bucket_mem[_home[f]].pos[f % 16] = f;
        }
        const std::vector<uint32_t> order = permutation(2 * flows, kSeed + 1);
        _stream.resize(order.size());
        for (size_t i = 0; i < order.size(); ++i)
            _stream[i] = order[i] % flows;
    }
    ~OverlapTable()
    {
        rte_free(_bucket_mem);
        rte_free(_records);
    }
    OverlapTable(const OverlapTable&) = delete;
    OverlapTable& operator=(const OverlapTable&) = delete;

    // ns per packet for one pass of the stream in the given order (0 in turn, 1 one ahead, 2 two ahead).
    double pass(unsigned ahead, unsigned work)
    {
        const size_t bursts = _stream.size() / kBurst;
        const Timed t = timed([&] {
            ask_buckets(0);
            if (ahead >= 1 && bursts > 1)
                ask_buckets(1);
            if (ahead >= 1)
                ask_records(0);
            for (size_t b = 0; b < bursts; ++b) {
                if (ahead == 0) {
                    if (b != 0)
                        ask_buckets(b);
                    ask_records(b);
                } else if (ahead == 1) {
                    if (b + 1 < bursts && b != 0)
                        ask_buckets(b + 1);
                } else if (ahead == 2) {
                    if (b + 2 < bursts)
                        ask_buckets(b + 2);
                    if (b + 1 < bursts)
                        ask_records(b + 1);
                }
                if (ahead == 3) {
                    work_spread(b, bursts, work);
                    continue;
                }
                work_on(b, work);
                if (ahead == 1 && b + 1 < bursts)
                    ask_records(b + 1);
            }
        });
        return t.cpu_ns / double(bursts * kBurst);
    }
    uint64_t sum() const noexcept { return _sum; }

private:
    static constexpr size_t kBurst = 64;
    struct Slot {
        const OverlapBucket* home[kBurst];
        OverlapRecord* record[kBurst];
    };
    Slot& slot(size_t b) noexcept { return _slots[b % 3]; }
    void ask_bucket(size_t b, size_t i) noexcept
    {
        Slot& s = slot(b);
        s.home[i] = &_bucket_mem[_home[_stream[b * kBurst + i]]];
        rte_prefetch0(s.home[i]);
    }
    // Reads the bucket ask_bucket(b, i) asked for.
    void ask_record(size_t b, size_t i) noexcept
    {
        Slot& s = slot(b);
        OverlapRecord* const r = &_records[s.home[i]->pos[_stream[b * kBurst + i] % 16]];
        s.record[i] = r;
        rte_prefetch0(r);
        rte_prefetch0(reinterpret_cast<const uint8_t*>(r) + 64);
    }
    void work_one(OverlapRecord& r, unsigned work) noexcept
    {
        uint64_t x = r.word[1] + r.word[9];
        for (unsigned k = 0; k < work; ++k)
            x = _mm_crc32_u64(x, k);
        r.word[1] = x;
        r.word[9] = x + 1;
        _sum += x;
    }
    void ask_buckets(size_t b) noexcept
    {
        for (size_t i = 0; i < kBurst; ++i)
            ask_bucket(b, i);
    }
    void ask_records(size_t b) noexcept
    {
        for (size_t i = 0; i < kBurst; ++i)
            ask_record(b, i);
    }
    void work_on(size_t b, unsigned work) noexcept
    {
        for (size_t i = 0; i < kBurst; ++i)
            work_one(*slot(b).record[i], work);
    }
    // Packet i of burst b worked on after asking for packet i's bucket two bursts on and its record
    // lines one burst on: the asks spread over the work, a sliding distance of one and two bursts.
    void work_spread(size_t b, size_t bursts, unsigned work) noexcept
    {
        for (size_t i = 0; i < kBurst; ++i) {
            if (b + 2 < bursts)
                ask_bucket(b + 2, i);
            if (b + 1 < bursts)
                ask_record(b + 1, i);
            work_one(*slot(b).record[i], work);
        }
    }

    uint32_t _buckets;
    OverlapBucket* _bucket_mem;
    OverlapRecord* _records;
    std::vector<uint32_t> _home;
    std::vector<uint32_t> _stream;
    Slot _slots[3];
    uint64_t _sum = 0;
};

} // namespace

TEST_CASE("machine: does work hide under a flow table's DRAM lines when bursts are pipelined",
          "[!benchmark][machine-overlap]")
{
    provenance("machine: a steady lane's lines (bucket, two record lines) and W crc32 steps a packet, three orders");
    constexpr unsigned kRounds = 5;
    OverlapTable big(1'000'000), small(10'000);
    const char* names[] = {"in turn (the lane's)", "one ahead", "two ahead", "spread (1 and 2 bursts)"};
    for (const unsigned work : {0u, 10u, 30u}) {
        std::vector<double> t[4], alone;
        for (unsigned r = 0; r < kRounds; ++r) { // interleaved round by round
            for (unsigned ahead = 0; ahead < 4; ++ahead)
                t[ahead].push_back(big.pass(ahead, work));
            for (int k = 0; k < 100; ++k) // the small table's stream is 100 times shorter
                alone.push_back(small.pass(0, work));
        }
        std::printf("  W = %2u: the work alone (10^4 flows, in turn) %5.1f ns a packet\n", work, median(alone));
        for (unsigned ahead = 0; ahead < 4; ++ahead)
            std::printf("          10^6 flows, %-22s %5.1f ns a packet\n", names[ahead], median(t[ahead]));
        std::fflush(stdout);
    }
    CHECK((big.sum() | small.sum()) != 1); // keeps the work
}
