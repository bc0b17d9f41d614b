// SPDX-License-Identifier: BSD-3-Clause
// Lifecycles as a tracker sees them: the reference tracker (trace.h) reads the wire and the test
// compares it with the generator's own Stats and with the configured percentages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "run.h"

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;

namespace {

// 200 flows living 0.2 s at 100 kpps: ~100 segments per flow, ~3200 flows in 3 virtual seconds.
constexpr const char* kBase = "flows=200,pps=100000,lifetime=0.2,duration=3";

} // namespace

// The tracker checks every segment's flags, direction, seq and ack; one error anywhere fails this.
TEST_CASE("every flow opens with SYN, SYN-ACK, ACK and every segment follows its side's sequence numbers",
          "[flowgen][lifecycle]")
{
    for (const char* extra :
         {",lifetime_dist=fixed", ",lifetime_dist=exp,seed=7", ",lifetime_dist=fixed,ipv6_pct=50,vlan=9,pkt_size=64"}) {
        const std::string kv = std::string(kBase) + extra;
        INFO(kv);
        const RunResult r = run(config(kv.c_str()), 0);
        CHECK(r.bad_frames == 0);
        CHECK(r.first_bad == "");
        CHECK(r.tracker.error_count() == 0);
        for (const std::string& e : r.tracker.errors())
            UNSCOPED_INFO(e);
        CHECK(r.tracker.errors().empty());
        CHECK(r.tracker.count(Phase::syn_sent) + r.tracker.count(Phase::syn_received) <= 10);
        CHECK(r.stats.finished);
        CHECK(r.frames == 300000); // duration=3 at 100 kpps, every slot filled
    }
}

// What the generator counts must be what a tracker sees: closes by kind, flows in total.
TEST_CASE("Stats agree with the closes seen on the wire", "[flowgen][lifecycle]")
{
    const RunResult r = run(config((std::string(kBase) + ",lifetime_dist=fixed").c_str()), 0);
    const Stats& s = r.stats;
    CHECK(s.flows_started == r.tracker.flows().size());
    CHECK(s.flows_fin == r.tracker.count(Phase::closed_fin));
    CHECK(s.flows_rst == r.tracker.count(Phase::closed_rst));
    CHECK(s.flows_started == s.flows_fin + s.flows_rst + s.flows_idle + s.wave_flows + s.active_flows);
    CHECK(s.packets == r.frames);
    CHECK(s.arrivals_dropped == 0);
}

// Closing kinds follow idle_pct / rst_pct; idle flows really stop (their last segment is data, sent
// about one lifetime after their SYN, and nothing follows), and no flow outlives its lifetime by much.
TEST_CASE("flows close by FIN, RST or go idle in the configured proportions, and idle flows stop sending",
          "[flowgen][lifecycle]")
{
    const Config cfg = config("flows=200,pps=100000,lifetime=0.2,lifetime_dist=fixed,duration=5,"
                              "idle_pct=20,rst_pct=30");
    const RunResult r = run(cfg, 0);
    REQUIRE(r.tracker.error_count() == 0);
    const uint64_t lifetime_us = 200'000, margin_us = 20'000; // a round-robin cycle is ~2 ms
    uint64_t fin = 0, rst = 0, idle = 0, ended = 0;
    for (const auto& [key, t] : r.tracker.flows()) {
        CHECK(t.last_us - t.first_us <= lifetime_us + margin_us);
        if (t.first_us + lifetime_us + margin_us >= r.last_us)
            continue; // may still be running
        ++ended;
        if (t.phase == Phase::closed_fin)
            ++fin;
        else if (t.phase == Phase::closed_rst)
            ++rst;
        else {
            ++idle;
            CHECK(t.phase == Phase::established);
            CHECK(t.last_flags == (kPsh | kAck));
            CHECK(t.data_c2s >= 1);
            CHECK(t.data_s2c >= 1);
        }
    }
    REQUIRE(ended > 4000);
    // Binomial sd at n ~ 5000 is under 0.7 percentage points; allow 3.
    CHECK(std::abs(100.0 * idle / ended - 20.0) < 3.0);
    CHECK(std::abs(100.0 * rst / ended - 30.0) < 3.0);
    CHECK(std::abs(100.0 * fin / ended - 50.0) < 3.0);
    CHECK(r.stats.flows_idle >= idle);
}

