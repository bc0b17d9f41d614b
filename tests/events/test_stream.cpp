// SPDX-License-Identifier: BSD-3-Clause
// The stream's fan-out: each subscriber gets the kinds it asked for, through its own ring, and its
// losses are its own (issue 18: the IPFIX exporter beside the JSON writer; issue 17: live followers).
#include <events/stream.h>

#include <catch2/catch.hpp>

#include "helpers.h"

using namespace flowcop::events;
using namespace flowcop::events::test;

namespace {

Event of_kind(Kind k, uint64_t seq)
{
    Event e = numbered_event(0, seq);
    e.kind = k;
    return e;
}

std::vector<uint64_t> take_all(Subscription& s, unsigned producer)
{
    std::vector<uint64_t> seqs;
    Event ev[16];
    unsigned left = 0;
    for (unsigned n; (n = s.take(producer, ev, 16, left)) > 0;)
        for (unsigned i = 0; i < n; ++i)
            seqs.push_back(ev[i].packets[0]);
    return seqs;
}

} // namespace

TEST_CASE("Each subscriber receives exactly the kinds it subscribed to, in emit order", "[events][stream]")
{
    auto stream = make_stream(1);
    std::string error;
    Subscription* all = stream->subscribe("all", kAllKinds, 15, error);
    Subscription* ends = stream->subscribe("ends", kind_bit(Kind::destroyed), 15, error);
    REQUIRE(all);
    REQUIRE(ends);
    for (uint64_t seq = 0; seq < 6; ++seq)
        CHECK(stream->producer(0).emit(of_kind(seq % 2 ? Kind::destroyed : Kind::created, seq)));
    CHECK(take_all(*all, 0) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5});
    CHECK(take_all(*ends, 0) == std::vector<uint64_t>{1, 3, 5});
    CHECK(all->offered(0) == 6);
    CHECK(ends->offered(0) == 3);
    CHECK(all->dropped_full(0) + ends->dropped_full(0) == 0);
}

// A slow consumer must cost the others nothing: its full ring drops only its own copies.
TEST_CASE("A full subscriber ring drops and counts only for that subscriber", "[events][stream]")
{
    auto stream = make_stream(2);
    std::string error;
    Subscription* small = stream->subscribe("small", kAllKinds, 4, error);
    Subscription* large = stream->subscribe("large", kAllKinds, 63, error);
    REQUIRE(small);
    REQUIRE(large);
    unsigned fully_accepted = 0;
    for (uint64_t seq = 0; seq < 10; ++seq)
        fully_accepted += stream->producer(1).emit(of_kind(Kind::destroyed, seq));
    CHECK(fully_accepted == 4); // emit() says false once any ring refused
    CHECK(small->dropped_full(1) == 6);
    CHECK(large->dropped_full(1) == 0);
    CHECK(take_all(*small, 1) == std::vector<uint64_t>{0, 1, 2, 3});
    CHECK(take_all(*large, 1).size() == 10);
    CHECK(small->offered(0) == 0); // the other lcore's books are untouched
    CHECK(take_all(*large, 0).empty());
}

TEST_CASE("An emit with no subscriber is accepted and goes nowhere", "[events][stream]")
{
    auto stream = make_stream(1);
    CHECK(stream->producer(0).emit(of_kind(Kind::created, 0)));
}

TEST_CASE("subscribe refuses bad rings, empty kind sets and a fifth subscriber, saying who", "[events][stream]")
{
    auto stream = make_stream(1);
    std::string error;
    CHECK(stream->subscribe("ipfix", kAllKinds, 0, error) == nullptr);
    CHECK(error == "ipfix: ring size 0 is outside 1..16777216 events");
    CHECK(stream->subscribe("ipfix", 0, 15, error) == nullptr);
    CHECK(error == "ipfix: subscribes to no event kind");
    for (unsigned i = 0; i < kMaxSubscribers; ++i)
        REQUIRE(stream->subscribe("s" + std::to_string(i), kAllKinds, 15, error));
    CHECK(stream->subscribe("one too many", kAllKinds, 15, error) == nullptr);
    CHECK(error == "one too many: the event stream already has 4 subscribers");
}

// Issue 17's --events-filter: a subscriber of some protocols gets only theirs; the others cost it no
// ring slot and are not offered to it.
TEST_CASE("A subscriber's protocol set filters at the source", "[events][stream]")
{
    auto stream = make_stream(1);
    std::string error;
    ProtoSet udp = ProtoSet::none();
    CHECK(udp.empty());
    udp.add(17);
    CHECK(udp.has(17));
    CHECK_FALSE(udp.has(6));
    CHECK_FALSE(udp.all());
    CHECK(ProtoSet{}.all());
    Subscription* only_udp = stream->subscribe("udp", kAllKinds, 3, error, udp);
    Subscription* all = stream->subscribe("all", kAllKinds, 63, error);
    REQUIRE(only_udp);
    REQUIRE(all);
    for (uint64_t seq = 0; seq < 30; ++seq) {
        Event e = of_kind(Kind::created, seq);
        e.proto = seq == 7 || seq == 20 ? 17 : (seq % 2 ? 6 : 255);
        stream->producer(0).emit(e);
    }
    CHECK(take_all(*only_udp, 0) == std::vector<uint64_t>{7, 20});
    CHECK(only_udp->offered(0) == 2);
    CHECK(only_udp->dropped_full(0) == 0); // 28 other events never reached its 3-event ring
    CHECK(take_all(*all, 0).size() == 30);
    CHECK(stream->subscribe("none", kAllKinds, 3, error, ProtoSet::none()) == nullptr);
    CHECK(error == "none: subscribes to no IP protocol");
}

// Issue 17's live follower: paused (kinds 0) while nobody follows, so the lcore builds no event for it.
TEST_CASE("set_kinds pauses and narrows a subscription at run time; wants() says whether anyone takes a kind",
          "[events][stream]")
{
    auto stream = make_stream(2);
    std::string error;
    Subscription* follow = stream->subscribe("follow", kAllKinds, 15, error);
    REQUIRE(follow);
    Producer& p = stream->producer(1);
    CHECK(p.wants(Kind::created));
    follow->set_kinds(0);
    CHECK_FALSE(p.wants(Kind::created));
    CHECK_FALSE(p.wants(Kind::destroyed));
    CHECK(p.emit(of_kind(Kind::created, 0)));
    CHECK(follow->offered(1) == 0); // not offered: nothing lost while paused
    follow->set_kinds(kind_bit(Kind::destroyed) | kind_bit(Kind::created));
    CHECK(p.wants(Kind::created));
    follow->set_kinds(kind_bit(Kind::destroyed));
    CHECK_FALSE(p.wants(Kind::created));
    CHECK(p.wants(Kind::destroyed));
    p.emit(of_kind(Kind::created, 1));
    p.emit(of_kind(Kind::destroyed, 2));
    CHECK(take_all(*follow, 1) == std::vector<uint64_t>{2});
    // Never more than it subscribed to.
    Subscription* ends = stream->subscribe("ends", kind_bit(Kind::destroyed), 15, error);
    REQUIRE(ends);
    ends->set_kinds(kAllKinds);
    follow->set_kinds(0);
    CHECK_FALSE(p.wants(Kind::created));
}
