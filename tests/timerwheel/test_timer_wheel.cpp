// SPDX-License-Identifier: BSD-3-Clause
// Placement and arming rules: where schedule() puts an element and when it is examined and fired.
#include <timerwheel/timer_wheel.h>

#include "fixture.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::test;

namespace {
uint64_t ceil_tick(uint64_t ns, uint64_t tick)
{
    return ns / tick + (ns % tick != 0 ? 1 : 0);
}

bool same_hook(const Hook& a, const Hook& b)
{
    return std::memcmp(&a, &b, sizeof(Hook)) == 0;
}
} // namespace

// The one rule that matters: if the cached due were ever later than the true deadline, a timeout would
// fire late. Random scheduled/true deadline pairs (true >= scheduled, many beyond the ring) must each be
// examined no later than the scheduled tick and fire exactly at the true deadline's tick.
TEST_CASE("a cached deadline may be early but is never late", "[timerwheel][placement]")
{
    constexpr uint32_t kN = 300;
    constexpr uint32_t kBuckets = 64;
    Pool p(kN);
    Wheel w = make_wheel(p, kBuckets, kSec, kT0);
    std::mt19937_64 rng(7);
    std::vector<uint64_t> scheduled(kN), truth(kN), first_visit(kN, 0), fired_at(kN, 0);
    for (uint32_t e = 0; e < kN; ++e) {
        scheduled[e] = kT0 + 1 + rng() % (kBuckets * kSec);
        truth[e] = scheduled[e] + rng() % (3 * kBuckets * kSec);
        p.deadline[e] = truth[e]; // extended after scheduling, without telling the wheel
        w.schedule(e, scheduled[e]);
    }
    Recorder r{p};
    for (uint64_t t = kT0 / kSec; t <= kT0 / kSec + 5 * kBuckets; ++t) {
        pass(w, r, t * kSec);
        for (uint32_t e : r.visited)
            if (first_visit[e] == 0)
                first_visit[e] = t;
        for (uint32_t e : r.fired) {
            CHECK(fired_at[e] == 0);
            fired_at[e] = t;
        }
    }
    for (uint32_t e = 0; e < kN; ++e) {
        INFO("element " << e);
        CHECK(first_visit[e] != 0);
        CHECK(first_visit[e] <= ceil_tick(scheduled[e], kSec));
        CHECK(fired_at[e] == ceil_tick(truth[e], kSec));
    }
    CHECK(w.size() == 0);
}

// netActivity's per-packet touch must cost nothing in the wheel. Proof by observation: a later schedule()
// leaves every hook byte as it was, and the element is examined once at its old tick, then fires on time.
TEST_CASE("extending a deadline needs no wheel work", "[timerwheel][placement]")
{
    Pool p(3);
    Wheel w = make_wheel(p, 16, kSec, kT0);
    for (uint32_t e = 0; e < 3; ++e)
        arm(w, p, e, kT0 + 5 * kSec);
    const std::vector<Hook> before = p.hooks;

    p.deadline[1] = kT0 + 12 * kSec;
    w.schedule(1, p.deadline[1]);    // extension through the API: a no-op
    p.deadline[2] = kT0 + 12 * kSec; // extension without the API: also correct
    for (uint32_t e = 0; e < 3; ++e)
        CHECK(same_hook(p.hooks[e], before[e]));
    CHECK(w.size() == 3);

    Recorder r{p};
    pass(w, r, kT0 + 4 * kSec);
    CHECK(r.visited.empty());
    pass(w, r, kT0 + 5 * kSec);
    CHECK(r.visited.size() == 3);
    CHECK(r.fired == std::vector<uint32_t>{0});
    for (uint64_t s = 6; s < 12; ++s) {
        pass(w, r, kT0 + s * kSec);
        CHECK(r.visited.empty());
    }
    pass(w, r, kT0 + 12 * kSec);
    CHECK(r.visited.size() == 2);
    CHECK(r.fired.size() == 2);
    CHECK(w.size() == 0);
}

