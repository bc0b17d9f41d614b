// SPDX-License-Identifier: BSD-3-Clause
// Cost of the per-flow wheel operations: schedule (arm), the per-packet extend (a plain store of the
// flow's deadline, versus also calling schedule() with the later deadline), shorten (a move) and cancel.
// Own timed loops with medians over repeats, not Catch2 BENCHMARK: every loop changes wheel state, and
// an adaptive runner would repeat it a varying number of times over a different state each run.
#include "wheel_bench.h"

#include <catch2/catch.hpp>

#include <numeric>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::bench;

namespace {

uint64_t hook_checksum(const FlowArray& flows)
{
    uint64_t sum = 0;
    for (const Flow& f : flows)
        sum = sum * 1000003u + (uint64_t{f.hook.prev} << 40 ^ uint64_t{f.hook.next} << 20 ^ f.hook.due);
    return sum;
}

struct Row {
    const char* op;
    std::vector<double> ns_per_op;
    uint64_t work = 0; // relinks (hooks changed), a hardware-independent count
};

void run(size_t n)
{
    constexpr int kRepeats = 15;
    constexpr size_t kTouches = 1'000'000;
    FlowArray flows(n, true);
    Rng rng(kSeed + n);
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    for (size_t i = n - 1; i > 0; --i)
        std::swap(order[i], order[rng() % (i + 1)]);
    std::vector<uint64_t> armed(n);
    for (uint64_t& d : armed)
        d = kT0 + kSec + rng() % (4000 * kSec); // inside the default 4096 s ring
    std::vector<uint32_t> touches(kTouches);
    for (uint32_t& e : touches)
        e = static_cast<uint32_t>(rng() % n);

    Wheel w(Config{}, FlowHook{flows.data()}, kT0);
    Row sched{"schedule (arm)", {}}, touch{"extend: store deadline only", {}},
        touch_call{"extend: store + schedule()", {}}, shorten{"shorten (move)", {}}, cancel{"cancel", {}};
    for (int rep = 0; rep < kRepeats; ++rep) {
        sched.ns_per_op.push_back(time_ns([&] {
                                      for (uint32_t e : order) {
                                          flows[e].deadline = armed[e];
                                          w.schedule(e, armed[e]);
                                      }
                                  }) /
                                  double(n));
        REQUIRE(w.size() == n);

        const uint64_t before = hook_checksum(flows);
        touch.ns_per_op.push_back(time_ns([&] {
                                      for (size_t k = 0; k < kTouches; ++k)
                                          flows[touches[k]].deadline = kT0 + 5000 * kSec + k;
                                  }) /
                                  double(kTouches));
        touch_call.ns_per_op.push_back(time_ns([&] {
                                           for (size_t k = 0; k < kTouches; ++k) {
                                               const uint32_t e = touches[k];
                                               flows[e].deadline = kT0 + 5000 * kSec + k;
                                               w.schedule(e, flows[e].deadline);
                                           }
                                       }) /
                                       double(kTouches));
        touch.work = touch_call.work = hook_checksum(flows) == before ? 0 : 1;

        std::vector<uint32_t> due_before(n);
        for (size_t e = 0; e < n; ++e)
            due_before[e] = flows[e].hook.due;
        shorten.ns_per_op.push_back(time_ns([&] {
                                        for (uint32_t e : order) {
                                            flows[e].deadline = kT0 + kSec + (armed[e] - kT0 - kSec) / 2;
                                            w.schedule(e, flows[e].deadline);
                                        }
                                    }) /
                                    double(n));
        shorten.work = 0;
        for (size_t e = 0; e < n; ++e)
            shorten.work += flows[e].hook.due != due_before[e] ? 1 : 0;

        cancel.ns_per_op.push_back(time_ns([&] {
                                       for (uint32_t e : order)
                                           w.cancel(e);
                                   }) /
                                   double(n));
        REQUIRE(w.size() == 0);
    }
    const double base = median(touch.ns_per_op);
    for (const Row* r : {&sched, &touch, &touch_call, &shorten, &cancel}) {
        std::printf("  %9zu  %-28s %8.2f ns/op  (min %6.2f, max %6.2f)  x%5.2f of store-only", n, r->op,
                    median(r->ns_per_op), *std::min_element(r->ns_per_op.begin(), r->ns_per_op.end()),
                    *std::max_element(r->ns_per_op.begin(), r->ns_per_op.end()), median(r->ns_per_op) / base);
        if (r == &touch || r == &touch_call)
            std::printf("  relinks %llu", static_cast<unsigned long long>(r->work));
        if (r == &shorten)
            std::printf("  moved %llu of %zu", static_cast<unsigned long long>(r->work), n);
        std::printf("\n");
    }
    CHECK(touch_call.work == 0); // an extension through schedule() did no wheel work
}

} // namespace

TEST_CASE("timer wheel cost of schedule, extend, shorten and cancel", "[timerwheel][!benchmark]")
{
    provenance("timer wheel: per-flow operations (default wheel: 4096 buckets, 1 s ticks, huge-page records)");
    std::printf("  %9s  %-28s %s\n", "flows", "operation", "median of 15 repeats; flows visited in random order");
    run(10'000);
    run(1'000'000);
}
