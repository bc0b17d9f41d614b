// SPDX-License-Identifier: BSD-3-Clause
// Update events (issue 17, conntrack -E's UPDATE): made on the packet that changes a flow's state or
// status (its first reply, assured), or that the flow refused (invalid for its state, out of its window:
// at most --events-invalid-rate a second per lcore), with the flow id its new and destroy events carry;
// never on a steady packet, or for a subscriber that does not take them.
#include <conntrack/event_budget.h>
#include <events/stream.h>
#include <tcpstate/window.h>

#include <catch2/catch.hpp>

#include "frame_builder.h"
#include "harness.h"

using namespace flowcop;
using namespace flowcop::test;
using events::Kind;

namespace {

// A table whose events go to one subscription of `kinds`.
struct EventHarness {
    explicit EventHarness(events::KindMask kinds = events::kAllKinds,
                          const conntrack::TableConfig& config = small_config(),
                          const events::ProtoSet& protos = events::ProtoSet{})
        : h(config)
    {
        std::string error;
        stream = events::Stream::create(1, error);
        REQUIRE(stream);
        sub = stream->subscribe("test", kinds, 4095, error, protos);
        REQUIRE(sub);
        h.table->set_events(&stream->producer(0));
    }
    std::vector<events::Event> take()
    {
        std::vector<events::Event> out(4096);
        unsigned left = 0;
        out.resize(sub->take(0, out.data(), unsigned(out.size()), left));
        return out;
    }
    std::unique_ptr<events::Stream> stream;
    events::Subscription* sub = nullptr;
    Harness h;
};

std::string describe(const events::Event& e)
{
    static const char* const kKinds[] = {"new", "destroy", "interim", "update"};
    std::string s = std::string(kKinds[static_cast<unsigned>(e.kind)]) + " " + (e.state ? e.state : "null");
    if (e.kind == Kind::updated)
        s += std::string((e.status & events::kStatusSeenReply) ? " SEEN_REPLY" : " UNREPLIED") +
             ((e.status & events::kStatusAssured) ? " ASSURED" : "");
    return s;
}

std::vector<std::string> describe(const std::vector<events::Event>& all)
{
    std::vector<std::string> out;
    for (const auto& e : all)
        out.push_back(describe(e));
    return out;
}

} // namespace

TEST_CASE("A TCP handshake, data and close: new, an update per transition, destroy, one flow id",
          "[conntrack][update_events]")
{
    EventHarness t;
    Harness& h = t.h;
    h.handshake(client, server);
    for (int i = 0; i < 50; ++i) { // steady packets both ways: no event
        h.send(client, server, kAck | kPsh, 100);
        h.send(server, client, kAck | kPsh, 100);
    }
    h.send(client, server, kFin | kAck);
    h.send(server, client, kFin | kAck);
    h.send(client, server, kAck);
    h.run_for(130);
    const auto all = t.take();
    CHECK(describe(all) == std::vector<std::string>{
                               "new SYN_SENT", "update SYN_RECV SEEN_REPLY", "update ESTABLISHED SEEN_REPLY ASSURED",
                               "update FIN_WAIT SEEN_REPLY ASSURED", "update LAST_ACK SEEN_REPLY ASSURED",
                               "update TIME_WAIT SEEN_REPLY ASSURED", "destroy TIME_WAIT"});
    REQUIRE(!all.empty());
    for (const auto& e : all) {
        CHECK(e.flow_id == all.front().flow_id);
        CHECK((e.present & events::kHasFlowId));
        CHECK((e.present & events::kHasStatus));
    }
}

namespace {

// 200000 bytes past what the server allowed (a 65535-byte window, no scaling): seq_above_window.
std::vector<uint8_t> beyond_window(Harness& h)
{
    return tcp_frame(client, server, kAck, 10, 0, h.next_seq(client, server) + 200000, h.next_seq(server, client));
}
// SYN and FIN together: not valid in any state.
std::vector<uint8_t> invalid_for_state(Harness& h)
{
    return tcp_frame(client, server, kSyn | kFin, 0, 0, h.next_seq(client, server), 0);
}

conntrack::TableConfig with_invalid_rate(uint32_t rate)
{
    conntrack::TableConfig c = small_config();
    c.invalid_event_rate = rate;
    return c;
}

} // namespace