// Concurrency from the wire (a flow counts from its SYN to its last segment) stays near `flows`,
// for both lifetime distributions; the initial flows get residual lifetimes, so there is no dip or
// doubling one lifetime in.
TEST_CASE("concurrency stays near flows", "[flowgen][lifecycle]")
{
    for (const char* dist : {"fixed", "exp"}) {
        INFO(dist);
        const std::string kv = std::string("flows=500,pps=200000,lifetime=0.5,duration=4,lifetime_dist=") + dist;
        std::vector<uint64_t> active_samples;
        const RunResult r = run(config(kv.c_str()), 0, [&](const Frame&, uint64_t i, uint64_t, const Stats& s) {
            if (i % 10000 == 0)
                active_samples.push_back(s.active_flows);
        });
        REQUIRE(r.tracker.error_count() == 0);
        std::vector<std::pair<uint64_t, int>> events;
        for (const auto& [key, t] : r.tracker.flows()) {
            events.emplace_back(t.first_us, +1);
            events.emplace_back(t.last_us + 1, -1);
        }
        std::sort(events.begin(), events.end());
        int64_t open = 0;
        size_t e = 0;
        for (uint64_t t = r.first_us + 100'000; t < r.last_us - 600'000; t += 50'000) {
            for (; e < events.size() && events[e].first <= t; ++e)
                open += events[e].second;
            INFO("t=" << t - r.first_us << " us, open=" << open);
            CHECK(open >= 450);
            CHECK(open <= 560);
        }
        for (size_t i = 1; i < active_samples.size(); ++i) {
            CHECK(active_samples[i] >= 450);
            CHECK(active_samples[i] <= 560);
        }
    }
}

TEST_CASE("the IPv6 share of flows follows ipv6_pct", "[flowgen][lifecycle]")
{
    const RunResult r = run(config("flows=200,pps=100000,lifetime=0.2,duration=4,ipv6_pct=30"), 0);
    REQUIRE(r.tracker.error_count() == 0);
    uint64_t v6 = 0;
    for (const auto& [key, t] : r.tracker.flows())
        v6 += t.ipv6;
    const double share = 100.0 * v6 / r.tracker.flows().size();
    CHECK(std::abs(share - 30.0) < 3.0);
    CHECK(run(config("flows=50,pps=100000,lifetime=0.2,packets=20000,ipv6_pct=0"), 0).tracker.flows().size() > 0);
}

// pps defines the timeline: while traffic is continuous, frame i is stamped start + floor(i*10^6/pps).
TEST_CASE("timestamps follow the pps timeline exactly while traffic is continuous", "[flowgen][clock]")
{
    for (uint64_t pps : {1'000'000ULL, 300'000ULL, 7'000'000ULL}) {
        INFO(pps);
        // 1000 flows: enough initial SYNs to cover the first RTT even at 7 Mpps, so no slot is empty.
        const std::string kv = "flows=1000,lifetime=1,packets=100000,start=1600000000,pps=" + std::to_string(pps);
        uint64_t mismatches = 0;
        run(config(kv.c_str()), 0, [&](const Frame&, uint64_t i, uint64_t ts, const Stats&) {
            mismatches += ts != 1'600'000'000'000'000ULL + i * 1'000'000 / pps;
        });
        CHECK(mismatches == 0);
    }
}

// A stream with gaps (one flow at a time, always going idle, arrivals a second apart) must skip the
// empty slots instead of filling them, and still never go backwards.
TEST_CASE("idle stretches advance the clock without frames and timestamps never decrease", "[flowgen][clock]")
{
    uint64_t prev = 0, largest_gap = 0;
    const RunResult r = run(config("flows=1,idle_pct=100,rst_pct=0,lifetime=0.01,lifetime_dist=fixed,"
                                   "new_flow_rate=1,pps=1000,duration=20"),
                            0, [&](const Frame&, uint64_t i, uint64_t ts, const Stats&) {
                                if (i != 0)
                                    largest_gap = std::max(largest_gap, ts - prev);
                                prev = ts;
                            });
    CHECK(r.timestamps_monotonic);
    CHECK(r.stats.finished);
    CHECK(r.stats.flows_started == 20); // the initial flow, then one per second up to second 19
    CHECK(r.stats.flows_idle + r.stats.active_flows == r.stats.flows_started);
    CHECK(r.last_us - r.first_us >= 19'000'000);
    CHECK(largest_gap >= 900'000); // silence between a flow going idle and the next SYN
    CHECK(r.frames < 20 * 20);     // a handshake and ~10 data segments per flow
}

// packets= and duration= end the stream at exactly that point; afterwards next() keeps returning 0.
TEST_CASE("packets and duration stop the stream", "[flowgen][lifecycle]")
{
    Core core(config("packets=1234"));
    std::vector<uint8_t> buf(core.max_frame_len());
    uint64_t ts = 0, n = 0;
    while (core.next(buf.data(), ts) != 0)
        ++n;
    CHECK(n == 1234);
    CHECK(core.stats().finished);
    CHECK(core.next(buf.data(), ts) == 0);

    const RunResult d = run(config("duration=0.25,pps=1000000"), 0);
    CHECK(d.frames == 250000);
    CHECK(d.last_us < 1'700'000'000'000'000ULL + 250'000);
}

// flows*17/16 is the generator's own cap; more arrivals than the lifetime lets finish are dropped and
// counted, never a crash or unbounded memory.
TEST_CASE("arrivals beyond the flow capacity are dropped and counted", "[flowgen][lifecycle]")
{
    const RunResult r = run(config("flows=100,new_flow_rate=10000,lifetime=1,lifetime_dist=fixed,"
                                   "pps=1000000,duration=2"),
                            0);
    CHECK(r.tracker.error_count() == 0);
    CHECK(r.stats.arrivals_dropped > 0);
    CHECK(r.stats.active_flows <= 100 + 100 / 16 + 64);
}
