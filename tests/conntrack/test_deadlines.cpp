// SPDX-License-Identifier: BSD-3-Clause
// FlowTable deadlines on a virtual clock: per-state timeouts, lazy extension,
// re-arming on shortening, RST and kill, active and default timeouts.
#include "harness.h"
#include <conntrack/table_inspector.h>

#include <catch2/catch.hpp>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Reason;

TEST_CASE("A SYN_SENT flow expires after syn_sent's 120 s, not before", "[conntrack][deadline]")
{
    Harness h;
    h.send(client, server, kSyn);
    h.run_for(119);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.accounting_holds());
}

TEST_CASE("A retransmitted SYN restarts the SYN_SENT timeout", "[conntrack][deadline]")
{
    Harness h;
    h.send(client, server, kSyn);
    h.run_for(100);
    h.send(client, server, kSyn);
    h.run_for(119);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
}

TEST_CASE("Each state expires after its own timeout", "[conntrack][deadline]")
{
    struct Case {
        const char* name;
        std::vector<std::tuple<bool, uint8_t>> packets; // (from client?, flags)
        uint64_t timeout;
        Reason reason;
    };
    const std::vector<Case> cases = {
        {"syn_recv", {{true, kSyn}, {false, kSyn | kAck}}, 60, Reason::inactivity},
        {"fin_wait", {{true, kSyn}, {false, kSyn | kAck}, {true, kAck}, {true, kFin | kAck}}, 120, Reason::inactivity},
        {"close_wait",
         {{true, kSyn}, {false, kSyn | kAck}, {true, kAck}, {true, kFin | kAck}, {false, kAck}},
         60,
         Reason::inactivity},
        {"last_ack",
         {{true, kSyn}, {false, kSyn | kAck}, {true, kAck}, {true, kFin | kAck}, {false, kAck}, {false, kFin | kAck}},
         30,
         Reason::inactivity},
        {"time_wait",
         {{true, kSyn}, {false, kSyn | kAck}, {true, kAck}, {true, kFin | kAck}, {false, kFin | kAck}, {true, kAck}},
         120,
         Reason::closed},
    };
    for (const Case& k : cases) {
        SECTION(k.name)
        {
            Harness h;
            for (auto [from_client, flags] : k.packets)
                from_client ? h.send(client, server, flags) : h.send(server, client, flags);
            h.run_for(k.timeout - 1);
            CHECK(h.c().active() == 1);
            h.run_for(1);
            CHECK(h.c().active() == 0);
            CHECK(h.expired(k.reason) == 1);
        }
    }
}

TEST_CASE("An established flow lives for established's timeout", "[conntrack][deadline]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 7200; // past the 4095 s ring: clamped, revisited
    Harness h(cfg);
    h.handshake(client, server);
    h.run_for(7199);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::inactivity) == 1);
    // One clamp revisit at the end of the ring, one expiry: not one visit per second.
    CHECK(h.c().cop_visited <= 3);
}

TEST_CASE("Extending a deadline does no wheel work: the cop visits once per timeout period", "[conntrack][deadline]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 100;
    Harness h(cfg);
    h.handshake(client, server);
    // A packet every second for 1000 s: 1000 extensions.
    for (int i = 0; i < 1000; ++i) {
        h.now += kSec;
        h.send(client, server, kAck, 10);
        h.cop();
    }
    CHECK(h.c().active() == 1);
    // Lazy rearm: the flow is examined when its cached deadline comes due (every
    // ~100 s), never per packet.
    CHECK(h.c().cop_visited >= 9);
    CHECK(h.c().cop_visited <= 11);
    CHECK(h.c().cop_fired == 0);
}

TEST_CASE("Shortening a deadline re-arms: FIN on an established flow expires by fin_wait", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server); // established: 432000 s
    h.run_for(10);
    h.send(client, server, kFin | kAck); // fin_wait: 120 s
    h.run_for(119);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
}

TEST_CASE("An RST reaps the flow on the next tick with reason reset", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server);
    h.now += kSec / 2;
    h.send(server, client, kRst);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::reset) == 1);
}

TEST_CASE("A kill reaps the flow on the next tick with reason killed", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server);
    h.run_for(5);
    CHECK(h.table->kill(h.key(server, client)));
    CHECK_FALSE(h.table->kill(h.key({"10.9.9.9", 1}, server)));
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::killed) == 1);
}

TEST_CASE("A SYN on a TIME_WAIT flow ends it (closed) and starts a new one", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server);
    h.send(client, server, kFin | kAck);
    h.send(server, client, kFin | kAck);
    h.send(client, server, kAck);
    h.run_for(5);
    h.send(client, server, kSyn); // port reuse
    CHECK(h.expired(Reason::closed) == 1);
    CHECK(h.c().flows_created == 2);
    CHECK(h.c().active() == 1);
    // The new flow has a fresh SYN_SENT deadline.
    h.run_for(119);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.accounting_holds());
}

