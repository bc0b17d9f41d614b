// SPDX-License-Identifier: BSD-3-Clause
// Bucket-count sweep behind kDefaultBuckets: visits per flow per timeout period, for busy flows whose
// deadline is extended every second (lazily: the wheel only learns it when it visits). Ideal is 1.0; a
// timeout longer than the ring (buckets - 1 ticks) is revisited once per ring traversal, so the steady
// state is max(1, timeout / (buckets - 1)). Simulated clock, 1 s ticks; 1000 flows join at evenly
// spread seconds of the first period (so their ring phases differ), and visits are counted after a
// warm-up, over at least two periods and at least 100 ring traversals. Counts only: time is irrelevant.
#include "wheel_bench.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::bench;

namespace {

constexpr uint32_t kFlows = 1000;

// Busy flows: touched every second, so the true deadline is always this second plus the timeout.
struct BusyCop {
    uint64_t now;
    uint64_t timeout_ns;
    uint64_t fires = 0;
    uint64_t deadline(uint32_t) const noexcept { return now + timeout_ns; }
    bool fire(uint32_t) noexcept
    {
        ++fires;
        return true;
    }
};

double visits_per_period(uint32_t buckets, uint64_t timeout_s)
{
    FlowArray flows(kFlows, false);
    Wheel w(Config{buckets, kSec}, FlowHook{flows.data()}, kT0);
    BusyCop cop{kT0, timeout_s * kSec};
    const uint64_t warmup = timeout_s + buckets;
    const uint64_t window = std::max(2 * timeout_s, 100 * uint64_t{buckets - 1});
    uint32_t joined = 0;
    uint64_t measured = 0;
    for (uint64_t t = 1; t <= warmup + window; ++t) {
        cop.now = kT0 + t * kSec;
        for (; joined < kFlows && uint64_t{joined} * timeout_s / kFlows < t; ++joined)
            w.schedule(joined, cop.now + cop.timeout_ns);
        const ExpireResult r = w.expire(cop.now, kUnlimited, kUnlimited, cop);
        if (t > warmup)
            measured += r.visited;
    }
    REQUIRE(cop.fires == 0);
    REQUIRE(w.size() == kFlows);
    return double(measured) / kFlows / (double(window) / double(timeout_s));
}

} // namespace

TEST_CASE("timer wheel bucket-count sweep: visits per flow per timeout period", "[timerwheel][!benchmark]")
{
    provenance("timer wheel: bucket-count sweep (1 s ticks, busy flows extended every second)");
    const uint64_t timeouts_s[] = {30, 120, 2 * 3600, 5 * 86400};
    std::printf("  %8s %9s %10s %10s %10s %10s   (ring range)\n", "buckets", "heads KiB", "30 s", "120 s", "2 h",
                "5 d");
    for (uint32_t b = 256; b <= 65536; b *= 2) {
        std::printf("  %8u %9u", b, unsigned(b * flowcop::timerwheel::kLanes * sizeof(uint32_t) / 1024)); // lane heads
        for (const uint64_t t : timeouts_s) {
            const double v = visits_per_period(b, t);
            std::printf(" %10.3f", v);
            const double model = std::max(1.0, double(t) / double(b - 1));
            CHECK(std::fabs(v - model) <= 0.02 * model); // the steady state explained in the header
        }
        std::printf("   (%.1f h)\n", double(b - 1) / 3600.0);
    }
}
