// SPDX-License-Identifier: BSD-3-Clause
// FlowTable::set_flow_timeout (flowcopctl -U, conntrack -U --timeout) on a virtual clock: the deadline
// becomes now + S once, shorter or longer than the state's; the next accepted packet clears it and the
// state's timeout counts from that packet (the wheel re-armed, never late); an invalid segment does not;
// readers see the deadline set; slots run out with a clear answer and are reclaimed.
#include "harness.h"

#include <catch2/catch.hpp>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::FlowSnapshot;
using conntrack::Reason;
using Update = conntrack::FlowTable::TimeoutUpdate;

namespace {

// Established's timeout is 600 s here, and the cop runs every second.
conntrack::TableConfig established_600(uint32_t capacity = 1024)
{
    auto cfg = small_config(capacity);
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 600;
    return cfg;
}

Update set_timeout(Harness& h, const packet::FlowKey& key, uint32_t seconds, FlowSnapshot* out = nullptr)
{
    FlowSnapshot snap{};
    const Update u = h.table->set_flow_timeout(key, seconds, h.now, snap);
    if (out != nullptr)
        *out = snap;
    return u;
}

// The listing's view of the flow (a reader's copy, under its shard lock).
uint64_t listed_deadline(Harness& h)
{
    FlowSnapshot snap[4];
    REQUIRE(h.table->snapshot(conntrack::SnapshotFilter{}, snap, 4) == 1);
    return snap[0].deadline_ns;
}

// Runs the cop second by second until the flow is gone; the seconds it took (or `limit` + 1).
uint64_t seconds_until_gone(Harness& h, uint64_t limit)
{
    for (uint64_t s = 1; s <= limit; ++s) {
        h.run_for(1);
        if (h.c().active() == 0)
            return s;
    }
    return limit + 1;
}

} // namespace

TEST_CASE("A shorter timeout ends an idle flow S seconds later, as a timeout", "[conntrack][timeout_update]")
{
    Harness h(established_600());
    h.handshake(client, server);
    h.run_for(10);
    FlowSnapshot snap{};
    REQUIRE(set_timeout(h, h.key(client, server), 2, &snap) == Update::set);
    CHECK(snap.deadline_ns == h.now + 2 * kSec);
    CHECK(listed_deadline(h) == h.now + 2 * kSec);
    CHECK(seconds_until_gone(h, 600) == 2);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.accounting_holds());
}

TEST_CASE("The reply direction's tuple names the flow too; a flow that is not there is absent",
          "[conntrack][timeout_update]")
{
    Harness h(established_600());
    h.handshake(client, server);
    CHECK(set_timeout(h, h.key(server, client), 5) == Update::set);
    CHECK(set_timeout(h, h.key(client, Ep{"10.0.0.9", 80}), 5) == Update::absent);
    CHECK(seconds_until_gone(h, 600) == 5);
}

TEST_CASE("A longer timeout keeps an idle flow past its state's timeout, then ends it", "[conntrack][timeout_update]")
{
    Harness h(established_600());
    h.handshake(client, server);
    REQUIRE(set_timeout(h, h.key(client, server), 1000) == Update::set);
    CHECK(listed_deadline(h) == h.now + 1000 * kSec);
    CHECK(seconds_until_gone(h, 2000) == 1000);
    CHECK(h.expired(Reason::inactivity) == 1);
    // Lazy: the wheel's cached deadline (600 s) came due once, was re-read and re-linked; no visit per second.
    CHECK(h.c().cop_visited <= 3);
}

TEST_CASE("A packet after the update refreshes the flow by its state's timeout", "[conntrack][timeout_update]")
{
    SECTION("after a shorter timeout")
    {
        Harness h(established_600());
        h.handshake(client, server);
        REQUIRE(set_timeout(h, h.key(client, server), 5) == Update::set);
        h.run_for(3);
        h.send(client, server, kAck); // no data: nothing unacknowledged caps the timeout (window tracking)
        CHECK(listed_deadline(h) == h.now + 600 * kSec);
        CHECK(seconds_until_gone(h, 1000) == 600);
    }
    SECTION("after a longer timeout: the wheel is re-armed, not left at the later deadline")
    {
        Harness h(established_600());
        h.handshake(client, server);
        REQUIRE(set_timeout(h, h.key(client, server), 5000) == Update::set);
        h.run_for(700); // past the state's own deadline: the update kept it
        REQUIRE(h.c().active() == 1);
        h.send(client, server, kAck);
        CHECK(listed_deadline(h) == h.now + 600 * kSec);
        CHECK(seconds_until_gone(h, 6000) == 600);
    }
}