// Shortening must move the element, or the cached due would be late. The second element shows why the
// contract makes this the caller's duty: shortening the true deadline without schedule() fires late.
TEST_CASE("shortening a deadline re-arms the element", "[timerwheel][placement]")
{
    Pool p(2);
    Wheel w = make_wheel(p, 256, kSec, kT0);
    arm(w, p, 0, kT0 + 100 * kSec);
    arm(w, p, 1, kT0 + 100 * kSec);
    arm(w, p, 0, kT0 + 10 * kSec);
    p.deadline[1] = kT0 + 10 * kSec; // contract violation, on purpose
    CHECK(p.hooks[0].due == static_cast<uint32_t>(kT0 / kSec + 10));
    CHECK(w.size() == 2);

    Recorder r{p};
    pass(w, r, kT0 + 9 * kSec);
    CHECK(r.fired.empty());
    pass(w, r, kT0 + 10 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});
    pass(w, r, kT0 + 99 * kSec);
    CHECK(r.fired.empty());
    pass(w, r, kT0 + 100 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{1});
}

// Setting a deadline arms an unscheduled element, and re-arms one that is still linked after its
// deadline was lazily cleared (a re-used flow whose old hook is still in a bucket).
TEST_CASE("setting a deadline arms the element", "[timerwheel][placement]")
{
    Pool p(2);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    CHECK_FALSE(w.is_scheduled(0));
    arm(w, p, 0, kT0 + 7 * kSec);
    CHECK(w.is_scheduled(0));
    CHECK(w.size() == 1);

    arm(w, p, 1, kT0 + 5 * kSec);
    p.deadline[1] = 0;             // lazily cleared: still linked at +5
    arm(w, p, 1, kT0 + 20 * kSec); // set again: examined at +5, re-linked, fires at +20
    CHECK(w.is_scheduled(1));

    Recorder r{p};
    pass(w, r, kT0 + 6 * kSec);
    CHECK(r.visited == std::vector<uint32_t>{1});
    CHECK(r.fired.empty());
    pass(w, r, kT0 + 7 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});
    pass(w, r, kT0 + 19 * kSec);
    CHECK(r.fired.empty());
    pass(w, r, kT0 + 20 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{1});
    CHECK(w.size() == 0);
}

// The wheel only visits what is scheduled, so a closed flow (deadline = now) must land in the very next
// tick to drain instead of waiting minutes for its old deadline.
TEST_CASE("a closed element (deadline = now) is reaped on the next tick", "[timerwheel][placement]")
{
    Pool p(1);
    Wheel w = make_wheel(p, 4096, kSec, kT0);
    arm(w, p, 0, kT0 + 300 * kSec);
    Recorder r{p};
    const uint64_t now = kT0 + 2 * kSec + kSec / 2;
    pass(w, r, now);
    CHECK(w.cursor_tick() == kT0 / kSec + 3);

    arm(w, p, 0, now); // close
    pass(w, r, kT0 + 3 * kSec - 1);
    CHECK(r.fired.empty());
    pass(w, r, kT0 + 3 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});

    // A deadline already long past also goes to the next tick to drain, not to some old bucket.
    arm(w, p, 0, kT0 - 1000 * kSec);
    CHECK(p.hooks[0].due == static_cast<uint32_t>(w.cursor_tick()));
    pass(w, r, kT0 + 4 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{0});
}

// A deadline beyond the ring's range is clamped into the furthest bucket and costs one extra visit per
// ring traversal, exactly buckets - 1 ticks apart, until it is due: never fired early, never lost.
TEST_CASE("a deadline past the ring's range is revisited once per ring until due", "[timerwheel][placement]")
{
    Pool p(1);
    Wheel w = make_wheel(p, 16, kSec, kT0);
    arm(w, p, 0, kT0 + 100 * kSec);
    CHECK(p.hooks[0].due == static_cast<uint32_t>(kT0 / kSec + 15));
    Recorder r{p};
    std::vector<uint64_t> visits;
    for (uint64_t s = 0; s <= 120; ++s) {
        pass(w, r, kT0 + s * kSec);
        if (!r.visited.empty())
            visits.push_back(s);
        if (s < 100)
            CHECK(r.fired.empty());
        else if (s == 100)
            CHECK(r.fired == std::vector<uint32_t>{0});
    }
    CHECK(visits == std::vector<uint64_t>{15, 30, 45, 60, 75, 90, 100});
    CHECK(w.size() == 0);
}