// The window-tracking issue's invalid transitions reach conntrack -E as updates (issue 17): the flow's
// unchanged state and status, and the counters' word for why.
TEST_CASE("An out-of-window segment and one invalid for the state each make one update saying why",
          "[conntrack][update_events]")
{
    EventHarness t;
    Harness& h = t.h;
    h.handshake(client, server);
    const auto handshake = t.take();
    REQUIRE(handshake.size() >= 3);
    h.send(beyond_window(h));
    h.send(invalid_for_state(h));
    h.send(client, server, kAck | kPsh, 10); // a steady packet: nothing
    REQUIRE(h.c().tcp_out_of_window[unsigned(tcpstate::WindowReason::seq_above_window)] == 1);
    REQUIRE(h.c().tcp_invalid == 1);
    const auto all = t.take();
    CHECK(describe(all) ==
          std::vector<std::string>{"update ESTABLISHED SEEN_REPLY ASSURED", "update ESTABLISHED SEEN_REPLY ASSURED"});
    REQUIRE(all.size() == 2);
    for (const auto& e : all) {
        CHECK(e.flow_id == handshake.front().flow_id);
        CHECK((e.present & events::kHasInvalid));
        CHECK(e.proto == 6);
    }
    CHECK(std::string(all[0].reason) == "seq_above_window");
    CHECK(all[0].reason_code == unsigned(tcpstate::WindowReason::seq_above_window));
    CHECK(std::string(all[1].reason) == "tcp_invalid_for_state");
    CHECK(all[1].reason_code == 0);
    // The JSON line says it in `invalid`; a state change's update has no such key.
    char line[events::kTypicalMaxLine];
    const size_t n = events::format_json_line(all[0], line, sizeof line);
    REQUIRE(n > 0);
    CHECK(std::string(line, n).find(
              R"("flags":["SEEN_REPLY","ASSURED"],"invalid":"seq_above_window","packets_orig")") != std::string::npos);
    const size_t m = events::format_json_line(handshake[1], line, sizeof line);
    CHECK(std::string(line, m).find("invalid") == std::string::npos);
    CHECK(h.c().events_invalid_suppressed == 0);
}

// A flood of forged segments must not flood the stream: the lcore's bucket passes its rate a second after
// a burst of as many, and counts the rest.
TEST_CASE("Invalid segments' updates stop at the lcore's rate, and the rest are counted", "[conntrack][update_events]")
{
    EventHarness t(events::kAllKinds, with_invalid_rate(3));
    Harness& h = t.h;
    h.handshake(client, server);
    t.take();
    for (int i = 0; i < 10; ++i)
        h.send(invalid_for_state(h));
    CHECK(t.take().size() == 3); // the burst
    CHECK(h.c().events_invalid_suppressed == 7);
    CHECK(h.c().tcp_invalid == 10); // counted as before, every one
    h.now += kSec / 3 + 1;          // a third of a second: one token
    h.send(invalid_for_state(h));
    h.send(invalid_for_state(h));
    CHECK(t.take().size() == 1);
    CHECK(h.c().events_invalid_suppressed == 8);
    h.now += 5 * kSec; // a whole second or more refills the burst, no more
    for (int i = 0; i < 5; ++i)
        h.send(beyond_window(h));
    CHECK(t.take().size() == 3);
    CHECK(h.c().events_invalid_suppressed == 10);
}

TEST_CASE("--events-invalid-rate 0 makes no invalid segment's update, and counts each", "[conntrack][update_events]")
{
    EventHarness t(events::kAllKinds, with_invalid_rate(0));
    Harness& h = t.h;
    h.handshake(client, server);
    const size_t handshake = t.take().size();
    CHECK(handshake >= 3); // state changes still make updates
    h.send(invalid_for_state(h));
    h.send(beyond_window(h));
    CHECK(t.take().empty());
    CHECK(h.c().events_invalid_suppressed == 2);
}

