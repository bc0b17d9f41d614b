// SPDX-License-Identifier: BSD-3-Clause
// FlowTable with TCP window tracking (tcpstate::track, issue 16): out-of-window segments are counted by
// reason and in the flow's packets but move neither state nor deadline; RSTs must hit the window (an
// assured flow: the exact sequence); the timeout caps (retransmissions, unacknowledged data, a
// one-sided pickup) and the live policy (be liberal).
#include "harness.h"
#include <conntrack/table_inspector.h>

#include <catch2/catch.hpp>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Reason;
using tcpstate::WindowReason;

namespace {

uint64_t out_of_window(const Harness& h, WindowReason r)
{
    return h.c().tcp_out_of_window[static_cast<unsigned>(r)];
}

conntrack::FlowSnapshot flow_of(const Harness& h, Ep a, Ep b)
{
    const int32_t pos = conntrack::TableInspector::find(*h.table, h.key(a, b));
    REQUIRE(pos >= 0);
    std::vector<conntrack::FlowSnapshot> all(h.table->capacity() + 1);
    all.resize(h.table->snapshot(conntrack::SnapshotFilter{}, all.data(), all.size()));
    for (const auto& s : all)
        if (s.position == uint32_t(pos))
            return s;
    FAIL("the flow is not in the listing");
    return {};
}

constexpr uint64_t kEstablishedS = 432000;

} // namespace

TEST_CASE("An RST outside the window ends nothing, is counted by reason and in the flow's packets",
          "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    h.run_for(5);
    const auto before = flow_of(h, client, server);
    // A blind attacker: the server's address, a sequence number far from the client's highest ack.
    const uint32_t server_next = h.next_seq(server, client);
    h.send(tcp_frame(server, client, kRst, 0, 0, server_next - 100000));
    h.send(tcp_frame(server, client, kRst | kAck, 0, 0, server_next + 0x40000000u, h.next_seq(client, server)));
    h.run_for(1);
    CHECK(h.c().active() == 1);
    const auto after = flow_of(h, client, server);
    CHECK(after.state == tcpstate::State::established);
    CHECK_FALSE(after.reset);
    CHECK(after.last_seen_ns == before.last_seen_ns);
    CHECK(after.deadline_ns == before.deadline_ns);
    CHECK(after.packets[1] == before.packets[1] + 2);
    CHECK(out_of_window(h, WindowReason::rst_below_ack) == 1);
    CHECK(out_of_window(h, WindowReason::seq_above_window) == 1);
    CHECK(h.c().tcp_tracked == 3);
    CHECK(h.c().out_of_window_total() == 2);
    CHECK(h.accounting_holds());
}

TEST_CASE("An RST at exactly the receiver's highest ack ends the flow", "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    h.send(client, server, kAck | kPsh, 100);
    h.send(server, client, kAck);
    h.send(server, client, kRst | kAck);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::reset) == 1);
    CHECK(h.c().out_of_window_total() == 0);
}

TEST_CASE("An in-window RST that is not exact keeps ESTABLISHED but caps the timeout at CLOSE's", "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    h.send(tcp_frame(server, client, kRst, 0, 0, h.next_seq(server, client) + 1000));
    CHECK(flow_of(h, client, server).state == tcpstate::State::established);
    h.run_for(9);
    CHECK(h.c().active() == 1);
    SECTION("the real peers' next segments lift the CLOSE cap")
    {
        h.send(client, server, kAck | kPsh, 10);
        h.send(server, client, kAck);
        // As in netfilter, the RST's sequence counts as sent by the server and never acknowledged:
        // the flow keeps the unacknowledged cap (300 s) while its peers talk, not CLOSE's 10 s.
        CHECK(flow_of(h, client, server).cap == tcpstate::Cap::unacknowledged);
        h.run_for(299);
        CHECK(h.c().active() == 1);
    }
    SECTION("without one, the flow ends 10 s after the RST")
    {
        h.run_for(1);
        CHECK(h.c().active() == 0);
        CHECK(h.expired(Reason::inactivity) == 1);
    }
}