// A connection with no deadline is not in the wheel: schedule(e, 0) cancels, and an element whose true
// deadline became 0 is dropped (not fired) at its next visit and never visited again.
TEST_CASE("a deadline of 0 drops the element", "[timerwheel][placement]")
{
    Pool p(2);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    arm(w, p, 0, kT0 + 5 * kSec);
    arm(w, p, 1, kT0 + 5 * kSec);
    w.schedule(0, 0);
    CHECK_FALSE(w.is_scheduled(0));
    CHECK(w.size() == 1);

    p.deadline[1] = 0;
    Recorder r{p};
    const ExpireResult res = pass(w, r, kT0 + 5 * kSec);
    CHECK(r.visited == std::vector<uint32_t>{1});
    CHECK(r.fired.empty());
    CHECK(res.visited == 1);
    CHECK(res.fired == 0);
    CHECK_FALSE(w.is_scheduled(1));
    CHECK(w.size() == 0);
    pass(w, r, kT0 + 200 * kSec);
    CHECK(r.visited.empty());
}

// flowcop runs 1 ms ticks on Unix-epoch nanoseconds: absolute ticks above 2^32, deadlines not on a tick
// boundary (they round up), and a ring (4.096 s) shorter than a common timeout.
TEST_CASE("1 ms ticks at Unix-epoch nanoseconds fire within the deadline's tick", "[timerwheel][placement]")
{
    const uint64_t t0 = kT0 + 123'456; // not tick-aligned
    Pool p(2);
    Wheel w = make_wheel(p, 4096, kMs, t0);
    CHECK(w.cursor_tick() == t0 / kMs);
    CHECK(w.cursor_tick() > (uint64_t{1} << 32));
    arm(w, p, 0, t0 + 5 * kMs + kMs / 2);
    arm(w, p, 1, t0 + 10 * kSec);
    Recorder r{p};
    std::vector<uint64_t> fired0, fired1;
    for (uint64_t now = t0; now <= t0 + 11 * kSec; now += kMs / 4) {
        pass(w, r, now);
        for (uint32_t e : r.fired)
            (e == 0 ? fired0 : fired1).push_back(now);
    }
    REQUIRE(fired0.size() == 1);
    REQUIRE(fired1.size() == 1);
    // Each fires in the first pass (every 0.25 ms) at or after the end of its deadline's 1 ms tick.
    const uint64_t end0 = ceil_tick(t0 + 5 * kMs + kMs / 2, kMs) * kMs;
    const uint64_t end1 = ceil_tick(t0 + 10 * kSec, kMs) * kMs;
    CHECK(fired0[0] >= end0);
    CHECK(fired0[0] < end0 + kMs / 4);
    CHECK(fired1[0] >= end1);
    CHECK(fired1[0] < end1 + kMs / 4);
}

// Hook::due keeps only the low 32 bits of the due tick. Around a 2^32-tick boundary a naive unsigned
// compare of cached (0xffff....) and new (small) dues would refuse to move a shortened element: late.
TEST_CASE("the due tick's 32-bit wrap is harmless", "[timerwheel][placement]")
{
    const uint64_t boundary_tick = uint64_t{396} << 32; // ~1.7e18 ns at 1 ms ticks
    const uint64_t t0 = (boundary_tick - 3) * kMs;
    Pool p(3);
    Wheel w = make_wheel(p, 256, kMs, t0);
    arm(w, p, 0, t0 + 8 * kMs); // due after the wrap
    CHECK(p.hooks[0].due == 5u);
    arm(w, p, 0, t0 + 2 * kMs); // shortened to before the wrap
    CHECK(p.hooks[0].due == 0xffffffffu);
    arm(w, p, 1, t0 + 1 * kMs);
    p.deadline[1] = t0 + 9 * kMs;  // lazily extended across the wrap
    arm(w, p, 2, t0 + 2000 * kMs); // clamped, revisited across the wrap

    Recorder r{p};
    std::vector<uint64_t> fired_ms(3, 0);
    for (uint64_t ms = 0; ms <= 2100; ++ms) {
        pass(w, r, t0 + ms * kMs);
        for (uint32_t e : r.fired) {
            CHECK(fired_ms[e] == 0);
            fired_ms[e] = ms;
        }
    }
    CHECK(fired_ms == std::vector<uint64_t>{2, 9, 2000});
}