TEST_CASE("A SYN reusing the ports of a flow reset or killed before the next tick ends it by that reason",
          "[conntrack][deadline]")
{
    SECTION("reset")
    {
        Harness h;
        h.handshake(client, server);
        h.send(server, client, kRst);
        h.send(client, server, kSyn); // the client reconnects at once, before the cop's next tick
        CHECK(h.expired(Reason::reset) == 1);
        CHECK(h.expired(Reason::closed) == 0);
        CHECK(h.c().flows_created == 2);
        CHECK(h.c().active() == 1);
        CHECK(h.accounting_holds());
    }
    SECTION("killed")
    {
        Harness h;
        h.handshake(client, server);
        h.send(client, server, kFin | kAck);
        h.send(server, client, kFin | kAck);
        h.send(client, server, kAck);
        CHECK(h.table->kill(h.key(client, server)));
        h.send(client, server, kSyn); // port reuse of the TIME_WAIT flow the operator just killed
        CHECK(h.expired(Reason::killed) == 1);
        CHECK(h.expired(Reason::closed) == 0);
        CHECK(h.c().flows_created == 2);
        CHECK(h.c().active() == 1);
        CHECK(h.accounting_holds());
    }
}

TEST_CASE("The active timeout fires from the first packet regardless of activity", "[conntrack][deadline]")
{
    auto cfg = small_config();
    cfg.active_timeout_s = 30;
    Harness h(cfg);
    h.handshake(client, server);
    for (int i = 0; i < 29; ++i) {
        h.now += kSec;
        h.send(client, server, kAck, 1);
        h.cop();
    }
    CHECK(h.c().active() == 1);
    h.now += kSec;
    h.cop();
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::active) == 1);
    // The connection goes on: its next packet starts a new (picked-up) flow.
    h.send(client, server, kAck, 1);
    CHECK(h.c().flows_created == 2);
}

TEST_CASE("A packet after a flow's deadline but before the cop reaped it starts a new flow", "[conntrack][deadline]")
{
    // The cop runs once per check interval; a flow must not be revived by a
    // packet that arrives after its deadline in between.
    Harness h;
    h.send(client, server, kSyn);
    h.now += 121 * kSec; // past syn_sent's 120 s, no cop pass yet
    h.send(client, server, kSyn);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.c().flows_created == 2);
    CHECK(h.c().active() == 1);
    CHECK(h.c().timeout_lag_ns.total() == 1);
    CHECK(h.accounting_holds());
}

TEST_CASE("Packets after an RST stay with the closing flow until the next tick", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server);
    h.send(server, client, kRst);
    h.send(client, server, kAck, 10); // in flight when the RST arrived
    CHECK(h.c().flows_created == 1);
    h.run_for(1);
    CHECK(h.expired(Reason::reset) == 1);
    CHECK(h.c().active() == 0);
}

TEST_CASE("Shutdown reports flows already reset or past their deadline by that reason", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server);
    h.send(server, client, kRst);
    h.send({"10.0.0.3", 1}, server, kSyn);
    h.now += 200 * kSec; // the SYN flow's deadline passed, no cop pass ran
    h.send({"10.0.0.4", 1}, server, kSyn);
    h.table->destroy_all(h.now, Reason::shutdown);
    CHECK(h.expired(Reason::reset) == 1);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.expired(Reason::shutdown) == 1);
}

TEST_CASE("A state with no explicit timeout gets the default inactivity timeout", "[conntrack][deadline]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 0;
    cfg.timeouts.default_inactivity = 42;
    Harness h(cfg);
    h.handshake(client, server);
    h.run_for(41);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
}

TEST_CASE("Shortening a timeout at run time re-arms flows so none fires late", "[conntrack][deadline]")
{
    Harness h;
    h.handshake(client, server); // 432000 s
    h.run_for(10);
    tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
    t.seconds[size_t(tcpstate::State::established)] = 20;
    h.table->set_timeouts(t, 0);
    while (h.table->rebase_step(1 << 20) != 0) {
    }
    CHECK(h.c().rebase_visited == 1);
    // last_seen + 20 s was 10 s ago-plus: due on the next pass.
    h.run_for(10);
    CHECK(h.c().active() == 0);
}

