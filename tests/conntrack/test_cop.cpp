// SPDX-License-Identifier: BSD-3-Clause
// The inactivity cop: budgets, bursts of expiries, and the shard lock it respects.
#include "harness.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Reason;

TEST_CASE("A correlated wave is spread over budgeted passes and nothing is lost", "[conntrack][cop]")
{
    Harness h(small_config(20000));
    for (uint32_t i = 0; i < 10000; ++i)
        h.send({"10.8.0.1", uint16_t(1000 + i % 60000)}, {"10.8.1.1", uint16_t(1 + i / 60000)}, kSyn);
    h.now += 120 * kSec; // all due in the same tick
    unsigned passes = 0, exhausted = 0;
    while (h.c().active() > 0 && passes < 1000) {
        const auto r = h.cop(256, 256 * 16);
        CHECK(r.wheel.fired <= 256);
        exhausted += r.wheel.budget_exhausted;
        ++passes;
        h.now += kSec / 1000; // the worker retries ~1 ms later
    }
    CHECK(h.c().active() == 0);
    CHECK(passes == (10000 + 255) / 256);
    CHECK(exhausted == passes - 1);
    CHECK(h.c().cop_budget_exhausted == exhausted);
    CHECK(h.expired(Reason::inactivity) == 10000);
    CHECK(h.accounting_holds());
}

TEST_CASE("Cop visits track flows coming due, not flows open", "[conntrack][cop]")
{
    auto cfg = small_config(60000);
    Harness h(cfg);
    // 50000 established flows (5 days). Each is visited once, when the SYN_RECV
    // deadline its handshake cached (60 s) comes due, and re-linked far out.
    for (uint32_t i = 0; i < 50000; ++i)
        h.handshake({"10.9.0.1", uint16_t(1000 + i % 60000)}, {"10.9.1.1", uint16_t(1 + i / 60000)});
    h.run_for(61);
    CHECK(h.c().cop_visited == 50000);
    // Then 100 half-open flows (120 s): over the next 121 s the cop looks at those
    // 100 only, however many flows are open.
    for (uint16_t i = 0; i < 100; ++i)
        h.send({"10.9.2.1", uint16_t(1000 + i)}, server, kSyn);
    const uint64_t before = h.c().cop_visited;
    h.run_for(121);
    CHECK(h.c().cop_fired == 100);
    CHECK(h.c().cop_visited - before == 100);
}

TEST_CASE("A held shard makes the cop count a lock failure and retry, never fire early or lose the flow",
          "[conntrack][cop][lock]")
{
    Harness h;
    h.send(client, server, kSyn);
    const int32_t pos = h.table->find(h.key(client, server));
    REQUIRE(pos >= 0);
    const uint32_t shard = conntrack::FlowTable::shard_of(uint32_t(pos));

    h.run_for(119);
    // A control-plane thread holds the flow's shard across its deadline.
    std::atomic<bool> held{false}, release{false};
    std::thread reader([&] {
        h.table->hold_shard(shard);
        held = true;
        while (!release)
            std::this_thread::yield();
        h.table->release_shard(shard);
    });
    while (!held)
        std::this_thread::yield();
    h.run_for(3);
    CHECK(h.c().cop_lock_failures == 3);
    CHECK(h.c().active() == 1);
    CHECK(h.c().cop_fired == 0);
    release = true;
    reader.join();
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.c().cop_lock_failures == 3);
    CHECK(h.expired(Reason::inactivity) == 1);
    // It fired late by the time the shard was held (3 s + 1 tick), never early.
    CHECK(h.c().timeout_lag_ns.sum() >= 3 * kSec);
}

TEST_CASE("With ticks shorter than the check interval, a held shard costs one visit and one lock failure per "
          "pass, not one per tick",
          "[conntrack][cop][lock]")
{
    conntrack::TableConfig cfg = small_config();
    cfg.wheel.tick_ns = kSec / 1000; // 1 ms ticks, the cop once a second: each pass drains 1000 ticks
    Harness h(cfg);
    h.send(client, server, kSyn);
    const int32_t pos = h.table->find(h.key(client, server));
    REQUIRE(pos >= 0);
    h.run_for(119);
    const uint64_t visited_before = h.c().cop_visited;
    h.table->hold_shard(conntrack::FlowTable::shard_of(uint32_t(pos)));
    h.run_for(3); // SYN_SENT's 120 s run out during the first of these passes
    CHECK(h.c().cop_lock_failures == 3);
    CHECK(h.c().cop_visited - visited_before == 3);
    CHECK(h.c().cop_budget_exhausted == 0);
    CHECK(h.c().active() == 1);
    h.table->release_shard(conntrack::FlowTable::shard_of(uint32_t(pos)));
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.c().cop_lock_failures == 3);
    CHECK(h.expired(Reason::inactivity) == 1);
}

