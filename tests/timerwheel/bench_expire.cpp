// SPDX-License-Identifier: BSD-3-Clause
// The point of the wheel: an expire() pass costs what comes due, not what is open. 1e4..1e7 flows are
// scheduled, 1000 come due per pass; the rest sit in buckets the measured passes never reach. Every
// pass starts with cold caches (as the cop's does, a second after the last one), and the due flows are
// either contiguous records or scattered at random through the table (in 4 KiB pages, then in huge
// pages as production's DPDK memory is). For contrast the last column times the old design's per-tick
// sweep, reading every flow's deadline once.
#include "wheel_bench.h"

#include <catch2/catch.hpp>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::bench;

namespace {

constexpr uint64_t kDue = 1000;
constexpr int kPasses = 21;

struct Cop {
    Flow* flows;
    uint64_t deadline(uint32_t e) const noexcept { return flows[e].deadline; }
    bool fire(uint32_t e) const noexcept
    {
        flows[e].deadline = 0;
        return true;
    }
};

struct Result {
    double ns_per_pass;
    double visits_per_pass;
    double sweep_ns;
};

struct Layout {
    const char* name;
    bool scattered;
    bool huge;
};

Result run(size_t n, const Layout& layout)
{
    const bool scattered = layout.scattered;
    FlowArray flows(n, layout.huge);
    Rng rng(kSeed + n);
    std::vector<uint32_t> due(kDue);
    std::vector<bool> is_due(n, false);
    for (uint64_t i = 0; i < kDue; ++i) {
        uint32_t e = static_cast<uint32_t>(i);
        if (scattered)
            do
                e = static_cast<uint32_t>(rng() % n);
            while (is_due[e]);
        is_due[e] = true;
        due[i] = e;
    }
    Wheel w(Config{}, FlowHook{flows.data()}, kT0);
    const uint64_t quiet = kPasses + 2; // background deadlines start after the last measured pass
    for (uint32_t e = 0; e < n; ++e)
        if (!is_due[e]) {
            flows[e].deadline = kT0 + quiet * kSec + rng() % ((4000 - quiet) * kSec);
            w.schedule(e, flows[e].deadline);
        }

    std::vector<double> pass_ns, visits, sweep_ns;
    for (int p = 1; p <= kPasses; ++p) {
        const uint64_t now = kT0 + uint64_t(p) * kSec;
        for (uint32_t e : due) {
            flows[e].deadline = now;
            w.schedule(e, now);
        }
        flush_caches();
        ExpireResult r;
        pass_ns.push_back(time_ns([&] { r = w.expire(now, kUnlimited, kUnlimited, Cop{flows.data()}); }));
        REQUIRE(r.fired == kDue);
        visits.push_back(double(r.visited));
        flush_caches();
        uint64_t expired = 0;
        sweep_ns.push_back(time_ns([&] {
            for (const Flow& f : flows)
                expired += f.deadline != 0 && f.deadline <= now ? 1 : 0;
        }));
        REQUIRE(expired == 0);
    }
    REQUIRE(w.size() == n - kDue);
    return {median(pass_ns), median(visits), median(sweep_ns)};
}

} // namespace

TEST_CASE("timer wheel expire pass cost is flat in the number of scheduled flows", "[timerwheel][!benchmark]")
{
    provenance("timer wheel: one expire() pass with 1000 flows due (4096 buckets, 1 s ticks, cold caches)");
    const Layout layouts[] = {{"contiguous records, 4 KiB pages", false, false},
                              {"scattered at random through the table, 4 KiB pages", true, false},
                              {"scattered at random through the table, transparent huge pages", true, true}};
    for (const Layout& layout : layouts) {
        std::printf("  due flows: %s\n", layout.name);
        std::printf("  %10s %12s %10s %12s %10s %16s\n", "scheduled", "ns/pass", "ns/fire", "visits/pass", "vs 1e4",
                    "full sweep ns");
        double base = 0;
        for (const size_t n : {size_t{10'000}, size_t{100'000}, size_t{1'000'000}, size_t{10'000'000}}) {
            const Result r = run(n, layout);
            if (base == 0)
                base = r.ns_per_pass;
            std::printf("  %10zu %12.0f %10.1f %12.0f %9.2fx %16.0f\n", n, r.ns_per_pass, r.ns_per_pass / kDue,
                        r.visits_per_pass, r.ns_per_pass / base, r.sweep_ns);
            CHECK(r.visits_per_pass == double(kDue));
        }
    }
}
