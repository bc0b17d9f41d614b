// SPDX-License-Identifier: BSD-3-Clause
// The baselines are only worth comparing against if they are right: every design, under random
// packets and passes, fires each flow once its deadline (last packet + timeout) has passed, never
// before, at most once, and — except for the wheel's one-tick granularity — at the first pass after
// it. A model of the true deadlines is checked after every pass. rte_timer runs on the real clock
// (50 ms timeout, ms-scale steps) and reads that clock itself inside each call, so the model keeps
// each deadline as a bracket [clock before the call, clock after it] + timeout: exact however long a
// preemption on a loaded machine lasts. The others run on a virtual clock (the bracket is one point).
#include "designs.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>

using namespace flowcop::bench;
using namespace flowcop::bench::designs;

namespace {

// The clock a design reads; virtual designs read `virtual_now`.
template <typename D>
uint64_t clock_of(uint64_t virtual_now)
{
    if constexpr (D::kRealTime)
        return D::clock_ns();
    else
        return virtual_now;
}

// How late a correct design may fire: the wheel rounds deadlines up to its 1 s tick; the others
// fire at the first pass after the deadline.
template <typename D>
constexpr uint64_t granularity_ns()
{
    return std::is_same_v<D, WheelDesign> ? kSec : 0;
}

struct Outcome {
    uint64_t fired = 0, touched = 0, passes_firing = 0;
    uint64_t violations = 0;
    std::string first; // the first violation, for the failure message
};

template <typename D>
Outcome run_model()
{
    constexpr uint32_t kN = 2000;
    constexpr int kPasses = 60;
    constexpr uint64_t kRounding = 1000; // rte_timer's ns <-> TSC conversions truncate: 1 us of slack
    // About five passes per timeout, and a packet for a quarter of the open flows per pass: ~24% of
    // the flows time out within a timeout, the others are extended (the wheel re-links those).
    const uint64_t timeout = D::kRealTime ? 48 * kMs : 48 * kSec;
    const uint64_t step_min = timeout / 8, step_span = timeout / 8;
    uint64_t now = start_ns<D>(1'700'000'000ull * kSec);
    auto d = std::make_unique<D>(kN, timeout, now);
    std::vector<uint64_t> lo(kN), hi(kN); // the true deadline is in [lo, hi]
    std::vector<bool> open(kN, true);
    auto arm = [&](uint32_t s, bool is_open) {
        const uint64_t t0 = clock_of<D>(now);
        if (is_open)
            d->open(s, t0);
        else
            d->touch(s, t0);
        lo[s] = t0 + timeout;
        hi[s] = clock_of<D>(now) + timeout;
    };
    Outcome out;
    auto violation = [&](const char* what, uint32_t s, int pass, uint64_t deadline, uint64_t at) {
        if (out.violations++ == 0) {
            std::ostringstream m;
            m << D::kName << ": slot " << s << " " << what << " at pass " << pass << " (deadline " << deadline
              << ", pass at " << at << ")";
            out.first = m.str();
        }
    };
    for (uint32_t s = 0; s < kN; ++s)
        arm(s, true);
    Rng rng(kSeed);
    Sink sink;
    sink.slots.reserve(kN);
    for (int pass = 0; pass < kPasses; ++pass) {
        for (uint32_t s = 0; s < kN; ++s)
            if (open[s] && rng.below(4) == 0) {
                arm(s, false);
                ++out.touched;
            }
        const uint64_t step = step_min + rng.below(step_span);
        if constexpr (D::kRealTime)
            std::this_thread::sleep_for(std::chrono::nanoseconds(step));
        else
            now += step;
        const uint64_t before = clock_of<D>(now);
        sink.slots.clear();
        sink.now_ns = before;
        const PassResult r = d->expire(before, ~0ull, ~0ull, sink);
        const uint64_t after = clock_of<D>(now);
        if (r.fired != sink.slots.size())
            violation("pass result disagrees with its fires", 0, pass, r.fired, sink.slots.size());
        for (uint32_t s : sink.slots) {
            if (!open[s])
                violation("fired twice or while closed", s, pass, lo[s], after);
            else if (lo[s] > after + kRounding)
                violation("fired early", s, pass, lo[s], after);
            open[s] = false;
        }
        for (uint32_t s = 0; s < kN; ++s)
            if (open[s] && hi[s] + granularity_ns<D>() + (D::kRealTime ? kRounding : 0) <= before)
                violation("not fired although due", s, pass, hi[s], before);
        out.fired += r.fired;
        out.passes_firing += r.fired != 0;
        for (uint32_t s : sink.slots) { // steady state: a new flow in each freed slot
            arm(s, true);
            open[s] = true;
        }
    }
    return out;
}

} // namespace

// Which bug: a baseline that fires early, late or twice (a heap index not updated on a move, a
// tree node re-keyed in place, a list spliced wrongly, a rte_timer reset at the wrong delay) would
// still produce plausible timings, and every ratio in tests/benchmarks.md would compare against it.
TEMPLATE_TEST_CASE("An expiry design fires each flow once, never early, and late by at most its granularity",
                   "[bench][designs]", WheelDesign, SweepDesign, TreeDesign, HeapDesign, RteTimerDesign, LruDesign,
                   LinkedHashMapDesign)
{
    const Outcome o = run_model<TestType>();
    INFO(o.first);
    CHECK(o.violations == 0);
    // The run really exercised both paths: many flows timed out (every slot about twice) and many
    // packets extended a deadline, with fires spread over most passes rather than one burst.
    CHECK(o.fired > 3000);
    CHECK(o.touched > 10000);
    CHECK(o.passes_firing > 40);
}
