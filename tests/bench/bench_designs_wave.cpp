// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 3, a correlated wave: 10^6 flows whose deadlines all fall inside the same
// second. flowcop's wheel drains it with the default budgets (128 fires, 16x visits per pass), the
// next pass 1 ms after a pass the budget stopped (wave_stats.h); every baseline fires everything due
// in one go, as its original does, so its number is the single stall that pass holds the thread.
// Reported: the wheel's longest pass, passes, drain time and lag quantiles; each baseline's stall,
// and the ratios of the stall to the wheel's longest pass and to the wheel's drain time.
#include "designs.h"
#include "wave_stats.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <type_traits>

using namespace flowcop::bench;
using namespace flowcop::bench::designs;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint64_t kTimeout = 100 * kSec;
constexpr uint64_t kFireBudget = 128; // flowcop's default timeout_budget
constexpr uint64_t kVisitFactor = 16; // flowcop's default visit_budget_factor
constexpr int kRepeats = 3;

struct WheelWave {
    double max_wall, max_cpu, p999_wall, drain, lag99;
    size_t passes;
};
WheelWave wheel_wave{};

template <typename D>
void wave()
{
    std::vector<double> stall, stall_cpu, late, drain, lag99, p50, p999;
    size_t passes = 0;
    uint64_t fired = 0;
    for (int rep = 0; rep < kRepeats; ++rep) {
        // Deadlines spread evenly over (s - 1 s, s), packets given in time order (oldest first). Real
        // time: s is 3 s away (the setup's slack; a late start is reported, and fires the same flows).
        const uint64_t s = start_ns<D>(1'700'000'000ull * kSec + kTimeout + 2 * kSec) + (D::kRealTime ? 3 * kSec : 0);
        const uint64_t t_open = s - 2 * kTimeout - 2 * kSec;
        auto d = std::make_unique<D>(kFlows, kTimeout, D::kRealTime ? s - 3 * kSec : t_open);
        const std::vector<uint32_t> order = permutation(kFlows, kSeed + uint64_t(rep));
        arrange(*d, order, t_open,
                [&](uint32_t j) { return s - kSec + (uint64_t(j) + 1) * (kSec / (kFlows + 1)) - kTimeout; });
        Sink sink;
        sink.slots.reserve(kFlows);
        if constexpr (!D::kRealTime) { // untimed: the wheel catches up and re-links; nothing is due yet
            sink.now_ns = s - kSec;
            REQUIRE(d->expire(s - kSec, ~0ull, ~0ull, sink).fired == 0);
        }
        flush_caches();
        late.push_back(double(wait_until<D>(s)));
        if constexpr (std::is_same_v<D, WheelDesign>) {
            WaveLog log;
            for (;;) {
                sink.now_ns = s + log.now();
                PassResult r;
                const Timed t = timed([&] {
                    r = d->expire(s + log.now(), kFireBudget,
                                  flowcop::timerwheel::visit_budget(kFireBudget, kVisitFactor), sink);
                });
                log.add(t.wall_ns, t.cpu_ns, r.fired, r.work);
                if (!r.exhausted)
                    break;
            }
            stall.push_back(quantile(log.wall(), 1));
            stall_cpu.push_back(quantile(log.cpu(), 1));
            p50.push_back(quantile(log.wall(), 0.5));
            p999.push_back(quantile(log.wall(), 0.999));
            drain.push_back(log.drain_ns());
            lag99.push_back(log.lag_quantile(0.99));
            passes = log.passes().size();
        } else {
            sink.now_ns = s;
            PassResult r;
            const Timed t = timed([&] { r = d->expire(s, ~0ull, ~0ull, sink); });
            stall.push_back(t.wall_ns);
            stall_cpu.push_back(t.cpu_ns);
            drain.push_back(t.wall_ns);
            passes = 1;
        }
        fired = sink.fired;
        CHECK(sink.fired == kFlows);
    }
    if constexpr (std::is_same_v<D, WheelDesign>) {
        wheel_wave = {median(stall), median(stall_cpu), median(p999), median(drain), median(lag99), passes};
        std::printf("  %-26s %7zu %12.1f %12.1f %10.3f %12.1f %10s %10s %8.1f\n", D::kName, passes, median(stall) / 1e3,
                    median(stall_cpu) / 1e3, median(drain) / 1e9, median(lag99) / 1e6, "1.00x", "1.00x",
                    quantile(late, 1) / 1e6);
        std::printf("  %-26s passes: p50 %.1f us, p99.9 %.1f us, max %.1f us wall (the max is where the shared "
                    "machine interrupted a pass)\n",
                    "", median(p50) / 1e3, median(p999) / 1e3, median(stall) / 1e3);
    } else {
        std::printf("  %-26s %7zu %12.1f %12.1f %10.3f %12s %9.0fx %9.3fx %8.1f\n", D::kName, passes,
                    median(stall) / 1e3, median(stall_cpu) / 1e3, median(drain) / 1e9, "-",
                    median(stall) / wheel_wave.p999_wall, median(stall) / wheel_wave.drain, quantile(late, 1) / 1e6);
    }
    std::fflush(stdout);
    CHECK(fired == kFlows);
}

} // namespace

TEST_CASE("expiry designs: a correlated wave of 10^6 expiries in the same second", "[!benchmark][designs-wave]")
{
    provenance("expiry designs: 10^6 flows due in the same second; wheel with default budgets 128/16x re-run "
               "1 ms later, baselines fire all at once (issue 6 part 3)");
    std::printf("  medians of %d waves. wheel: longest pass; baselines: their one pass (the stall). drain = time "
                "until all fired; stall/p999 = a baseline's stall / the wheel's p99.9 pass\n",
                kRepeats);
    std::printf("  %-26s %7s %12s %12s %10s %12s %10s %10s %8s\n", "design", "passes", "longest us", "cpu us",
                "drain s", "lag p99 ms", "stall/p999", "stall/drn", "late ms");
    for_each_design([&]<typename D>() { wave<D>(); });
}
