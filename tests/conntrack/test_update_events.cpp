// SPDX-License-Identifier: BSD-3-Clause
// Update events (issue 17, conntrack -E's UPDATE): made on the packet that changes a flow's state or
// status (its first reply, assured), with the flow id its new and destroy events carry; never on a steady
// packet, an invalid one, or for a subscriber that does not take them.
#include <events/stream.h>

#include <catch2/catch.hpp>

#include "frame_builder.h"
#include "harness.h"

using namespace flowcop;
using namespace flowcop::test;
using events::Kind;

namespace {

// A table whose events go to one subscription of `kinds`.
struct EventHarness {
    explicit EventHarness(events::KindMask kinds = events::kAllKinds)
    {
        std::string error;
        stream = events::Stream::create(1, error);
        REQUIRE(stream);
        sub = stream->subscribe("test", kinds, 4095, error);
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

TEST_CASE("Out-of-window and invalid segments make no update", "[conntrack][update_events]")
{
    EventHarness t;
    Harness& h = t.h;
    h.handshake(client, server);
    const size_t after_handshake = t.take().size();
    CHECK(after_handshake >= 3);
    h.send(tcp_frame(client, server, kAck, 10, 0, 0x80000000u, h.next_seq(server, client))); // out of window
    h.send(tcp_frame(client, server, kSyn | kFin, 0, 0, h.next_seq(client, server), 0));     // invalid flags
    h.send(client, server, kAck | kPsh, 10);
    CHECK(t.take().empty());
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
