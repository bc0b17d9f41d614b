// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 2: the expiry cost through the real FlowTable. 10^4 .. 10^7 flows are open
// and 1000 come due per cop pass; a pass must visit the flows coming due (visits == due) and cost the
// same whatever the number open. The due flows are scattered at random through the table (records
// are created in table-position order and the due ones picked at random), every pass starts with
// cold caches, and a fired flow is replaced by a new one so exactly n flows are open at every pass.
// Budgets are unlimited here (a whole pass is the quantity measured); part 5 applies the defaults.
// Next to each row: one pass of the full-sweep baseline (design_sweep.h) over as many flows.
#include "design_sweep.h"
#include "flow_feed.h"
#include "table_util.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

using namespace flowcop;
using namespace flowcop::bench;

namespace {

constexpr uint32_t kDue = 1000;
constexpr int kPasses = 9;  // the 10^4 row can hold 9 x 1000 due flows among its 10^4
constexpr int kRepeats = 3; // fresh tables per size: 27 passes per row

struct Samples {
    std::vector<double> wall, cpu, visits, fired;
    double rss_mib = 0;
    size_t table_bytes = 0;
};

void run(uint32_t n, int rep, Samples& out)
{
    const uint64_t d = kT0; // pass p runs at d + p seconds
    // The due flows: kDue per pass, picked at random among the n flow numbers (so scattered through
    // the table's records); the others are background flows not due before d + kPasses + 1 s.
    std::vector<uint8_t> pass_of(n, 0);
    Rng rng(kSeed + n + uint64_t(rep) * 7919);
    for (int p = 1; p <= kPasses; ++p)
        for (uint32_t k = 0; k < kDue;) {
            const uint32_t i = uint32_t(rng.below(n));
            if (pass_of[i] == 0) {
                pass_of[i] = uint8_t(p);
                ++k;
            }
        }
    const uint64_t bg_lo = d - kSynTimeout + uint64_t(kPasses + 1) * kSec;
    const uint64_t bg_span = kSynTimeout - uint64_t(kPasses + 2) * kSec;
    auto time_of = [&](uint32_t i) -> uint64_t {
        if (i < n && pass_of[i] != 0) // deadline d + p - 0.5 s: due at tick d + p
            return d + uint64_t(pass_of[i]) * kSec - kSec / 2 - kSynTimeout;
        return bg_lo + Rng((kSeed + uint64_t(rep)) ^ i)() % bg_span;
    };

    const uint32_t capacity = n + n / 4 + kPasses * kDue + 1024;
    auto table = make_table("bench_expire_" + std::to_string(n), capacity);
    table->run_cop(d - 200 * kSec, kNoBudget, kNoBudget); // starts the wheel's clock before any deadline
    Feed feed;
    scramble_positions(*table, feed, capacity, d - 199 * kSec, rep);
    REQUIRE(feed.open(*table, 0, n, time_of) == n);
    REQUIRE(table->run_cop(d, kNoBudget, kNoBudget).wheel.visited == 0);

    for (int p = 1; p <= kPasses; ++p) {
        flush_caches();
        conntrack::CopResult r;
        const Timed t = timed([&] { r = table->run_cop(d + uint64_t(p) * kSec, kNoBudget, kNoBudget); });
        out.wall.push_back(t.wall_ns);
        out.cpu.push_back(t.cpu_ns);
        out.visits.push_back(double(r.wheel.visited));
        out.fired.push_back(double(r.wheel.fired));
        // Replace the fired flows with new background flows: n open at every pass.
        REQUIRE(feed.open(*table, n + uint32_t(p - 1) * kDue, kDue, time_of) == kDue);
        REQUIRE(table->active() == n);
    }
    out.rss_mib = double(rss_bytes()) / double(1 << 20);
    out.table_bytes = table->memory_bytes();
}

// The design the wheel replaced, at the same size: one pass of seed 000's sweep over n flow records
// (nothing due), median of 5 passes from cold caches. Its cost is the flows open.
double sweep_ns(uint32_t n)
{
    designs::SweepDesign sweep(n, kSynTimeout, kT0);
    for (uint32_t s = 0; s < n; ++s)
        sweep.open(s, kT0);
    designs::Sink sink;
    std::vector<double> wall;
    for (int p = 1; p <= 5; ++p) {
        flush_caches();
        sink.now_ns = kT0 + uint64_t(p) * kSec;
        wall.push_back(timed([&] { sweep.expire(sink.now_ns, ~0ull, ~0ull, sink); }).wall_ns);
    }
    REQUIRE(sink.fired == 0);
    return median(wall);
}

} // namespace

TEST_CASE("flow table: a cop pass costs the flows coming due, not the flows open", "[!benchmark][table-expire]")
{
    provenance("flow table: one cop pass with 1000 flows due, scattered, cold caches (issue 6 part 2)");
    std::printf("  this process's memory in transparent huge pages: %llu MiB so far (with FLOWCOP_BENCH_THP=1, EAL's; "
                "the cache-flush buffer, twice the L3, comes on its first use)\n",
                (unsigned long long)thp_mib());
    std::printf("  %10s %11s %9s %11s %9s %12s %10s %8s %8s %9s %9s %12s\n", "open", "wall ns", "ns/fire", "cpu ns",
                "ns/fire", "visits/pass", "fired", "vs 1e4", "cpu vs", "table MiB", "RSS MiB", "sweep ns");
    double base_wall = 0, base_cpu = 0;
    for (const uint32_t n : {10'000u, 100'000u, 1'000'000u, 10'000'000u}) {
        Samples s;
        for (int rep = 0; rep < kRepeats; ++rep)
            run(n, rep, s);
        const double wall = median(s.wall), cpu = median(s.cpu);
        if (base_wall == 0) {
            base_wall = wall;
            base_cpu = cpu;
        }
        const double sweep = sweep_ns(n);
        std::printf("  %10u %11.0f %9.1f %11.0f %9.1f %5.0f..%-5.0f %4.0f..%-4.0f %7.2fx %7.2fx %9.1f %9.0f %12.0f\n",
                    n, wall, wall / kDue, cpu, cpu / kDue, quantile(s.visits, 0), quantile(s.visits, 1),
                    quantile(s.fired, 0), quantile(s.fired, 1), wall / base_wall, cpu / base_cpu,
                    double(s.table_bytes) / double(1 << 20), s.rss_mib, sweep);
        std::fflush(stdout);
        // The wheel's promise, exactly: every pass visits the flows due and nothing else.
        CHECK(quantile(s.visits, 0) == kDue);
        CHECK(quantile(s.visits, 1) == kDue);
        CHECK(quantile(s.fired, 0) == kDue);
        CHECK(quantile(s.fired, 1) == kDue);
    }
    std::printf("  medians of %d passes (%d tables x %d); wall and this thread's CPU time; visits and fires min..max\n",
                kRepeats * kPasses, kRepeats, kPasses);
    std::printf("  THP after the run: %llu MiB\n", (unsigned long long)thp_mib());
}
