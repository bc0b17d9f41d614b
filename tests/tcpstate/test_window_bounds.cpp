// SPDX-License-Identifier: BSD-3-Clause
// window.h's four bounds, each at its edge, the sequence type's wraparound, and the overshoot rule.
// Client ISN 1000000, server ISN 5000000, windows 65535 unscaled: after the handshake the client may
// send up to 1000001 + 65535 and must end no lower than its end - 65535; its acks must lie in
// [5000001 - 66000, 5000001] (MAXACKWINCONST, since 65535 < 66000).
#include <catch2/catch.hpp>

#include <tcpstate/seq.h>

#include "window_test_util.h"

using namespace wtest;
using flowcop::tcpstate::after;
using flowcop::tcpstate::before;

// Wraparound order is what every bound relies on (RFC 1982; Linux's before()/after()).
TEST_CASE("Seq compares modulo 2^32", "[tcpstate][window][seq]")
{
    CHECK(before(Seq(1), Seq(2)));
    CHECK(before(Seq(0xffffffffu), Seq(0)));
    CHECK(after(Seq(5), Seq(0xfffffff0u)));
    CHECK_FALSE(before(Seq(7), Seq(7)));
    CHECK_FALSE(after(Seq(7), Seq(7)));
    CHECK(before(Seq(0), Seq(0x7fffffffu)));
    CHECK(after(Seq(0), Seq(0x80000001u)));
    CHECK((Seq(0xfffffffeu) + 5).raw == 3u);
    CHECK((Seq(3) - 5).raw == 0xfffffffeu);
    CHECK(Seq(3) - Seq(0xfffffffeu) == 5u);
}

namespace {
constexpr uint32_t kC = 1000000, kS = 5000000;
constexpr uint32_t kCEnd = kC + 1, kSEnd = kS + 1; // after the handshake
} // namespace

// I: seq <= sender maxend (ack + window of the receiver). One past it, by less than the receiver's
// largest window, is an overshoot (end learnt, segment refused); further is seq_above_window.
TEST_CASE("bound I: a segment may start at most at the receiver's window edge", "[tcpstate][window]")
{
    {
        Handshake h(kC, kS);
        CHECK(h.f.send(kO, seg(kCEnd + 65535, kSEnd, kData, 10)).outcome == Outcome::ok);
    }
    {
        Handshake h(kC, kS);
        const auto r = h.f.send(kO, seg(kCEnd + 65536, kSEnd, kData, 10));
        CHECK(r.outcome == Outcome::out_of_window);
        CHECK(r.reason == WindowReason::seq_overshoot);
        CHECK(h.f.seq.side[0].end.raw == kCEnd + 65546); // learnt, so the receiver's ACK of it passes III
        CHECK(h.f.send(kR, seg(kSEnd, kCEnd + 65546, kAck)).outcome == Outcome::ok);
    }
    {
        Handshake h(kC, kS);
        const auto r = h.f.send(kO, seg(kCEnd + 65535 + 65536, kSEnd, kData, 10));
        CHECK(r.outcome == Outcome::out_of_window);
        CHECK(r.reason == WindowReason::seq_above_window);
        CHECK(h.f.seq.side[0].end.raw == kCEnd); // not learnt
    }
}

// II: end >= sender end - receiver maxwin: data older than a whole window is an old duplicate.
TEST_CASE("bound II: a segment must end within a window of the sender's end", "[tcpstate][window]")
{
    Handshake h(kC, kS);
    CHECK(h.f.send(kO, seg(kCEnd - 65535 - 10, kSEnd, kData, 10)).outcome == Outcome::ok);
    const auto r = h.f.send(kO, seg(kCEnd - 65536 - 10, kSEnd, kData, 10));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(r.reason == WindowReason::seq_below_window);
    CHECK_FALSE(flowcop::tcpstate::netfilter_counts_invalid(r.reason)); // netfilter ignores it silently
}

