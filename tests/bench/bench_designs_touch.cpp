// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 3, per-packet touch cost: what one packet does to its flow's timer in each
// design, with 10^6 flows open and packets hitting flows in random order (a fresh fixed-seed
// permutation per repeat, caches flushed before each). wheel and sweep: store last_seen; tree, heap,
// rte_timer: re-key / reset; LRU: move to the tail. Every design also does the same payload update
// (last_seen, packet and byte counts). Work counted next to time: key comparisons, nodes relinked.
#include "designs.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

using namespace flowcop::bench;
using namespace flowcop::bench::designs;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint64_t kTimeout = 100 * kSec;
constexpr int kRepeats = 9;

template <typename D>
void touch_cost(double& wheel_ns, double& wheel_cpu)
{
    const uint64_t t0 = start_ns<D>(1'700'000'000ull * kSec);
    auto d = std::make_unique<D>(kFlows, kTimeout, t0);
    uint64_t now = t0;
    for (uint32_t s : permutation(kFlows, kSeed))
        d->open(s, now += 100);
    std::vector<double> wall, cpu, work;
    for (int r = 0; r < kRepeats; ++r) {
        const std::vector<uint32_t> order = permutation(kFlows, kSeed + 1 + uint64_t(r));
        flush_caches();
        const uint64_t w0 = d->touch_work();
        const Timed t = timed([&] {
            for (uint32_t s : order)
                d->touch(s, now += 1000); // 1 Mpps: each touch moves the deadline 1 us later than the last
        });
        wall.push_back(t.wall_ns / kFlows);
        cpu.push_back(t.cpu_ns / kFlows);
        work.push_back(double(d->touch_work() - w0) / kFlows);
    }
    const double ns = median(wall), cpu_ns = median(cpu);
    if (wheel_ns == 0) {
        wheel_ns = ns;
        wheel_cpu = cpu_ns;
    }
    char work_s[32] = "n/a";
    if (std::string(D::kTouchWork) != "n/a")
        std::snprintf(work_s, sizeof work_s, "%.2f", median(work));
    std::printf("  %-26s %9.1f %9.1f %9.1f %9.1f %8.2fx %8.2fx %10s  %s\n", D::kName, ns, cpu_ns, quantile(wall, 0),
                quantile(wall, 1), ns / wheel_ns, cpu_ns / wheel_cpu, work_s, D::kTouchWork);
    std::fflush(stdout);
}

} // namespace

TEST_CASE("expiry designs: per-packet touch cost with 10^6 flows open", "[!benchmark][designs-touch]")
{
    provenance("expiry designs: per-packet touch cost, 10^6 open flows, random order, cold caches (issue 6 part 3)");
    std::printf("  ns per touch, median of %d repeats of 10^6 touches; min/max of the repeats; work per touch\n",
                kRepeats);
    std::printf("  %-26s %9s %9s %9s %9s %9s %9s %10s  %s\n", "design", "wall ns", "cpu ns", "min", "max", "wall/whl",
                "cpu/whl", "work", "unit");
    double wheel_ns = 0, wheel_cpu = 0;
    for_each_design([&]<typename D>() { touch_cost<D>(wheel_ns, wheel_cpu); });
}