// The worker steps a sweep with the cop's budgets: a step moves at most max_moves flows (a shortened
// timeout moves every flow in that state), while a lengthened one moves none and is a plain scan.
TEST_CASE("A rebase step moves at most its move budget and a lengthening sweep moves nothing", "[conntrack][deadline]")
{
    auto cfg = small_config(4096);
    Harness h(cfg);
    constexpr uint16_t kFlows = 300;
    for (uint16_t i = 0; i < kFlows; ++i)
        h.handshake({"10.8.0.1", uint16_t(2000 + i)}, server); // ESTABLISHED: 432000 s
    h.run_for(5);
    tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
    t.seconds[size_t(tcpstate::State::established)] = 20;
    h.table->set_timeouts(t, 0);
    unsigned steps = 0;
    uint64_t moved_before = h.c().rebase_moved;
    while (h.table->rebase_step(UINT32_MAX, 7) != 0) {
        const uint64_t moved = h.c().rebase_moved;
        CHECK(moved - moved_before <= 7);
        moved_before = moved;
        ++steps;
    }
    CHECK(h.c().rebase_moved == kFlows);
    CHECK(h.c().rebase_visited == kFlows);
    CHECK(steps >= kFlows / 7);
    h.run_for(15); // 20 s after the last packet: every flow has fired, none late
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::inactivity) == kFlows);

    // Lengthening: the same flows again under 20 s, raised back to 432000 s, move nothing.
    Harness g(cfg);
    for (uint16_t i = 0; i < kFlows; ++i)
        g.handshake({"10.8.0.1", uint16_t(2000 + i)}, server);
    g.table->set_timeouts(t, 0);
    while (g.table->rebase_step(UINT32_MAX) != 0) {
    }
    const uint64_t moved_shortening = g.c().rebase_moved;
    CHECK(moved_shortening == kFlows);
    g.table->set_timeouts(tcpstate::Timeouts::netfilter_defaults(), 0);
    while (g.table->rebase_step(UINT32_MAX, 1) != 0) {
    }
    CHECK(g.c().rebase_moved == moved_shortening);
    CHECK(g.c().rebase_visited == 2 * kFlows);
}

TEST_CASE("Raising the default at run time rebases flows that had no timeout of their own", "[conntrack][deadline]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 0;
    cfg.timeouts.default_inactivity = 60;
    Harness h(cfg);
    h.handshake(client, server);
    h.run_for(30);
    tcpstate::Timeouts t = cfg.timeouts;
    t.default_inactivity = 300;
    h.table->set_timeouts(t, 0);
    while (h.table->rebase_step(1 << 20) != 0) {
    }
    h.run_for(100); // past the old 60 s
    CHECK(h.c().active() == 1);
    h.run_for(170); // 300 s after the last packet
    CHECK(h.c().active() == 0);
}

TEST_CASE("No flow ever expires before its true deadline", "[conntrack][deadline]")
{
    auto cfg = small_config(4096);
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 50;
    Harness h(cfg);
    for (uint16_t i = 0; i < 200; ++i)
        h.handshake({"10.7.0.1", uint16_t(1000 + i)}, server);
    for (int s = 0; s < 200; ++s) {
        h.now += kSec;
        // Keep a rotating subset busy.
        for (uint16_t i = uint16_t(s % 7); i < 200; i += 7)
            h.send({"10.7.0.1", uint16_t(1000 + i)}, server, kAck, 1);
        h.cop();
    }
    h.run_for(60);
    CHECK(h.c().active() == 0);
    // Lag histogram: every expiry at or after its deadline, within one tick.
    const auto& lag = h.c().timeout_lag_ns;
    CHECK(lag.total() == 200);
    CHECK(lag.sum() <= 200 * kSec);
    CHECK(h.accounting_holds());
}

TEST_CASE("A listing shows the deadline the table works to, RST- and kill-marked flows included",
          "[conntrack][deadline][snapshot]")
{
    // One deadline function (deadline.h) serves the table and snapshot(): a snapshot's deadline_ns is
    // exactly what the wheel is given, in every state, marked or not, with an active timeout or not.
    auto cfg = small_config();
    cfg.active_timeout_s = 300;
    Harness h(cfg);
    const Ep a{"10.0.0.1", 1001}, b{"10.0.0.1", 1002}, c{"10.0.0.1", 1003}, d{"10.0.0.1", 1004};
    h.send(a, server, kSyn); // SYN_SENT
    h.handshake(b, server);  // ESTABLISHED
    h.handshake(c, server);  // then reset
    h.handshake(d, server);  // then killed
    h.now += 7 * kSec;
    h.send(server, c, kRst);
    REQUIRE(h.table->kill(h.key(d, server)));
    conntrack::FlowSnapshot s[8];
    const size_t n = h.table->snapshot({}, s, 8);
    REQUIRE(n == 4);
    for (size_t i = 0; i < n; ++i) {
        CAPTURE(i, s[i].reset, s[i].killed, int(s[i].state));
        CHECK(s[i].deadline_ns == conntrack::TableInspector::deadline(*h.table, s[i].position));
        if (s[i].reset || s[i].killed)
            CHECK(s[i].deadline_ns <= h.now); // due: reaped on the next tick
        else
            CHECK(s[i].deadline_ns > h.now);
    }
}
