// SPDX-License-Identifier: BSD-3-Clause
// Issue 13 ("Live changes that cannot cost packets"): a live timeout change on a full 10^6-flow table.
// /flowcop/set shortens a timeout; every flow in that state must then move to an earlier wheel bucket
// (a rebase sweep, FlowTable::rebase_step), one step per worker loop turn, between RX bursts. Each
// step's wall time is time the lcore does not poll: a step longer than the RX ring holds at the
// benchmark's rate loses packets on a NIC. Compared in one run, interleaved: the previous worker's
// step (4096 records, no move budget) and today's (the cop's budgets: at most --timeout-budget moves
// and --timeout-budget x --visit-budget-factor records per step). Reported per policy: steps per
// sweep, step wall time (median, p99, max), the whole sweep, and the packets a 1024-descriptor ring
// would drop at 10 Mpps (wave_stats.h's model: a step of P ns loses max(0, rate x P - ring)).
#include "flow_feed.h"
#include "table_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace flowcop;
using namespace flowcop::bench;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint32_t kCapacity = 1'100'000;
constexpr double kMpps = 10;          // the benchmark's rate: ~100 us fills the ring
constexpr double kRxRing = 1024;      // app/service/plan/ports.cpp kRxDesc
constexpr uint32_t kFireBudget = 128; // the defaults (app/service/options/options.cpp, timerwheel/config.h)
constexpr uint32_t kVisitFactor = 16;
constexpr uint32_t kOldSlice = 4096; // the worker's slice before this change, with no move budget

struct Policy {
    const char* name;
    uint32_t max_records, max_moves;
};
constexpr Policy kPolicies[] = {{"before: 4096 records", kOldSlice, UINT32_MAX},
                                {"budgeted: 2048 records, 128 moves", kFireBudget* kVisitFactor, kFireBudget}};

struct Sweep {
    std::vector<double> step_ns, step_cpu_ns;
    double total_ns = 0;
    uint64_t moved = 0;
};

Sweep sweep(conntrack::FlowTable& table, const Policy& p)
{
    Sweep s;
    const uint64_t moved0 = table.counters().rebase_moved;
    while (table.rebase_pending()) {
        const Timed t = timed([&] { table.rebase_step(p.max_records, p.max_moves); });
        s.step_ns.push_back(t.wall_ns);
        s.step_cpu_ns.push_back(t.cpu_ns);
        s.total_ns += t.wall_ns;
    }
    s.moved = table.counters().rebase_moved - moved0;
    return s;
}

double lost(const std::vector<double>& steps)
{
    double l = 0;
    for (double ns : steps)
        l += std::max(0.0, kMpps * ns / 1e3 - kRxRing);
    return l;
}

} // namespace

TEST_CASE("flow table: a live timeout change re-arms 10^6 flows in steps an RX ring absorbs",
          "[!benchmark][table-rebase]")
{
    provenance("flow table: rebase sweep after a shortened timeout, 10^6 flows (issue 13)");
    auto table = make_table("bench_rebase", kCapacity);
    Feed feed;
    scramble_positions(*table, feed, kCapacity, kT0 - 199 * kSec, 0);
    Rng rng(kSeed);
    REQUIRE(feed.open(*table, 0, kFlows, [&](uint32_t) { return kT0 - rng.below(100 * kSec); }) == kFlows);
    REQUIRE(table->active() == kFlows);

    // Each round shortens SYN_SENT again (every flow is a SYN-only flow: all of them move), the two
    // policies alternating, so both meet the same table and the same machine noise.
    std::vector<Sweep> by_policy[2];
    uint32_t timeout = 110;
    for (int round = 0; round < 6; ++round, timeout -= 15) {
        tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
        t.seconds[size_t(tcpstate::State::syn_sent)] = timeout;
        table->set_timeouts(t, 0);
        const int which = round % 2;
        by_policy[which].push_back(sweep(*table, kPolicies[which]));
        CHECK(by_policy[which].back().moved == kFlows);
    }
    // CPU time is the step's own cost; wall time adds whatever preempted the process meanwhile (on a
    // shared 2-core machine, milliseconds), which a polling lcore on an isolated CPU does not suffer.
    std::printf("  %-34s %6s %28s %28s %9s %13s\n", "policy", "steps", "step cpu us p50/p90/p99/max",
                "step wall us p50/p90/p99/max", "sweep ms", "lost @10Mpps");
    double p99_of[2] = {0, 0};
    for (int which = 0; which < 2; ++which) {
        std::vector<double> wall, cpu, totals, losses;
        for (const Sweep& s : by_policy[which]) {
            wall.insert(wall.end(), s.step_ns.begin(), s.step_ns.end());
            cpu.insert(cpu.end(), s.step_cpu_ns.begin(), s.step_cpu_ns.end());
            totals.push_back(s.total_ns);
            losses.push_back(lost(s.step_cpu_ns));
        }
        p99_of[which] = quantile(cpu, 0.99);
        std::printf("  %-34s %6zu %6.1f/%6.1f/%6.1f/%7.1f %6.1f/%6.1f/%6.1f/%7.1f %9.1f %13.0f\n",
                    kPolicies[which].name, by_policy[which].front().step_ns.size(), quantile(cpu, 0.5) / 1e3,
                    quantile(cpu, 0.9) / 1e3, p99_of[which] / 1e3, quantile(cpu, 1) / 1e3, quantile(wall, 0.5) / 1e3,
                    quantile(wall, 0.9) / 1e3, quantile(wall, 0.99) / 1e3, quantile(wall, 1) / 1e3,
                    median(totals) / 1e6, median(losses));
    }
    std::printf("  step cpu p99, budgeted / before: %.3fx (3 sweeps each, interleaved; losses modelled from cpu "
                "time: %.0f Mpps into a %.0f-descriptor ring)\n",
                p99_of[1] / p99_of[0], kMpps, kRxRing);
}