TEST_CASE("Out-of-window data moves neither the state nor the deadline", "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    h.run_for(10);
    const auto before = flow_of(h, client, server);
    // Data a gigabyte past what the server allowed; then a FIN from there: neither counts.
    const uint32_t far = h.next_seq(client, server) + 0x40000000u;
    h.send(tcp_frame(client, server, kAck | kPsh, 500, 0, far, h.next_seq(server, client)));
    h.send(tcp_frame(client, server, kAck | kFin, 0, 0, far, h.next_seq(server, client)));
    const auto after = flow_of(h, client, server);
    CHECK(after.state == tcpstate::State::established);
    CHECK(after.deadline_ns == before.deadline_ns);
    CHECK(after.last_seen_ns == before.last_seen_ns);
    CHECK(after.packets[0] == before.packets[0] + 2);
    CHECK(out_of_window(h, WindowReason::seq_above_window) == 2);
}

TEST_CASE("A flow picked up mid-stream that never sees a reply is capped at the unacknowledged timeout",
          "[conntrack][window]")
{
    Harness h;
    h.send(client, server, kAck | kPsh, 100);
    CHECK(flow_of(h, client, server).cap == tcpstate::Cap::unacknowledged);
    h.run_for(299);
    CHECK(h.c().active() == 1);
    h.run_for(1);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::inactivity) == 1);
}

TEST_CASE("Unacknowledged data caps the timeout until it is acknowledged", "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    h.send(client, server, kAck | kPsh, 1000);
    CHECK(flow_of(h, client, server).cap == tcpstate::Cap::unacknowledged);
    SECTION("never acknowledged: 300 s")
    {
        h.run_for(300);
        CHECK(h.c().active() == 0);
    }
    SECTION("acknowledged: ESTABLISHED's own timeout again")
    {
        h.send(server, client, kAck);
        const auto f = flow_of(h, client, server);
        CHECK(f.cap == tcpstate::Cap::none);
        CHECK(f.deadline_ns == h.now + kEstablishedS * kSec);
    }
}

TEST_CASE("A segment retransmitted --tcp-max-retrans times caps the timeout at --tcp-timeout-max-retrans",
          "[conntrack][window]")
{
    auto cfg = small_config();
    cfg.timeouts.max_retrans = 200;
    cfg.timeouts.unacknowledged = 0; // no cap: only the retransmission cap is under test
    Harness h(cfg);
    h.handshake(client, server);
    const uint32_t seq = h.next_seq(client, server), ack = h.next_seq(server, client);
    const auto data = tcp_frame(client, server, kAck | kPsh, 100, 0, seq, ack);
    h.send(data);
    for (int i = 0; i < 2; ++i)
        h.send(data);
    CHECK(flow_of(h, client, server).cap == tcpstate::Cap::none); // unacknowledged data, but that cap is off
    h.send(data);                                                 // the third retransmission
    const auto f = flow_of(h, client, server);
    CHECK(f.cap == tcpstate::Cap::max_retrans);
    CHECK(f.deadline_ns == h.now + 200 * kSec);
}

TEST_CASE("--tcp-be-liberal accepts out-of-window segments and can be set live; RSTs stay checked",
          "[conntrack][window]")
{
    Harness h;
    h.handshake(client, server);
    const uint32_t far = h.next_seq(client, server) + 0x40000000u;
    const auto data = tcp_frame(client, server, kAck | kPsh, 100, 0, far, h.next_seq(server, client));
    h.send(data);
    CHECK(out_of_window(h, WindowReason::seq_above_window) == 1);
    tcpstate::WindowPolicy liberal;
    liberal.be_liberal = true;
    h.table->set_window_policy(liberal);
    h.now += kSec;
    h.send(data);
    CHECK(out_of_window(h, WindowReason::seq_above_window) == 1);
    CHECK(flow_of(h, client, server).last_seen_ns == h.now);
    h.send(tcp_frame(server, client, kRst, 0, 0, h.next_seq(server, client) - 100000));
    CHECK(out_of_window(h, WindowReason::rst_below_ack) == 1);
    h.run_for(1);
    CHECK(h.c().active() == 1);
}
