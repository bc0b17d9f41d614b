// SPDX-License-Identifier: BSD-3-Clause
// The machine the other benchmarks ran on, in the two numbers their explanations use: the latency of
// one dependent load from memory (a linked-list walk over scattered elements, what a wheel bucket's
// list is), and the time per load when 8 such chains are walked side by side (what the wheel's lanes
// do), in EAL's memory (hugepages when EAL has them) and in anonymous memory with 4 KiB pages. The
// ratio of the two is the memory-level parallelism a pass can get; a pass whose time per fire is far
// above the second number is bound by something else (instructions).
#include "bench_util.h"

#include <rte_malloc.h>

#include <catch2/catch.hpp>

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
