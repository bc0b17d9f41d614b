// SPDX-License-Identifier: BSD-3-Clause
// Config validation and budget arithmetic: the messages an operator sees for a bad wheel config.
#include <timerwheel/config.h>

#include "fixture.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::test;

// Each invalid value gets one sentence naming it and the accepted range; boundaries are inclusive.
TEST_CASE("validate() names each invalid config value in one sentence", "[timerwheel][config]")
{
    CHECK(validate(Config{}).empty());
    CHECK(validate(Config{4, kMs}).empty());
    CHECK(validate(Config{1u << 24, kSec}).empty());
    CHECK(validate(Config{256, 1'500'000}).empty()); // not a whole number of ms: fine
    CHECK(validate(Config{1000, kSec}) ==
          "bucket count 1000 is not a power of two (use 4, 8, 16, ... 16777216; default 4096)");
    CHECK(validate(Config{2, kSec}) ==
          "bucket count 2 is below the minimum of 4 (use a power of two from 4 to 16777216)");
    CHECK(validate(Config{0, kSec}) ==
          "bucket count 0 is below the minimum of 4 (use a power of two from 4 to 16777216)");
    CHECK(validate(Config{1u << 25, kSec}) == "bucket count 33554432 is above the maximum of 16777216 (2^24)");
    CHECK(validate(Config{4096, 0}) ==
          "tick_ns 0 must be positive (use at least 1000000, 1 ms; default 1000000000, 1 s)");
    CHECK(validate(Config{4096, 999'999}) == "tick_ns 999999 is below the minimum of 1000000 (1 ms)");
}

// A wheel never exists in an invalid state: the constructor refuses with validate()'s own sentence.
TEST_CASE("the wheel constructor throws std::invalid_argument with validate()'s message", "[timerwheel][config]")
{
    Pool p(1);
    const Config bad{1000, kSec};
    try {
        Wheel w(bad, HookAt{&p}, kT0);
        FAIL("constructor accepted an invalid config");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == validate(bad));
    }
    CHECK_THROWS_AS(Wheel(Config{4096, 10}, HookAt{&p}, kT0), std::invalid_argument);
    Wheel ok(Config{}, HookAt{&p}, kT0);
    CHECK(ok.buckets() == kDefaultBuckets);
    CHECK(ok.tick_ns() == kDefaultTickNs);
    CHECK(ok.cursor_tick() == kT0 / kSec);
    CHECK(ok.size() == 0);
}

// A huge configured fire budget times the factor must not wrap to a tiny visit budget.
TEST_CASE("visit_budget() multiplies and saturates instead of wrapping", "[timerwheel][config]")
{
    CHECK(visit_budget(1000, kDefaultVisitBudgetFactor) == 16000);
    CHECK(visit_budget(0, 16) == 0);
    CHECK(visit_budget(1000, 0) == 0);
    CHECK(visit_budget(kUnlimited, 1) == kUnlimited);
    CHECK(visit_budget(kUnlimited / 16 + 1, 16) == kUnlimited);
    CHECK(visit_budget(kUnlimited / 16, 16) == (kUnlimited / 16) * 16);
}
