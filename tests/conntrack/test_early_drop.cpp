// SPDX-License-Identifier: BSD-3-Clause
// Early drop at a full table (flow_table.h "Table full", early_drop.h): which flows a new flow may push
// out, in which order, and how each drop is counted. Issue 27: a table full of assured flows in TIME_WAIT
// refused every new connection for TIME_WAIT's 120 s; netfilter drops closing flows (tcp_can_early_drop).
#include "harness.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::EarlyDrop;
using conntrack::Reason;
using tcpstate::State;

namespace {

// A whole short connection, a to b: handshake, one request, both FINs acknowledged. Ends in TIME_WAIT,
// assured.
void short_connection(Harness& h, Ep a, Ep b)
{
    h.handshake(a, b);
    h.send(a, b, kAck | kPsh, 100);
    h.send(b, a, kAck | kPsh, 500);
    h.send(a, b, kFin | kAck);
    h.send(b, a, kAck);
    h.send(b, a, kFin | kAck);
    h.send(a, b, kAck);
}

uint64_t dropped(const Harness& h, EarlyDrop d)
{
    return h.c().early_dropped[static_cast<unsigned>(d)];
}

Ep churn_client(uint32_t i)
{
    static char addrs[256][16];
    const unsigned hi = (i >> 16) & 0xff;
    std::snprintf(addrs[hi], sizeof addrs[hi], "10.7.%u.1", hi);
    return {addrs[hi], uint16_t(1024 + (i & 0xffff) % 60000)};
}

conntrack::FlowSnapshot snapshot_of(const Harness& h, Ep a, Ep b)
{
    conntrack::SnapshotFilter f;
    std::vector<conntrack::FlowSnapshot> all(h.table->capacity() + 1);
    const size_t n = h.table->snapshot(f, all.data(), all.size());
    const packet::FlowKey k = h.key(a, b);
    for (size_t i = 0; i < n; ++i)
        if (conntrack::same_key(all[i].key, k))
            return all[i];
    FAIL("flow not in the table");
    return {};
}

} // namespace

TEST_CASE("A short connection ends assured in TIME_WAIT: what fills a table under churn", "[conntrack][early_drop]")
{
    Harness h;
    short_connection(h, client, server);
    const auto f = snapshot_of(h, client, server);
    CHECK(f.state == State::time_wait);
    CHECK(f.assured);
}

// The bug of issue 27: every one of these connections was refused (tcp_table_full) until TIME_WAIT ran out.
TEST_CASE("A churn of short connections at a full table drops closing flows and refuses none",
          "[conntrack][early_drop]")
{
    Harness h(small_config(1024));
    uint32_t i = 0;
    for (; i < 1024; ++i)
        short_connection(h, churn_client(i), server);
    REQUIRE(h.c().active() == 1024);
    REQUIRE(h.c().tcp_table_full == 0);
    // Five tables' worth more, one second apart per 256 (well inside TIME_WAIT's 120 s): each one's SYN finds
    // the table full of TIME_WAIT flows.
    for (; i < 6 * 1024; ++i) {
        if (i % 256 == 0)
            h.now += kSec;
        short_connection(h, churn_client(i), server);
    }
    CHECK(h.c().tcp_table_full == 0);
    CHECK(h.c().flows_created == 6 * 1024);
    CHECK(h.c().active() == 1024);
    CHECK(dropped(h, EarlyDrop::closing) == 5 * 1024);
    CHECK(dropped(h, EarlyDrop::unassured) == 0);
    CHECK(dropped(h, EarlyDrop::timed_out) == 0);
    CHECK(h.expired(Reason::evicted) == 5 * 1024);
    CHECK(h.c().early_drop_attempts == 5 * 1024);
    // The newest connection is whole: created by its SYN, not by a later packet after a refusal.
    const auto last = snapshot_of(h, churn_client(i - 1), server);
    CHECK(last.state == State::time_wait);
    CHECK(last.packets[0] == 5);
    CHECK(last.packets[1] == 4);
    CHECK(h.accounting_holds());
}

