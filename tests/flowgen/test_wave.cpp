// SPDX-License-Identifier: BSD-3-Clause
// wave=T:N: N established flows go silent within virtual second T, so a tracker finds them all due
// in the same timeout bucket: the correlated-expiry case a timer wheel's budgets exist for.
#include <catch2/catch.hpp>

#include <algorithm>

#include "run.h"

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;

namespace {

constexpr uint64_t kStartUs = 1'700'000'000'000'000ULL;

} // namespace

TEST_CASE("a wave silences N established flows whose last segments fall in the same virtual second", "[flowgen][wave]")
{
    // Lifetimes of 100 s, no idle flows: outside the wave, no flow goes silent in 4 s.
    const RunResult r = run(config("flows=1000,pps=1000000,lifetime=100,lifetime_dist=fixed,idle_pct=0,"
                                   "rst_pct=0,wave=2:300,duration=4"),
                            0);
    REQUIRE(r.tracker.error_count() == 0);
    CHECK(r.stats.wave_flows == 300);
    CHECK(r.stats.flows_idle == 0);
    uint64_t silent = 0, first_last = UINT64_MAX, last_last = 0;
    for (const auto& [key, t] : r.tracker.flows()) {
        // An active flow sends every ~1 ms round-robin cycle; 0.5 s of silence means it stopped.
        if (t.phase != Phase::established || t.last_us + 500'000 > r.last_us)
            continue;
        ++silent;
        CHECK(t.last_flags == (kPsh | kAck));
        first_last = std::min(first_last, t.last_us);
        last_last = std::max(last_last, t.last_us);
    }
    CHECK(silent == 300);
    CHECK(first_last >= kStartUs + 2'000'000);
    CHECK(last_last < kStartUs + 3'000'000);
    // Consecutive data turns: the whole wave takes about N slots, not the whole second.
    CHECK(last_last - first_last < 10'000);
}

// The wave can only take flows that are established during its second. At 200 pps the 100 initial
// handshakes fill the first 1.5 s (a new flow's SYN goes before data turns), so a wave at second 0
// finds almost none; it must then end with its second rather than silence flows later.
TEST_CASE("a wave that finds too few established flows in its second ends with that second", "[flowgen][wave]")
{
    const RunResult r = run(config("flows=100,pps=200,lifetime=10000,lifetime_dist=fixed,idle_pct=0,"
                                   "rst_pct=0,wave=0:100,duration=6"),
                            0);
    REQUIRE(r.tracker.error_count() == 0);
    CHECK(r.stats.wave_flows < 100);
    CHECK(r.stats.flows_started >= 100);
    uint64_t silent = 0;
    for (const auto& [key, t] : r.tracker.flows())
        silent += t.phase == Phase::established && t.last_us + 2'000'000 < r.last_us;
    CHECK(silent == r.stats.wave_flows);
    CHECK(r.stats.active_flows == r.stats.flows_started - r.stats.wave_flows - r.stats.flows_fin);
}
