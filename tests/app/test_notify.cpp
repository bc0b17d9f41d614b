// SPDX-License-Identifier: BSD-3-Clause
// The watchdog's decision (app/service/notify.h): fed once per period while every worker advances, not at
// all while one is stuck, again as soon as it moves.
#include <service/notify.h>

#include <catch2/catch.hpp>

#include <array>

using flowcop::app::WatchdogGate;
using namespace std::chrono_literals;

TEST_CASE("The watchdog is fed once a period, only while every worker makes progress", "[app][notify]")
{
    WatchdogGate gate(500ms, 2);
    const auto t0 = WatchdogGate::Clock::now();
    std::array<uint64_t, 2> turns{1, 1};
    CHECK(gate.due(turns, t0)); // the first check: both ran a turn
    turns = {50, 60};
    CHECK_FALSE(gate.due(turns, t0 + 100ms)); // not yet a period later
    CHECK(gate.due(turns, t0 + 500ms));
    turns = {90, 60}; // the second worker is stuck
    CHECK_FALSE(gate.due(turns, t0 + 1000ms));
    CHECK(gate.stalled() == 1);
    CHECK_FALSE(gate.due(turns, t0 + 1500ms)); // still stuck: both counters compared with the last check
    turns = {130, 61};                         // it moved again
    CHECK(gate.due(turns, t0 + 2000ms));
    CHECK(gate.stalled() == -1);
    turns = {130, 70}; // now the first one is stuck
    CHECK_FALSE(gate.due(turns, t0 + 2500ms));
    CHECK(gate.stalled() == 0);
    const std::array<uint64_t, 1> wrong{200};
    CHECK_FALSE(gate.due(wrong, t0 + 3000ms)); // a count that is not the workers' never feeds
}
