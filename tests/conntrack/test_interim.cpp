// SPDX-License-Identifier: BSD-3-Clause
// Interim reports (TableConfig::interim_s, flowcop's --ipfix-active-timeout): a long flow is reported
// every interval through the wheel without ending, and its reports never change how or when it ends.
#include <events/stream.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace flowcop;
using namespace flowcop::test;

namespace {

constexpr uint32_t kInterval = 60;

// A table reporting every kInterval seconds, its events in one subscription of every kind.
struct InterimHarness {
    explicit InterimHarness(uint32_t interval = kInterval, uint32_t active_timeout_s = 0)
    {
        std::string error;
        stream = events::Stream::create(1, error);
        REQUIRE(stream);
        // Every kind but updates (test_update_events.cpp's): these tests count the reports and ends.
        sub = stream->subscribe("test", events::kAllKinds & ~events::kind_bit(events::Kind::updated), 1024, error);
        REQUIRE(sub);
        auto cfg = small_config();
        cfg.interim_s = interval;
        cfg.active_timeout_s = active_timeout_s;
        h = std::make_unique<Harness>(cfg);
        h->table->set_events(&stream->producer(0));
    }
    std::vector<events::Event> take()
    {
        std::vector<events::Event> out(1024);
        unsigned left = 0;
        out.resize(sub->take(0, out.data(), unsigned(out.size()), left));
        return out;
    }
    static std::vector<events::Event> of(const std::vector<events::Event>& all, events::Kind k)
    {
        std::vector<events::Event> out;
        for (const auto& e : all)
            if (e.kind == k)
                out.push_back(e);
        return out;
    }
    std::unique_ptr<events::Stream> stream;
    events::Subscription* sub = nullptr;
    std::unique_ptr<Harness> h;
};

} // namespace

TEST_CASE("a busy long flow is reported every interval and keeps going; its end reports everything")
{
    InterimHarness t;
    Harness& h = *t.h;
    const uint64_t start = h.now;
    h.handshake(client, server);
    for (int s = 0; s < 200; ++s) {
        h.now += kSec;
        h.send(client, server, kAck, 100);
        h.cop();
    }
    const auto all = t.take();
    const auto interim = InterimHarness::of(all, events::Kind::interim);
    REQUIRE(interim.size() == 3); // at 60, 120 and 180 s
    for (unsigned i = 0; i < interim.size(); ++i) {
        const auto& e = interim[i];
        CHECK(e.interims == i + 1);
        CHECK(e.first_seen_ns == start);
        CHECK(e.time_ns == start + (i + 1) * kInterval * kSec); // the cop reached it on its tick
        CHECK(e.packets[0] == 2 + (i + 1) * kInterval);         // SYN, ACK and one a second
        CHECK(e.packets[1] == 1);
        CHECK(e.reason_code == 0);
        CHECK((e.present & events::kHasFlowId) != 0);
        CHECK(e.flow_id == interim[0].flow_id);
        CHECK(e.tcp_flags[0] == (kSyn | kAck));
        CHECK(e.tcp_flags[1] == (kSyn | kAck));
    }
    CHECK(h.has(client, server));
    CHECK(h.c().expired_total() == 0);
    CHECK(h.c().interim_reports == 3);
    CHECK(h.c().cop_fired == 0); // reports are not expiries
    CHECK(h.accounting_holds());

    h.table->destroy_all(h.now, conntrack::Reason::shutdown);
    const auto ended = InterimHarness::of(t.take(), events::Kind::destroyed);
    REQUIRE(ended.size() == 1);
    CHECK(ended[0].interims == 3);
    CHECK(ended[0].packets[0] == 202);
    CHECK(ended[0].flow_id == interim[0].flow_id);
}

TEST_CASE("an interval without a packet is not reported, and the next busy one is")
{
    InterimHarness t;
    Harness& h = *t.h;
    h.handshake(client, server); // every packet at the start: nothing new by the first boundary
    h.run_for(130);
    CHECK(InterimHarness::of(t.take(), events::Kind::interim).empty());
    CHECK(h.c().interim_reports == 0);
    CHECK(h.c().interim_idle == 2); // 60 and 120 s: counted, as each took a fire from the budget
    CHECK(h.c().cop_fired == 0);
    h.send(client, server, kAck, 10); // at 130 s
    h.run_for(60);                    // past 180 s
    const auto interim = InterimHarness::of(t.take(), events::Kind::interim);
    REQUIRE(interim.size() == 1);
    CHECK(interim[0].interims == 3); // the third boundary: the two idle ones are passed too
    CHECK(interim[0].packets[0] == 3);
    CHECK(h.c().interim_reports == 1);
    CHECK(h.c().interim_idle == 2);
    CHECK(h.has(client, server));
}

TEST_CASE("a cop that comes several intervals late reports a busy flow once, not once per missed boundary")
{
    InterimHarness t;
    Harness& h = *t.h;
    h.handshake(client, server);
    for (int s = 0; s < 200; ++s) { // busy for 200 s, but no cop pass meanwhile
        h.now += kSec;
        h.send(client, server, kAck, 100);
    }
    h.cop();
    const auto interim = InterimHarness::of(t.take(), events::Kind::interim);
    REQUIRE(interim.size() == 1);
    CHECK(interim[0].interims == 3); // the boundaries at 60, 120 and 180 s are all passed
    CHECK(interim[0].packets[0] == 202);
    CHECK(h.c().interim_reports == 1);
    CHECK(h.c().interim_idle == 0); // one fire for three boundaries, and that one reported
    h.now += 30 * kSec;             // nothing new before the 240 s boundary
    h.send(client, server, kAck, 100);
    h.run_for(40);
    CHECK(InterimHarness::of(t.take(), events::Kind::interim).size() == 1);
    CHECK(h.has(client, server));
}