TEST_CASE("Closing flows of every closing state may be dropped; established ones never are", "[conntrack][early_drop]")
{
    Harness h(small_config(1024));
    // 512 established (assured, open) and 512 in the closing states after FIN or RST.
    for (uint16_t p = 0; p < 512; ++p)
        h.handshake({"10.1.0.1", uint16_t(1000 + p)}, server);
    for (uint16_t p = 0; p < 512; ++p) {
        const Ep c{"10.2.0.1", uint16_t(1000 + p)};
        h.handshake(c, server);
        switch (p % 4) {
        case 0: h.send(c, server, kFin | kAck); break;                                 // FIN_WAIT
        case 1: h.send(c, server, kFin | kAck), h.send(server, c, kAck); break;        // CLOSE_WAIT
        case 2: h.send(c, server, kFin | kAck), h.send(server, c, kFin | kAck); break; // LAST_ACK
        default: h.send(c, server, kRst | kAck); break;                                // CLOSE
        }
    }
    REQUIRE(h.c().active() == 1024);
    // RST-marked flows are due on the next tick: reap them, and refill with TIME_WAIT ones.
    h.now += 2 * kSec;
    h.cop();
    for (uint16_t p = 0; h.c().active() < 1024; ++p)
        short_connection(h, {"10.3.0.1", uint16_t(1000 + p)}, server);
    REQUIRE(h.c().active() == 1024);
    const uint64_t refused = h.c().tcp_table_full;
    for (uint16_t p = 0; p < 2000; ++p)
        h.send({"10.4.0.1", uint16_t(1000 + p)}, server, kSyn);
    uint32_t established = 0;
    for (uint16_t p = 0; p < 512; ++p)
        established += h.has({"10.1.0.1", uint16_t(1000 + p)}, server);
    CHECK(established == 512);
    // Every closing flow (512) went before any new SYN_SENT flow could be refused, and after that the new
    // (unassured) flows make room for each other.
    CHECK(dropped(h, EarlyDrop::closing) <= 512);
    CHECK(dropped(h, EarlyDrop::closing) > 400);
    CHECK(dropped(h, EarlyDrop::closing) + dropped(h, EarlyDrop::unassured) + (h.c().tcp_table_full - refused) == 2000);
    CHECK(h.accounting_holds());
}

// Closing flows go before unassured ones: a SYN flood's half-open flows are not what makes room for a
// churn while connections that are over still hold records.
TEST_CASE("A closing flow is dropped before an unassured one", "[conntrack][early_drop]")
{
    Harness h(small_config(1024));
    for (uint16_t p = 0; p < 512; ++p)
        h.send({"10.5.0.1", uint16_t(1000 + p)}, server, kSyn); // half-open: unassured
    for (uint16_t p = 0; p < 512; ++p)
        short_connection(h, {"10.6.0.1", uint16_t(1000 + p)}, server); // TIME_WAIT
    REQUIRE(h.c().active() == 1024);
    h.now += kSec;
    for (uint16_t p = 0; p < 100; ++p)
        short_connection(h, {"10.8.0.1", uint16_t(1000 + p)}, server);
    CHECK(dropped(h, EarlyDrop::closing) + dropped(h, EarlyDrop::unassured) == 100);
    // An unassured flow goes only when none of the 8 sampled records is closing: (1/2)^8 per drop here.
    CHECK(dropped(h, EarlyDrop::closing) >= 95);
    uint32_t half_open = 0;
    for (uint16_t p = 0; p < 512; ++p)
        half_open += h.has({"10.5.0.1", uint16_t(1000 + p)}, server);
    CHECK(half_open == 512 - dropped(h, EarlyDrop::unassured));
    CHECK(h.accounting_holds());
}

// A flow past its deadline that the cop has not reaped yet (it runs once a tick) is over: it makes room
// first, and ends with its own reason, as when one of its packets finds it timed out.
TEST_CASE("A timed-out flow not yet reaped is dropped first and ends with its own reason", "[conntrack][early_drop]")
{
    auto cfg = small_config(1024);
    cfg.timeouts.seconds[static_cast<size_t>(State::established)] = 30;
    Harness h(cfg);
    for (uint16_t p = 0; p < 1024; ++p)
        h.handshake({"10.1.0.1", uint16_t(1000 + p)}, server);
    REQUIRE(h.c().active() == 1024);
    h.now += 31 * kSec; // every flow is past its deadline; no cop ran
    h.send({"10.9.0.1", 5000}, server, kSyn);
    CHECK(dropped(h, EarlyDrop::timed_out) == 1);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.expired(Reason::evicted) == 0);
    CHECK(h.c().tcp_table_full == 0);
    CHECK(h.has({"10.9.0.1", 5000}, server));
    CHECK(h.accounting_holds());
}

TEST_CASE("A table full of established flows still refuses: they are never dropped", "[conntrack][early_drop]")
{
    Harness h(small_config(1024));
    for (uint16_t p = 0; p < 1024; ++p)
        h.handshake({"10.1.0.1", uint16_t(1000 + p)}, server);
    for (uint16_t p = 0; p < 100; ++p)
        short_connection(h, {"10.8.0.1", uint16_t(1000 + p)}, server);
    CHECK(h.c().tcp_table_full >= 100); // each SYN, and the picked-up ACKs after it
    CHECK(dropped(h, EarlyDrop::closing) + dropped(h, EarlyDrop::unassured) + dropped(h, EarlyDrop::timed_out) == 0);
    CHECK(h.c().active() == 1024);
    CHECK(h.accounting_holds());
}
