// SPDX-License-Identifier: BSD-3-Clause
// expire() pass rules: budgets, cursor movement, fast-forward, re-entrancy and deferral.
#include <timerwheel/timer_wheel.h>

#include "fixture.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::test;

namespace {
bool no_duplicates(std::vector<uint32_t> v)
{
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
}

// A fire() whose lock is held elsewhere for its first `refusals` calls: it defers (returns false) that
// many times, then ends the element (true deadline cleared) and fires.
std::function<bool(uint32_t)> refuse_then_fire(Pool& p, int refusals)
{
    return [&p, refusals](uint32_t e) mutable {
        if (refusals > 0) {
            --refusals;
            return false;
        }
        p.deadline[e] = 0;
        return true;
    };
}
} // namespace

// If the cursor moved past a partly drained bucket, its remaining elements would wait a whole ring.
// A budget stop therefore leaves the cursor on that bucket, and later buckets wait their turn.
TEST_CASE("the cursor advances past a bucket only once it is drained", "[timerwheel][expire]")
{
    Pool p(11);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    for (uint32_t e = 0; e < 10; ++e)
        arm(w, p, e, kT0 + 5 * kSec);
    arm(w, p, 10, kT0 + 6 * kSec);
    Recorder r{p};
    const uint64_t bucket5 = kT0 / kSec + 5;
    std::vector<uint32_t> all;
    for (int call = 0; call < 3; ++call) {
        const ExpireResult res = pass(w, r, kT0 + 6 * kSec, 3);
        CHECK(res.fired == 3);
        CHECK(res.budget_exhausted);
        CHECK(w.cursor_tick() == bucket5);
        CHECK(std::find(r.visited.begin(), r.visited.end(), 10u) == r.visited.end());
        all.insert(all.end(), r.fired.begin(), r.fired.end());
    }
    const ExpireResult res = pass(w, r, kT0 + 6 * kSec, 3);
    all.insert(all.end(), r.fired.begin(), r.fired.end());
    CHECK(res.fired == 2); // the last of bucket 5, then element 10 from bucket 6
    CHECK(r.fired.back() == 10u);
    CHECK_FALSE(res.budget_exhausted);
    CHECK(w.cursor_tick() == bucket5 + 2);
    CHECK(all.size() == 11);
    CHECK(no_duplicates(all));
}

// The fire budget bounds how long one pass holds the poll thread when a wave comes due together.
TEST_CASE("the fire budget stops a pass and sets budget_exhausted", "[timerwheel][expire]")
{
    Pool p(5);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    for (uint32_t e = 0; e < 5; ++e)
        arm(w, p, e, kT0 + kSec);
    Recorder r{p};
    ExpireResult res = pass(w, r, kT0 + kSec, 2, 100);
    CHECK(res.fired == 2);
    CHECK(res.visited == 2);
    CHECK(res.budget_exhausted);
    CHECK(w.size() == 3);
    res = pass(w, r, kT0 + kSec, 100, 100);
    CHECK(res.fired == 3);
    CHECK_FALSE(res.budget_exhausted);
}

// Busy elements are examined and re-linked without firing, so a bucket of them never trips the fire
// budget; the visit budget bounds that work too.
TEST_CASE("the visit budget stops a pass and sets budget_exhausted", "[timerwheel][expire]")
{
    Pool p(11);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    arm(w, p, 10, kT0 + kSec); // scheduled first: the tail of its bucket, so visited last
    for (uint32_t e = 0; e < 10; ++e) {
        arm(w, p, e, kT0 + kSec);
        p.deadline[e] = kT0 + 30 * kSec; // busy: lazily extended
    }
    Recorder r{p};
    ExpireResult res = pass(w, r, kT0 + kSec, 100, 4);
    CHECK(res.visited == 4);
    CHECK(res.fired == 0);
    CHECK(res.budget_exhausted);
    CHECK(w.cursor_tick() == kT0 / kSec + 1);
    res = pass(w, r, kT0 + kSec, 100, 7);
    CHECK(res.visited == 7);
    CHECK(res.fired == 1);
    CHECK_FALSE(res.budget_exhausted);
    CHECK(w.size() == 10);
}

// budget_exhausted means "you are behind": a pass whose budget runs out on exactly the last due element
// is not behind, but one that stops with an undrained due bucket still queued is.
TEST_CASE("a pass that ends exactly at its budget with nothing left due is not exhausted", "[timerwheel][expire]")
{
    Pool p(4);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    for (uint32_t e = 0; e < 3; ++e)
        arm(w, p, e, kT0 + kSec);
    arm(w, p, 3, kT0 + 2 * kSec);
    Recorder r{p};
    ExpireResult res = pass(w, r, kT0 + kSec, 3, 3);
    CHECK(res.fired == 3);
    CHECK_FALSE(res.budget_exhausted);
    CHECK(w.cursor_tick() == kT0 / kSec + 2);

    for (uint32_t e = 0; e < 3; ++e)
        arm(w, p, e, kT0 + 2 * kSec);
    res = pass(w, r, kT0 + 3 * kSec, 3, 100); // bucket 2 holds 4 elements
    CHECK(res.fired == 3);
    CHECK(res.budget_exhausted);
    res = pass(w, r, kT0 + 3 * kSec, 1, 100);
    CHECK(res.fired == 1);
    CHECK_FALSE(res.budget_exhausted); // bucket 3 is due but empty: nothing remains
    CHECK(w.cursor_tick() == kT0 / kSec + 4);
}