TEST_CASE("the flow still ends when its own deadline comes, reports or not")
{
    SECTION("--active-timeout ends it after its reports")
    {
        InterimHarness t(kInterval, 150);
        Harness& h = *t.h;
        h.handshake(client, server);
        for (int s = 0; s < 200; ++s) {
            h.now += kSec;
            h.send(client, server, kAck);
            h.cop();
        }
        const auto all = t.take();
        CHECK(InterimHarness::of(all, events::Kind::interim).size() == 2); // 60 and 120; the flow ends at 150
        const auto ended = InterimHarness::of(all, events::Kind::destroyed);
        REQUIRE(ended.size() >= 1);
        CHECK(ended[0].reason_code == static_cast<uint8_t>(conntrack::Reason::active));
        CHECK(ended[0].interims == 2);
        CHECK(h.expired(conntrack::Reason::active) >= 1);
    }
    SECTION("an inactivity timeout that falls on a boundary ends it, unreported")
    {
        InterimHarness t(kInterval);
        Harness& h = *t.h;
        h.send(client, server, kSyn); // SYN_SENT: 120 s timeout, the second boundary
        h.run_for(125);
        const auto all = t.take();
        CHECK(InterimHarness::of(all, events::Kind::interim).empty());
        const auto ended = InterimHarness::of(all, events::Kind::destroyed);
        REQUIRE(ended.size() == 1);
        CHECK(ended[0].reason_code == static_cast<uint8_t>(conntrack::Reason::inactivity));
        CHECK(h.c().cop_fired == 1);
    }
    SECTION("an RST-marked flow ends on the next tick, not as a report")
    {
        InterimHarness t(kInterval);
        Harness& h = *t.h;
        h.handshake(client, server);
        h.now += 59 * kSec;
        h.send(client, server, kAck);
        h.send(server, client, kRst);
        h.run_for(5);
        const auto all = t.take();
        CHECK(InterimHarness::of(all, events::Kind::interim).empty());
        const auto ended = InterimHarness::of(all, events::Kind::destroyed);
        REQUIRE(ended.size() == 1);
        CHECK(ended[0].reason_code == static_cast<uint8_t>(conntrack::Reason::reset));
    }
}

TEST_CASE("without an interval there are no reports and the wheel works as before")
{
    InterimHarness t(0);
    Harness& h = *t.h;
    h.handshake(client, server);
    for (int s = 0; s < 200; ++s) {
        h.now += kSec;
        h.send(client, server, kAck);
        h.cop();
    }
    CHECK(InterimHarness::of(t.take(), events::Kind::interim).empty());
    CHECK(h.c().interim_reports == 0);
    // A busy established flow is not due for days: at most one visit, the lazy re-link of the deadline
    // it was armed with during the handshake (SYN_SENT's 120 s).
    CHECK(h.c().cop_visited <= 1);
    CHECK(h.c().cop_fired == 0);
}

TEST_CASE("many long flows: every report is on time and the counts add up")
{
    InterimHarness t(10);
    Harness& h = *t.h;
    constexpr int kFlows = 500;
    std::vector<Ep> clients;
    static std::vector<std::string> addrs;
    addrs.clear();
    for (int i = 0; i < kFlows; ++i)
        addrs.push_back("10.1." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 1));
    for (int i = 0; i < kFlows; ++i) {
        clients.push_back({addrs[i].c_str(), uint16_t(20000 + i)});
        h.handshake(clients.back(), server);
    }
    for (int s = 0; s < 35; ++s) {
        h.now += kSec;
        for (const Ep& c : clients)
            h.send(c, server, kAck);
        h.cop();
        t.take(); // keep the ring from filling
    }
    CHECK(h.c().interim_reports == 3 * kFlows); // at 10, 20 and 30 s
    CHECK(h.c().expired_total() == 0);
    CHECK(h.live_flows() == kFlows);
}

TEST_CASE("every event of a flow carries the port its first packet arrived on (IPFIX ingressInterface)")
{
    InterimHarness t;
    Harness& h = *t.h;
    h.in_port = 7;
    h.send(client, server, kSyn);
    h.in_port = 3; // the reply and later packets on another port: the flow keeps its first packet's
    h.send(server, client, kSyn | kAck);
    h.send(client, server, kAck);
    for (int s = 0; s < 70; ++s) {
        h.now += kSec;
        h.send(client, server, kAck, 10);
        h.cop();
    }
    h.in_port = 2;
    h.send(Ep{"10.9.9.9", 4000}, server, kSyn); // another flow, first seen on port 2
    h.table->destroy_all(h.now, conntrack::Reason::shutdown);
    const auto all = t.take();
    REQUIRE(all.size() == 5); // two created, one interim, two destroyed
    for (const auto& e : all) {
        CHECK((e.present & events::kHasInPort) != 0);
        CHECK(e.in_port == (e.sport == 4000 ? 2 : 7));
    }
}