TEST_CASE("Shutdown ends every open flow with reason shutdown", "[conntrack][cop]")
{
    Harness h;
    for (uint16_t i = 0; i < 50; ++i)
        h.handshake({"10.6.0.1", uint16_t(1000 + i)}, server);
    h.table->destroy_all(h.now, Reason::shutdown);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::shutdown) == 50);
    CHECK(h.live_flows() == 0);
    CHECK(h.accounting_holds());
}

// The cop ends flows at once but deletes their keys from the hash in batches (kDeleteBatch): every
// pass, whatever its number of fires, must return with the keys of all it fired gone, their slots free
// for new flows.
TEST_CASE("A pass leaves no fired flow's key in the hash, whatever the count against the delete batch",
          "[conntrack][cop]")
{
    constexpr uint32_t kB = conntrack::kDeleteBatch;
    for (const uint32_t n : {1u, kB - 1, kB, kB + 1, 3 * kB + 5}) {
        CAPTURE(n);
        Harness h(small_config(4 * kB));
        auto ep = [](uint32_t i) { return Ep{"10.7.0.1", uint16_t(1000 + i)}; };
        for (uint32_t i = 0; i < n; ++i)
            h.send(ep(i), server, kSyn);
        h.now += 121 * kSec;
        // Budgeted passes: each returns with its fires' keys deleted.
        uint64_t fired = 0;
        while (fired < n) {
            const auto r = h.cop(kB / 2 + 1, 16 * (kB / 2 + 1));
            fired += r.wheel.fired;
            uint32_t still = 0;
            for (uint32_t i = 0; i < n; ++i)
                still += h.has(ep(i), server);
            CHECK(still == n - fired);
            if (!r.wheel.budget_exhausted)
                break;
        }
        CHECK(fired == n);
        // The freed slots take new flows, up to the capacity, with the same keys and others.
        for (uint32_t i = 0; i < 4 * kB; ++i)
            h.send(ep(i), server, kSyn);
        CHECK(h.c().active() >= 4 * kB * 9 / 10); // the hash refuses a few near its capacity (no extendable buckets)
        CHECK(h.c().tcp_table_full + h.c().active() == 4 * kB);
        CHECK(h.accounting_holds());
    }
}

// A replay whose capture ended has no next tick: reap_killed() ends what a kill marked at once, at the
// owner's (standing) time, with reason killed, and nothing else (an RST-marked flow keeps its tick).
TEST_CASE("reap_killed ends kill-marked flows at once and nothing else", "[conntrack][cop]")
{
    Harness h(small_config(1024));
    const Ep a{"10.1.0.1", 1000}, b{"10.1.0.2", 80}, c{"10.1.0.3", 1001}, d{"10.1.0.4", 1002};
    h.handshake(a, b);
    h.handshake(c, b);
    h.handshake(d, b);
    h.cop(); // the wheel's clock runs from here
    h.send(d, b, kRst | kAck);
    REQUIRE(h.table->kill(h.key(a, b)));
    REQUIRE(h.table->kill(h.key(b, c))); // either direction names it
    const uint64_t frozen = h.now;
    const conntrack::CopResult r = h.table->reap_killed(frozen, 1'000'000, 16'000'000);
    CHECK(r.wheel.fired == 2);
    CHECK(h.expired(Reason::killed) == 2);
    CHECK(h.expired(Reason::reset) == 0); // the RST waits for the tick, as always
    CHECK_FALSE(h.has(a, b));
    CHECK_FALSE(h.has(c, b));
    CHECK(h.has(d, b));
    // Budgeted: one fire per call, the rest left for the next.
    const Ep e{"10.1.0.5", 1003}, f{"10.1.0.6", 1004};
    h.handshake(e, b);
    h.handshake(f, b);
    REQUIRE(h.table->kill(h.key(e, b)));
    REQUIRE(h.table->kill(h.key(f, b)));
    CHECK(h.table->reap_killed(frozen, 1, 16).wheel.budget_exhausted);
    CHECK(h.table->reap_killed(frozen, 1, 16).wheel.fired == 1);
    CHECK(h.expired(Reason::killed) == 4);
    h.run_for(1);
    CHECK(h.expired(Reason::reset) == 1);
    CHECK(h.accounting_holds());
}