// A zero budget is a caller bug (flowcop validates budgets); the wheel must neither loop nor touch
// anything, but still say whether due work is waiting.
TEST_CASE("a zero budget examines nothing and reports whether due work remains", "[timerwheel][expire]")
{
    Pool p(1);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    arm(w, p, 0, kT0 + kSec);
    Recorder r{p};
    const uint64_t cursor = w.cursor_tick();
    ExpireResult res = pass(w, r, kT0 + 2 * kSec, 0, 100);
    CHECK(res.visited == 0);
    CHECK(res.budget_exhausted);
    res = pass(w, r, kT0 + 2 * kSec, 100, 0);
    CHECK(res.visited == 0);
    CHECK(res.budget_exhausted);
    CHECK(w.cursor_tick() == cursor);
    CHECK(r.visited.empty());
    pass(w, r, kT0 + 2 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});
    res = pass(w, r, kT0 + 2 * kSec, 0, 0);
    CHECK_FALSE(res.budget_exhausted); // the cursor is past now's tick
}

// A stalled thread must not replay every missed tick, and must not lose or early-fire anything either.
// After a lag of five rings every element that came due fires exactly once; the others fire on time.
TEST_CASE("a lag of several rings fast-forwards without loss or early fire", "[timerwheel][expire]")
{
    constexpr uint32_t kBuckets = 16;
    // One element in every bucket (0..15 s), then some clamped into the furthest one.
    std::vector<uint64_t> offsets_s;
    for (uint64_t o = 0; o < kBuckets; ++o)
        offsets_s.push_back(o);
    for (uint64_t o : {40, 83, 84, 90, 200})
        offsets_s.push_back(o);
    std::vector<uint32_t> due_by_83(18);
    std::iota(due_by_83.begin(), due_by_83.end(), 0u);
    Pool p(offsets_s.size() + 1);
    Wheel w = make_wheel(p, kBuckets, kSec, kT0);
    for (uint32_t e = 0; e < offsets_s.size(); ++e)
        arm(w, p, e, kT0 + offsets_s[e] * kSec);
    const uint32_t busy = static_cast<uint32_t>(offsets_s.size());
    arm(w, p, busy, kT0 + 2 * kSec);
    p.deadline[busy] = kT0 + 87 * kSec; // extended past the lag

    SECTION("unlimited budget")
    {
        Recorder r{p};
        const uint64_t now = kT0 + 83 * kSec; // 83 ticks late: more than five rings
        const ExpireResult res = pass(w, r, now);
        CHECK(w.cursor_tick() == now / kSec + 1);
        std::vector<uint32_t> fired = r.fired;
        std::sort(fired.begin(), fired.end());
        CHECK(fired == due_by_83);
        CHECK(res.visited == offsets_s.size() + 1); // each element examined once, no tick replayed twice
        CHECK(w.size() == 4);
        std::map<uint32_t, uint64_t> at;
        for (uint64_t s = 84; s <= 220; ++s) {
            pass(w, r, kT0 + s * kSec);
            for (uint32_t e : r.fired)
                at[e] = s;
        }
        CHECK(at == std::map<uint32_t, uint64_t>{{18, 84}, {19, 90}, {20, 200}, {busy, 87}});
    }
    SECTION("budget of one fire per pass")
    {
        Recorder r{p};
        const uint64_t now = kT0 + 83 * kSec;
        std::vector<uint32_t> fired;
        for (int call = 0; call < 100; ++call) {
            const ExpireResult res = pass(w, r, now, 1, 16);
            for (uint32_t e : r.fired) {
                CHECK(kT0 + offsets_s[e] * kSec <= now);
                fired.push_back(e);
            }
            if (!res.budget_exhausted)
                break;
        }
        std::sort(fired.begin(), fired.end());
        CHECK(fired == due_by_83);
        CHECK(w.size() == 4);
    }
}

// fire() may schedule and cancel anything, the fired element included. Nothing it schedules may land in
// the bucket being drained (it would be popped again in the same pass), and an element it cancels
// before the pass reaches it must not be visited at all.
TEST_CASE("schedule and cancel from inside fire never fire anything twice in a pass", "[timerwheel][expire]")
{
    enum : uint32_t { A, B, C, D, E };
    Pool p(5);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    const uint64_t due = kT0 + 5 * kSec;
    for (uint32_t e : {D, C, B, A}) // pushed at the head: A is visited first
        arm(w, p, e, due);
    Recorder r{p};
    int a_fires = 0;
    r.on_fire = [&](uint32_t e) {
        if (e == A && ++a_fires == 1) {
            arm(w, p, A, due); // re-arm itself with a passed deadline: next tick
            w.cancel(C);       // not yet visited in this bucket
            p.deadline[C] = 0;
            arm(w, p, B, due); // not yet visited: stays here, examined once
            arm(w, p, E, kT0); // new, long past: next tick, not this bucket
            return true;
        }
        p.deadline[e] = 0;
        return true;
    };
    ExpireResult res = pass(w, r, due + kSec / 2);
    CHECK(r.fired == std::vector<uint32_t>{A, B, D});
    CHECK(r.visited == std::vector<uint32_t>{A, B, D});
    CHECK(res.fired == 3);
    CHECK(w.is_scheduled(A));
    CHECK(w.is_scheduled(E));
    CHECK(p.hooks[A].due == static_cast<uint32_t>(due / kSec + 1));
    CHECK(p.hooks[E].due == static_cast<uint32_t>(due / kSec + 1));

    res = pass(w, r, due + kSec);
    std::sort(r.fired.begin(), r.fired.end());
    CHECK(r.fired == std::vector<uint32_t>{A, E});
    CHECK(w.size() == 0);
}