// The bucket is spent, and suppressions counted, only for events some subscriber would take.
TEST_CASE("No subscriber of TCP updates: no invalid segment's update is built or counted", "[conntrack][update_events]")
{
    SECTION("a subscriber of new and destroy")
    {
        EventHarness t(events::kind_bit(Kind::created) | events::kind_bit(Kind::destroyed), with_invalid_rate(1));
        t.h.handshake(client, server);
        for (int i = 0; i < 5; ++i)
            t.h.send(invalid_for_state(t.h));
        CHECK(describe(t.take()) == std::vector<std::string>{"new SYN_SENT"});
        CHECK(t.sub->offered(0) == 1);
        CHECK(t.h.c().events_invalid_suppressed == 0);
    }
    SECTION("a subscriber of UDP's updates only")
    {
        events::ProtoSet udp = events::ProtoSet::none();
        udp.add(17);
        EventHarness t(events::kAllKinds, with_invalid_rate(1), udp);
        t.h.handshake(client, server);
        for (int i = 0; i < 5; ++i)
            t.h.send(invalid_for_state(t.h));
        CHECK(t.take().empty());
        CHECK(t.h.c().events_invalid_suppressed == 0);
    }
}

TEST_CASE("EventBudget: a burst of its rate, a token per 1/rate s, nothing for a clock step back",
          "[conntrack][update_events]")
{
    conntrack::EventBudget b(2);
    CHECK(b.take(kStart));
    CHECK(b.take(kStart));
    CHECK_FALSE(b.take(kStart));
    CHECK_FALSE(b.take(kStart + kSec / 2 - 1)); // not yet a whole token
    CHECK(b.take(kStart + kSec / 2));
    CHECK_FALSE(b.take(kStart - 10 * kSec)); // back: nothing granted for it
    CHECK_FALSE(b.take(kStart - 10 * kSec + kSec / 2 - 1));
    CHECK(b.take(kStart - 10 * kSec + kSec / 2)); // and time counts again from there
    CHECK(b.take(UINT64_MAX));                    // any gap refills at most the burst
    CHECK(b.take(UINT64_MAX));
    CHECK_FALSE(b.take(UINT64_MAX));
    conntrack::EventBudget none(0);
    CHECK_FALSE(none.take(kStart));
    CHECK_FALSE(none.take(UINT64_MAX));
}

TEST_CASE("UDP: an update when the first reply comes, none for steady packets", "[conntrack][update_events]")
{
    EventHarness t;
    Harness& h = t.h;
    const auto query = FrameBuilder()
                           .ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.53")})
                           .udp({.sport = 40000, .dport = 53})
                           .payload(20)
                           .build();
    const auto answer = FrameBuilder()
                            .ipv4({.src = ip4("10.0.0.53"), .dst = ip4("10.0.0.1")})
                            .udp({.sport = 53, .dport = 40000})
                            .payload(60)
                            .build();
    h.send(query);
    h.send(query);
    h.send(answer);
    h.send(answer);
    h.send(query);
    const auto all = t.take();
    CHECK(describe(all) == std::vector<std::string>{"new UNREPLIED", "update REPLIED SEEN_REPLY"});
    REQUIRE(all.size() == 2);
    CHECK(all[1].flow_id == all[0].flow_id);
}

TEST_CASE("A subscriber of new and destroy gets no update, and none is built for it", "[conntrack][update_events]")
{
    EventHarness t(events::kind_bit(Kind::created) | events::kind_bit(Kind::destroyed));
    Harness& h = t.h;
    h.handshake(client, server);
    h.table->kill(h.key(client, server));
    h.run_for(1);
    CHECK(describe(t.take()) == std::vector<std::string>{"new SYN_SENT", "destroy ESTABLISHED"});
    CHECK(t.sub->offered(0) == 2);
    CHECK_FALSE(t.stream->producer(0).wants(Kind::updated));
}
