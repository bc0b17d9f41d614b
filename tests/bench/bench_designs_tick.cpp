// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 3, per-tick cost: 10^6 flows open, one timeout of 100 ticks, 1% of the
// flows (10^4, scattered at random) due at each tick, in steady state: every fired flow's slot gets a
// new flow, due 100 ticks later, so 10^6 are open at every pass. Each pass starts with cold caches.
// Virtual designs tick every (virtual) second; rte_timer runs on the real clock with 500 ms ticks
// (the driver busy-waits for each tick, and reports how late a pass started).
#include "designs.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

using namespace flowcop::bench;
using namespace flowcop::bench::designs;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint32_t kTicks = 100; // the timeout, in ticks: 1% due per tick
constexpr uint32_t kDuePerTick = kFlows / kTicks;
constexpr int kPasses = 15;

template <typename D>
void tick_cost(double& wheel_ns, double& wheel_cpu)
{
    const uint64_t tick = D::kRealTime ? 500 * kMs : kSec;
    const uint64_t lead = D::kRealTime ? 20 : 0; // real time: ticks of slack for the setup
    const uint64_t timeout = kTicks * tick;
    const uint64_t t0 = start_ns<D>(1'700'000'000ull * kSec);
    const uint64_t t_open = t0 - 2 * timeout; // virtual designs: every flow opened here, then re-armed
    auto d = std::make_unique<D>(kFlows, timeout, D::kRealTime ? t0 : t_open);
    // Group k (1..100) is due at tick lead + k: each flow's last packet mid-tick, a timeout before.
    const std::vector<uint32_t> order = permutation(kFlows, kSeed);
    arrange(*d, order, t_open, [&](uint32_t j) {
        const uint64_t k = j / kDuePerTick + 1;
        return t0 + (lead + k) * tick - tick / 2 - timeout;
    });
    Sink sink;
    sink.slots.reserve(kFlows);
    // An untimed pass at the tick before the first due one: the wheel's cursor catches up and re-links
    // every flow to its deadline's bucket; nothing fires in any design.
    wait_until<D>(t0 + lead * tick);
    sink.now_ns = t0 + lead * tick;
    REQUIRE(d->expire(t0 + lead * tick, ~0ull, ~0ull, sink).fired == 0);
    std::vector<double> wall, cpu, work, fired, late;
    for (int p = 1; p <= kPasses; ++p) {
        const uint64_t now = t0 + (lead + uint64_t(p)) * tick;
        sink.slots.clear();
        flush_caches();
        late.push_back(double(wait_until<D>(now)));
        sink.now_ns = now;
        PassResult r;
        const Timed t = timed([&] { r = d->expire(now, ~0ull, ~0ull, sink); });
        wall.push_back(t.wall_ns);
        cpu.push_back(t.cpu_ns);
        work.push_back(double(r.work));
        fired.push_back(double(r.fired));
        for (uint32_t s : sink.slots) // steady state: a new flow in every freed slot, due 100 ticks on
            d->open(s, now);
    }
    const double ns = median(wall), cpu_ns = median(cpu);
    if (wheel_ns == 0) {
        wheel_ns = ns;
        wheel_cpu = cpu_ns;
    }
    char work_s[32] = "n/a";
    if (std::string(D::kWork) != "n/a")
        std::snprintf(work_s, sizeof work_s, "%.0f", median(work));
    std::printf("  %-26s %11.0f %11.0f %8.1f %8.2fx %8.2fx %6.0f..%-6.0f %10s %-13s %8.1f\n", D::kName, ns, cpu_ns,
                cpu_ns / median(fired), ns / wheel_ns, cpu_ns / wheel_cpu, quantile(fired, 0), quantile(fired, 1),
                work_s, D::kWork, quantile(late, 1) / 1e6);
    std::fflush(stdout);
    CHECK(quantile(fired, 0) == kDuePerTick);
    CHECK(quantile(fired, 1) == kDuePerTick);
}

} // namespace

TEST_CASE("expiry designs: per-tick cost with 10^6 flows open and 1% due per tick", "[!benchmark][designs-tick]")
{
    provenance("expiry designs: one tick, 10^6 open flows, 10^4 due (1%), steady state, cold caches (issue 6 part 3)");
    std::printf("  ns per pass, median of %d passes; fired min..max; work per pass; how late the pass started\n",
                kPasses);
    std::printf("  %-26s %11s %11s %8s %9s %9s %13s %10s %-13s %8s\n", "design", "wall ns", "cpu ns", "cpu/fire",
                "wall/whl", "cpu/whl", "fired", "work", "unit", "late ms");
    double wheel_ns = 0, wheel_cpu = 0;
    for_each_design([&]<typename D>() { tick_cost<D>(wheel_ns, wheel_cpu); });
}
