// SPDX-License-Identifier: BSD-3-Clause
// Issue 18: what interim reports (--ipfix-active-timeout) cost the cop. n flows are open, their first
// packets spread evenly over one interval (60 s), so each one-second cop pass meets n/60 report
// boundaries, as in steady state. Three tables per row, interleaved, same flows and times:
//   - off:  interim_s 0 (nothing is due in the passes measured: the wheel's bare pass);
//   - idle: interim_s 60, no flow saw a packet since its first (each boundary re-arms the flow, no event);
//   - busy: interim_s 60, every flow saw a second packet (each boundary emits an interim event into an
//           exporter's ring, drained between passes outside the timed region, as the export thread does).
// Printed per row: medians over the passes of wall ns per pass, boundaries per pass, ns per boundary
// and the ratio to `off`. Cold caches at every pass (flush_caches), positions scrambled as in
// bench_table_expire.cpp.
#include "flow_feed.h"
#include "table_util.h"

#include <events/stream.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

using namespace flowcop;
using namespace flowcop::bench;

namespace {

constexpr uint32_t kInterimS = 60;
constexpr int kPasses = 9;
constexpr int kRepeats = 3;
constexpr unsigned kRing = 65535; // the service's default --events-ring

enum class Mode { off, idle, busy };
constexpr Mode kModes[] = {Mode::off, Mode::idle, Mode::busy};
const char* name_of(Mode m)
{
    return m == Mode::off ? "off" : m == Mode::idle ? "idle" : "busy";
}

struct Samples {
    std::vector<double> wall, boundaries, events;
};

void run(uint32_t n, Mode mode, int rep, Samples& out)
{
    const uint64_t d = kT0;
    const uint64_t interval = uint64_t(kInterimS) * kSec;
    // Flow i's first packet: spread over [d - 60 s, d), so its first boundary falls in [d, d + 60 s).
    auto first_of = [&](uint32_t i) { return d - interval + uint64_t(i) * interval / n; };

    conntrack::TableConfig cfg;
    cfg.name = "bench_interim_" + std::to_string(n);
    cfg.capacity = n + n / 4 + 1024;
    cfg.memory = conntrack::eal_memory();
    cfg.interim_s = mode == Mode::off ? 0 : kInterimS;
    std::string err;
    auto table = conntrack::FlowTable::create(cfg, err);
    INFO(err);
    REQUIRE(table != nullptr);
    auto stream = events::Stream::create(1, err);
    REQUIRE(stream);
    events::Subscription* sub = stream->subscribe("bench", events::kind_bit(events::Kind::interim), kRing, err);
    REQUIRE(sub != nullptr);
    table->set_events(&stream->producer(0));

    table->run_cop(d - 200 * kSec, kNoBudget, kNoBudget); // starts the wheel's clock before any deadline
    Feed feed;
    scramble_positions(*table, feed, cfg.capacity, d - 199 * kSec, rep);
    REQUIRE(feed.open(*table, 0, n, first_of) == n);
    if (mode == Mode::busy) // a retransmitted SYN: every flow has news at its first boundary
        feed.open(*table, 0, n, [&](uint32_t) { return d - kSec / 2; });
    REQUIRE(table->active() == n);
    table->run_cop(d, kNoBudget, kNoBudget); // boundaries up to d (flow 0's), untimed

    std::vector<events::Event> drained(1024);
    for (int p = 1; p <= kPasses; ++p) {
        unsigned left = 0;
        while (sub->take(0, drained.data(), unsigned(drained.size()), left) != 0) {
        }
        const uint64_t offered = sub->offered(0);
        flush_caches();
        conntrack::CopResult r;
        const Timed t = timed([&] { r = table->run_cop(d + uint64_t(p) * kSec, kNoBudget, kNoBudget); });
        out.wall.push_back(t.wall_ns);
        out.boundaries.push_back(double(r.wheel.fired));
        out.events.push_back(double(sub->offered(0) - offered));
        REQUIRE(sub->dropped_full(0) == 0);
    }
    REQUIRE(table->active() == n); // reports end nothing
}

} // namespace

TEST_CASE("flow table: interim report boundaries in a cop pass, against the same pass without reports",
          "[!benchmark][table-interim]")
{
    provenance("flow table: one cop pass with interim reports every 60 s off, idle and busy (issue 18)");
    std::printf("  %9s %5s %11s %11s %9s %11s %8s\n", "open", "mode", "wall ns", "bounds/pass", "events", "ns/bound",
                "x off");
    for (const uint32_t n : {100'000u, 1'000'000u}) {
        Samples s[std::size(kModes)];
        for (int rep = 0; rep < kRepeats; ++rep) // interleaved: a noisy neighbour hits the modes alike
            for (size_t m = 0; m < std::size(kModes); ++m)
                run(n, kModes[m], rep, s[m]);
        const double off = median(s[0].wall);
        for (size_t m = 0; m < std::size(kModes); ++m) {
            const double wall = median(s[m].wall), bounds = median(s[m].boundaries);
            std::printf("  %9u %5s %11.0f %11.0f %9.0f %11.1f %8.2f\n", n, name_of(kModes[m]), wall, bounds,
                        median(s[m].events), bounds > 0 ? (wall - off) / bounds : 0.0, wall / off);
        }
        std::fflush(stdout);
        // Each pass meets the boundaries of the flows whose first packet came 60 s earlier: n / 60.
        CHECK(median(s[1].boundaries) == Approx(double(n) / kInterimS).epsilon(0.02));
        CHECK(median(s[1].events) == 0);
        CHECK(median(s[2].events) == median(s[2].boundaries));
        CHECK(median(s[0].boundaries) == 0);
    }
    std::printf("  medians of %d passes (%d tables x %d) per mode; ns/bound = (wall - off) / boundaries; "
                "events = interim events emitted in the pass\n",
                kRepeats * kPasses, kRepeats, kPasses);
}
