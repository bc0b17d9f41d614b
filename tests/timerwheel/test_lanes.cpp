// SPDX-License-Identifier: BSD-3-Clause
// Lanes and the prefetch hint (timer_wheel.h, "Lanes"): a bucket is kLanes intrusive lists taken in
// turn, and a callbacks object with prefetch() hears of every element before the pass examines it.
#include <timerwheel/timer_wheel.h>

#include "fixture.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::test;

namespace {

// A Recorder that also logs prefetch() hints, and checks that every examined element was hinted
// before (unless it heads its lane, hinted when the pass entered the bucket).
struct Hinted : Recorder {
    std::vector<uint32_t> hinted;
    std::set<uint32_t> pending; // hinted, not yet examined
    unsigned examined_unhinted = 0;
    explicit Hinted(Pool& p) : Recorder(p) {}
    void prefetch(uint32_t e)
    {
        hinted.push_back(e);
        pending.insert(e);
    }
    uint64_t deadline(uint32_t e)
    {
        if (pending.erase(e) == 0)
            ++examined_unhinted;
        return Recorder::deadline(e);
    }
};

} // namespace

TEST_CASE("a bucket's elements spread over the lanes and all fire in one pass", "[timerwheel][lanes]")
{
    constexpr uint32_t kN = 5 * kLanes + 3; // uneven lanes: some hold one more element
    Pool p(kN);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    for (uint32_t e = 0; e < kN; ++e) {
        p.deadline[e] = kT0 + kSec / 2;
        w.schedule(e, p.deadline[e]);
    }
    CHECK(w.memory_bytes() == 64u * kLanes * sizeof(uint32_t));
    Hinted r{p};
    const ExpireResult res = w.expire(kT0 + kSec, kUnlimited, kUnlimited, r);
    CHECK(res.fired == kN);
    CHECK(w.size() == 0);
    std::vector<uint32_t> fired = r.fired;
    std::sort(fired.begin(), fired.end());
    CHECK(std::adjacent_find(fired.begin(), fired.end()) == fired.end()); // each once
    // The lanes are taken in turn: the first kLanes examined are one per lane.
    std::set<uint32_t> first_lanes;
    for (size_t i = 0; i < kLanes; ++i)
        first_lanes.insert(r.visited[i] % kLanes);
    CHECK(first_lanes.size() == kLanes);
}

TEST_CASE("every examined element was hinted by prefetch() before, never one outside the pass", "[timerwheel][lanes]")
{
    constexpr uint32_t kN = 200;
    Pool p(kN);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    for (uint32_t e = 0; e < kN; ++e) {
        // Half due at tick 1, half busy (examined and re-linked), a few due later (never hinted now).
        p.deadline[e] = e % 10 == 0 ? kT0 + 5 * kSec : kT0 + kSec / 2;
        w.schedule(e, e % 10 == 0 ? p.deadline[e] : kT0 + kSec / 2);
        if (e % 2 == 1 && e % 10 != 0)
            p.deadline[e] = kT0 + 30 * kSec; // extended lazily: examined, re-linked
    }
    Hinted r{p};
    // With budgets, across several passes: a pass that stops mid-bucket hints again on re-entry.
    uint64_t examined = 0;
    for (int i = 0; i < 100; ++i) {
        const ExpireResult res = w.expire(kT0 + kSec, 16, 40, r);
        examined += res.visited;
        if (!res.budget_exhausted)
            break;
    }
    CHECK(examined == kN - kN / 10);
    CHECK(r.examined_unhinted == 0);
    for (uint32_t e : r.hinted)
        CHECK(e % 10 != 0);              // the later bucket's elements are never hinted
    CHECK(w.size() == kN / 10 + kN / 2); // the later ones and the extended (odd) ones
}