// A fire() that cannot act (the flow's lock is held elsewhere) defers: the element returns at the next
// tick and is re-checked against its true deadline, so a retry is never early and never lost.
TEST_CASE("a deferred fire is retried on the next tick, never early", "[timerwheel][expire]")
{
    Pool p(3);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    arm(w, p, 0, kT0 + 5 * kSec);
    arm(w, p, 1, kT0 + 5 * kSec);
    arm(w, p, 2, kT0 + 5 * kSec);
    std::map<uint32_t, int> refusals{{0, 2}, {1, 1}, {2, 1}};
    Recorder r{p};
    r.on_fire = [&](uint32_t e) {
        if (refusals[e] > 0) {
            --refusals[e];
            if (e == 1)
                p.deadline[1] = kT0 + 20 * kSec; // extended while the cop waited for the lock
            if (e == 2)
                arm(w, p, 2, kT0 + 10 * kSec); // fire() chose its own retry time: honoured
            return false;
        }
        p.deadline[e] = 0;
        return true;
    };
    ExpireResult res = pass(w, r, kT0 + 5 * kSec);
    CHECK(res.fired == 0);
    CHECK(res.deferred == 3);
    CHECK(res.visited == 3);
    CHECK(w.size() == 3);
    res = pass(w, r, kT0 + 5 * kSec + kSec / 2);
    CHECK(res.visited == 0); // still inside tick 5: the retry waits for the next tick
    res = pass(w, r, kT0 + 6 * kSec);
    CHECK(r.visited.size() == 2);               // 0 and 1; 2 waits for the time its fire() chose
    CHECK(r.fired == std::vector<uint32_t>{0}); // 0 refused again; 1 found extended and re-linked
    CHECK(res.deferred == 1);
    CHECK(res.fired == 0);
    res = pass(w, r, kT0 + 7 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});
    CHECK(res.fired == 1);
    std::map<uint32_t, uint64_t> at;
    for (uint64_t s = 8; s <= 25; ++s) {
        pass(w, r, kT0 + s * kSec);
        for (uint32_t e : r.fired)
            at[e] = s;
    }
    CHECK(at == std::map<uint32_t, uint64_t>{{1, 20}, {2, 10}});
}

// One call may drain many ticks (1 ms ticks, a cop once a second). A deferral must wait for a later
// call, or a held lock would be visited and refused again at every tick the call drains.
TEST_CASE("a deferred fire is retried by the next call, never again in the same one", "[timerwheel][expire]")
{
    Pool p(1);
    const uint64_t ms = kSec / 1000;
    Wheel w = make_wheel(p, 4096, ms, kT0);
    arm(w, p, 0, kT0 + 5 * ms);
    Recorder r{p};
    r.on_fire = refuse_then_fire(p, 2);
    ExpireResult res = pass(w, r, kT0 + 1000 * ms); // 1000 ticks in one call
    CHECK(res.visited == 1);
    CHECK(res.deferred == 1);
    CHECK(w.size() == 1);
    res = pass(w, r, kT0 + 1000 * ms + ms / 2); // same tick: nothing to do yet
    CHECK(res.visited == 0);
    res = pass(w, r, kT0 + 2000 * ms);
    CHECK(res.visited == 1);
    CHECK(res.deferred == 1);
    res = pass(w, r, kT0 + 2001 * ms);
    CHECK(res.fired == 1);
    CHECK(w.size() == 0);
}

// A call whose window spans the whole ring cannot park a deferral after its last tick (that bucket is
// the one being drained): it goes to the ring's last tick, retried once more at the end of the call.
TEST_CASE("a deferral in a call spanning the whole ring is parked at its last tick, inside the ring",
          "[timerwheel][expire]")
{
    Pool p(1);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    arm(w, p, 0, kT0 + 1 * kSec);
    Recorder r{p};
    r.on_fire = refuse_then_fire(p, 1);
    // Cursor at kT0's tick, target 64 ticks later: the call fast-forwards to a 64-tick window.
    ExpireResult res = pass(w, r, kT0 + 64 * kSec);
    CHECK(res.visited == 2); // tick 1, refused; the window's last tick (64), fired
    CHECK(res.deferred == 1);
    CHECK(res.fired == 1);
    CHECK(w.size() == 0);
}