// cancel() of an unscheduled element must be harmless (flows are cancelled on every teardown path), and
// init_hook() is what "not scheduled" means.
TEST_CASE("cancel is a no-op on an element that is not scheduled", "[timerwheel][placement]")
{
    Pool p(3);
    Wheel w = make_wheel(p, 16, kSec, kT0);
    arm(w, p, 1, kT0 + 3 * kSec);
    arm(w, p, 2, kT0 + 3 * kSec);
    const Hook h1 = p.hooks[1];
    w.cancel(0);
    w.cancel(0);
    CHECK(w.size() == 2);
    CHECK(same_hook(p.hooks[1], h1));
    w.cancel(2);
    w.cancel(2);
    CHECK(w.size() == 1);
    CHECK_FALSE(w.is_scheduled(2));
    CHECK(w.is_scheduled(1));
    Recorder r{p};
    pass(w, r, kT0 + 3 * kSec);
    CHECK(r.fired == std::vector<uint32_t>{1});
}

// expire_ahead(): a caller whose time stands still ends what it scheduled for "now" (a past deadline,
// in the cursor's bucket) without waiting for the tick, and nothing else moves or fires early.
TEST_CASE("expire_ahead fires only the cursor bucket's past deadlines and leaves the rest in place",
          "[timerwheel][placement]")
{
    Pool p(8);
    Wheel w = make_wheel(p, 64, kSec, kT0);
    Recorder r{p};
    pass(w, r, kT0); // the cursor is now kT0's tick + 1
    const uint64_t next_tick = (kT0 / kSec + 1) * kSec;
    arm(w, p, 0, 1); // "now": a time in every caller's past -> the cursor's bucket
    arm(w, p, 1, 1);
    arm(w, p, 2, next_tick);            // due at the cursor's tick itself: not yet
    arm(w, p, 3, next_tick + 5 * kSec); // a later bucket
    arm(w, p, 4, 1);
    r.clear();
    ExpireResult x = w.expire_ahead(1, kUnlimited, kUnlimited, r);
    CHECK(x.fired == 3);
    CHECK_FALSE(x.budget_exhausted);
    CHECK(r.visited.size() == 4); // the cursor's bucket only: 0, 1, 2 and 4
    CHECK(w.size() == 2);
    CHECK(w.is_scheduled(2));
    CHECK(w.is_scheduled(3));
    // 2 stays where it was: examined and fired at its own tick, not before.
    pass(w, r, next_tick - 1);
    CHECK(r.fired.empty());
    pass(w, r, next_tick);
    CHECK(r.fired == std::vector<uint32_t>{2});
    // Budgets: what they leave stays in the bucket for the next call.
    for (uint32_t e = 4; e < 8; ++e)
        arm(w, p, e, 1);
    r.clear();
    x = w.expire_ahead(1, 2, kUnlimited, r);
    CHECK(x.fired == 2);
    CHECK(x.budget_exhausted);
    r.clear();
    x = w.expire_ahead(1, kUnlimited, kUnlimited, r);
    CHECK(x.fired == 2);
    CHECK(w.size() == 1); // 3 alone
    // A deferred fire stays scheduled in the bucket.
    arm(w, p, 5, 1);
    r.clear();
    r.on_fire = [](uint32_t) { return false; };
    x = w.expire_ahead(1, kUnlimited, kUnlimited, r);
    CHECK(x.deferred == 1);
    CHECK(w.is_scheduled(5));
}