// III: an ACK may not acknowledge what the other side has not sent.
TEST_CASE("bound III: an ack may not pass the other side's end", "[tcpstate][window]")
{
    Handshake h(kC, kS);
    CHECK(h.f.send(kO, seg(kCEnd, kSEnd, kAck)).outcome == Outcome::ok);
    const auto r = h.f.send(kO, seg(kCEnd, kSEnd + 1, kAck));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(r.reason == WindowReason::ack_above_sent);
    CHECK(flowcop::tcpstate::netfilter_counts_invalid(r.reason));
}

// IV: an ACK more than max(sender maxwin, 66000) behind the other side's end is too old.
TEST_CASE("bound IV: an ack may lag the other side's end by at most MAXACKWINDOW", "[tcpstate][window]")
{
    Handshake h(kC, kS);
    CHECK(h.f.send(kO, seg(kCEnd, kSEnd - 66000, kAck)).outcome == Outcome::ok);
    const auto r = h.f.send(kO, seg(kCEnd, kSEnd - 66001, kAck));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(r.reason == WindowReason::ack_below_window);
}

// An out-of-window segment changes neither the state nor the timeout cap: a FIN outside the window
// does not start the close.
TEST_CASE("an out-of-window FIN neither moves the state nor the cap", "[tcpstate][window]")
{
    Handshake h(kC, kS);
    const Tracker before_t = h.f.tracker;
    const uint8_t cap_before = h.f.meta.cap;
    const auto r = h.f.send(kO, seg(kCEnd + 200000, kSEnd, kFinack));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(h.f.tracker.state == before_t.state);
    CHECK(h.f.tracker.flags == before_t.flags);
    CHECK(h.f.meta.cap == cap_before);
}

// A connection whose sequence numbers cross 2^32 in both directions keeps every segment in the window,
// and the bounds still hold on the far side of the wrap.
TEST_CASE("sequence numbers wrapping at 2^32 stay in the window", "[tcpstate][window][wrap]")
{
    Handshake h(0xffffff00u, 0xfffffff0u);
    for (int i = 0; i < 10; ++i) {
        CAPTURE(i);
        REQUIRE(h.client_data(100).outcome == Outcome::ok);
        REQUIRE(h.server_data(7).outcome == Outcome::ok);
        REQUIRE(h.client_ack().outcome == Outcome::ok);
        REQUIRE(h.server_ack().outcome == Outcome::ok);
    }
    CHECK(h.c.nxt < 0x1000u); // both really wrapped
    CHECK(h.s.nxt < 0x100u);
    // Across the wrap: an ack one past what the server sent, and data a window and more ahead.
    CHECK(h.f.send(kO, seg(h.c.nxt, h.s.nxt + 1, kAck)).reason == WindowReason::ack_above_sent);
    CHECK(h.f.send(kO, seg(h.c.nxt + 65535 + 65536, h.s.nxt, kData, 1)).reason == WindowReason::seq_above_window);
    CHECK(h.f.send(kO, seg(h.c.nxt - 65536 - 10, h.s.nxt, kData, 10)).reason == WindowReason::seq_below_window);
    CHECK(h.f.send(kO, seg(h.c.nxt - 200, h.s.nxt, kData, 100)).outcome == Outcome::ok); // a retransmission
}

// Keep-alive probes (seq one below the next, RFC 1122 4.2.3.6) and their ACKs are in the window and,
// answered, do not count as retransmissions.
TEST_CASE("keep-alive probes and their answers stay in the window", "[tcpstate][window]")
{
    Handshake h(kC, kS);
    REQUIRE(h.client_data(50).outcome == Outcome::ok);
    REQUIRE(h.server_ack().outcome == Outcome::ok);
    for (int i = 0; i < 6; ++i) {
        CAPTURE(i);
        CHECK(h.f.send(kO, seg(h.c.nxt - 1, h.s.nxt, kAck)).outcome == Outcome::ok);
        CHECK(h.f.send(kR, seg(h.s.nxt, h.c.nxt, kAck)).outcome == Outcome::ok);
    }
    CHECK(h.f.cap() == Cap::none);
    CHECK(h.f.state() == State::established);
}
