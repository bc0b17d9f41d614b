// SPDX-License-Identifier: BSD-3-Clause
// RSTs (window.h): refused below the receiver's highest ack, ending an assured ESTABLISHED flow only at
// exactly that ack or right after the sender's last segment, keeping the state (challenge ACK) for
// any other in-window RST, unchecked in the closing states; an RST answering a SYN.
#include <catch2/catch.hpp>

#include "window_test_util.h"

using namespace wtest;

namespace {
// An assured, ESTABLISHED flow with 300 bytes each way, all acknowledged.
Handshake talked()
{
    Handshake h;
    REQUIRE(h.client_data(300).outcome == Outcome::ok);
    REQUIRE(h.server_data(300).outcome == Outcome::ok);
    REQUIRE(h.client_ack().outcome == Outcome::ok);
    REQUIRE(h.tracker_assured());
    return h;
}
} // namespace

TEST_CASE("an RST at exactly the receiver's highest ack ends the flow", "[tcpstate][window][rst]")
{
    for (const uint8_t flags : {kRst, kRstack}) {
        Handshake h = talked();
        CHECK(h.f.send(kR, seg(h.s.nxt, h.c.nxt, flags)).outcome == Outcome::reset); // server: client acked s.nxt
        CHECK(h.f.state() == State::close);
    }
    Handshake h = talked();
    REQUIRE(h.server_ack().outcome == Outcome::ok); // the server has acked all the client sent
    CHECK(h.f.send(kO, seg(h.c.nxt, 0, kRst)).outcome == Outcome::reset);
}

// RFC 5961 3.2: an in-window RST that is not exact gets a challenge ACK; netfilter keeps the state and
// shortens the timeout to CLOSE's until the challenge ACK refreshes it. The RST's end counts as sent
// (netfilter's td_end rule), so until the server's data passes it the flow keeps the unacknowledged
// cap: 300 s, not 10 s nor 5 days.
TEST_CASE("an in-window RST off the exact sequence keeps ESTABLISHED for a challenge ACK", "[tcpstate][window][rst]")
{
    Handshake h = talked();
    const auto r = h.f.send(kR, seg(h.s.nxt + 1000, h.c.nxt, kRst));
    CHECK(r.outcome == Outcome::ok);
    CHECK(h.f.state() == State::established);
    CHECK(h.f.cap() == Cap::close);
    CHECK(h.f.timeout() == 10);
    REQUIRE(h.client_ack().outcome == Outcome::ok); // the challenge ACK
    CHECK(h.f.cap() == Cap::unacknowledged);
    REQUIRE(h.server_data(2000).outcome == Outcome::ok);
    REQUIRE(h.client_ack().outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::none);
}

TEST_CASE("an RST before the receiver's highest ack is refused", "[tcpstate][window][rst]")
{
    Handshake h = talked();
    const Tracker t = h.f.tracker;
    const auto r = h.f.send(kR, seg(h.s.nxt - 1, h.c.nxt, kRst));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(r.reason == WindowReason::rst_below_ack);
    CHECK(h.f.tracker.state == t.state);
    CHECK(flowcop::tcpstate::netfilter_counts_invalid(r.reason));
    // --tcp-ignore-invalid-rst: not refused for that, but not exact either: the state stays.
    h.f.policy.ignore_invalid_rst = true;
    CHECK(h.f.send(kR, seg(h.s.nxt - 1, h.c.nxt, kRst)).outcome == Outcome::ok);
    CHECK(h.f.state() == State::established);
}

TEST_CASE("an RST far outside the window is refused", "[tcpstate][window][rst]")
{
    Handshake h = talked();
    const auto r = h.f.send(kR, seg(h.s.nxt + (1u << 30), h.c.nxt, kRst));
    CHECK(r.outcome == Outcome::out_of_window);
    CHECK(r.reason == WindowReason::seq_above_window);
    CHECK(h.f.state() == State::established);
}

// netfilter's "RST train": data, then an RST at the end of that data, from the same side, before the
// peer acked it (so not at the peer's highest ack).
TEST_CASE("an RST right after the sender's last segment ends the flow", "[tcpstate][window][rst]")
{
    Handshake h = talked();
    REQUIRE(h.server_data(19).outcome == Outcome::ok);
    CHECK(h.f.send(kR, seg(h.s.nxt, h.c.nxt, kRst)).outcome == Outcome::reset);
}

// In the closing states netfilter does not check RSTs at all: the tuple may already be reused.
TEST_CASE("RSTs in the closing states are accepted unchecked", "[tcpstate][window][rst]")
{
    Handshake h = talked();
    REQUIRE(h.f.send(kO, h.c.send(kFinack)).outcome == Outcome::ok);
    REQUIRE(h.f.state() == State::fin_wait);
    CHECK(h.f.send(kR, seg(12345, 0, kRst)).outcome == Outcome::reset);
}

// A closed port answers a SYN with RST+ACK, seq 0 and ack = ISN + 1: accepted. One with a wrong ack
// (a blind spoof against the SYN) is refused.
TEST_CASE("an RST answering a SYN is accepted only with the SYN's ack", "[tcpstate][window][rst]")
{
    {
        Wflow f;
        f.create(seg(1000, 0, kSyn));
        CHECK(f.send(kR, seg(0, 1001, kRstack, 0, 0)).outcome == Outcome::reset);
    }
    {
        Wflow f;
        f.create(seg(1000, 0, kSyn));
        const auto r = f.send(kR, seg(0, 77777, kRstack, 0, 0));
        CHECK(r.outcome == Outcome::out_of_window);
        CHECK(r.reason == WindowReason::ack_above_sent);
        CHECK(f.state() == State::syn_sent);
    }
}

// --tcp-be-liberal: segments outside the window are accepted (and move the state), RSTs below the
// receiver's ack are still refused.
TEST_CASE("liberal mode accepts out-of-window segments but not invalid RSTs", "[tcpstate][window][liberal]")
{
    Handshake h = talked();
    h.f.policy.be_liberal = true;
    CHECK(h.f.send(kO, seg(h.c.nxt + 200000, h.s.nxt, kData, 10)).outcome == Outcome::ok);
    CHECK(h.f.send(kR, seg(h.s.nxt - 1, h.c.nxt, kRst)).reason == WindowReason::rst_below_ack);
    CHECK(h.f.send(kO, seg(h.c.nxt + 300000, h.s.nxt, kFinack)).outcome == Outcome::ok);
    CHECK(h.f.state() == State::fin_wait);
}