TEST_CASE("An invalid segment neither clears nor extends the update", "[conntrack][timeout_update]")
{
    Harness h(established_600());
    h.handshake(client, server);
    REQUIRE(set_timeout(h, h.key(client, server), 5) == Update::set);
    h.run_for(2);
    // Far outside the window: ignored for the deadline.
    h.send(tcp_frame(client, server, kAck, 10, 0, 0x80000000u, h.next_seq(server, client)));
    CHECK(seconds_until_gone(h, 600) == 3);
}

TEST_CASE("A packet that arrives after the deadline set starts a new flow", "[conntrack][timeout_update]")
{
    Harness h(established_600());
    h.handshake(client, server);
    REQUIRE(set_timeout(h, h.key(client, server), 2) == Update::set);
    h.now += 3 * kSec; // the cop has not run: the flow is past its deadline, not reaped
    h.send(client, server, kSyn);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.c().flows_created == 2);
    CHECK(h.c().active() == 1);
}

TEST_CASE("Other protocols: the update, and the packet that clears it", "[conntrack][timeout_update]")
{
    auto cfg = small_config();
    cfg.proto_timeouts = protostate::Timeouts::netfilter_defaults(); // UDP unreplied 30 s
    Harness h(cfg);
    const auto dns = FrameBuilder()
                         .ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.53")})
                         .udp({.sport = 40000, .dport = 53})
                         .payload(20)
                         .build();
    h.send(dns);
    packet::Packet p;
    packet::parse(dns.data(), uint32_t(dns.size()), p);
    REQUIRE(set_timeout(h, p.key, 300) == Update::set);
    h.run_for(100); // past UDP's 30 s
    REQUIRE(h.c().active() == 1);
    h.send(dns);
    CHECK(listed_deadline(h) == h.now + 30 * kSec);
    CHECK(seconds_until_gone(h, 400) == 30);
    CHECK(h.expired(Reason::inactivity) == 1);
}

TEST_CASE("The active timeout still ends the flow first", "[conntrack][timeout_update]")
{
    auto cfg = established_600();
    cfg.active_timeout_s = 50;
    Harness h(cfg);
    h.handshake(client, server);
    REQUIRE(set_timeout(h, h.key(client, server), 1000) == Update::set);
    CHECK(seconds_until_gone(h, 2000) == 50);
    CHECK(h.expired(Reason::active) == 1);
}

TEST_CASE("Slots run out with `full`, and come back once a flow ends or sees a packet", "[conntrack][timeout_update]")
{
    constexpr unsigned kSlots = conntrack::FlowTable::kMaxTimeoutUpdates;
    Harness h(established_600(1024));
    std::vector<Ep> clients;
    for (unsigned i = 0; i <= kSlots; ++i)
        clients.push_back(Ep{"10.0.0.1", uint16_t(20000 + i)});
    for (const Ep& c : clients)
        h.handshake(c, server);
    for (unsigned i = 0; i < kSlots; ++i)
        REQUIRE(set_timeout(h, h.key(clients[i], server), 100 + i) == Update::set);
    // A second update of a flow that holds a slot reuses it.
    CHECK(set_timeout(h, h.key(clients[0], server), 100) == Update::set);
    CHECK(set_timeout(h, h.key(clients[kSlots], server), 100) == Update::full);
    // A packet clears flow 1's update: its slot is free for the last flow.
    h.send(clients[1], server, kAck | kPsh, 10);
    CHECK(set_timeout(h, h.key(clients[kSlots], server), 100) == Update::set);
    CHECK(set_timeout(h, h.key(Ep{"10.0.0.1", 1}, server), 100) == Update::absent);
    // An ended flow's slot comes back too.
    REQUIRE(h.table->kill(h.key(clients[2], server)));
    h.run_for(1);
    CHECK(set_timeout(h, h.key(clients[1], server), 7) == Update::set);
    // Every update still holds: flow 1 ends 7 s after its update, flow 0 (re-set to 100 s) later.
    h.run_for(6);
    CHECK(h.has(clients[1], server));
    h.run_for(1);
    CHECK_FALSE(h.has(clients[1], server));
    CHECK(h.has(clients[0], server));
    CHECK(h.accounting_holds());
}
