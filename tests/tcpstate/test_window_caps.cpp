// SPDX-License-Identifier: BSD-3-Clause
// Timeout caps (window.h, Cap) in netfilter's order: retransmissions, unacknowledged data, a zero
// window, and a picked-up flow that has seen no reply.
#include <catch2/catch.hpp>

#include "window_test_util.h"

using namespace wtest;

// The original and three identical copies (--tcp-max-retrans 3): the fourth capped at 300 s; an ACK
// that makes progress lifts the cap.
TEST_CASE("max_retrans identical segments cap the timeout until progress", "[tcpstate][window][retrans]")
{
    Handshake h;
    const Segment d = h.c.send(kData, 100);
    for (int copy = 0; copy <= 3; ++copy) {
        CAPTURE(copy);
        REQUIRE(h.f.send(kO, d).outcome == Outcome::ok);
        CHECK(h.f.cap() == (copy < 3 ? Cap::unacknowledged : Cap::max_retrans));
    }
    CHECK(h.f.timeout() == 300);
    h.s.got(d);
    REQUIRE(h.server_ack().outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::none);
    CHECK(h.f.timeout() == 432000);
}

// --tcp-max-retrans is the policy's, not a constant.
TEST_CASE("the retransmission threshold follows the policy", "[tcpstate][window][retrans]")
{
    Handshake h;
    h.f.policy.max_retrans = 1;
    REQUIRE(h.client_data(10).outcome == Outcome::ok);
    const Segment a = h.s.send(kAck);
    REQUIRE(h.f.send(kR, a).outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::none);
    REQUIRE(h.f.send(kR, a).outcome == Outcome::ok); // a duplicate ACK
    CHECK(h.f.cap() == Cap::max_retrans);
}

// Data in flight caps the timeout at the unacknowledged timeout; the ACK of all of it lifts the cap.
TEST_CASE("unacknowledged data caps the timeout until acknowledged", "[tcpstate][window]")
{
    Handshake h;
    REQUIRE(h.client_data(500).outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::unacknowledged);
    h.f.timeouts.unacknowledged = 77;
    CHECK(h.f.timeout() == 77);
    REQUIRE(h.server_ack().outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::none);
}

// A zero window (the receiver stalls) caps at the retransmission timeout; the window reopening
// lifts it. Zero-window probes are in the window.
TEST_CASE("a zero window caps the timeout until it reopens", "[tcpstate][window][zero]")
{
    Handshake h;
    REQUIRE(h.client_data(1000).outcome == Outcome::ok);
    h.s.win = 0;
    REQUIRE(h.server_ack().outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::max_retrans);
    // A 1-byte probe (RFC 9293 3.8.6.1) is in the window: netfilter never shrinks the allowance.
    const Segment probe = h.c.send(kData, 1);
    CHECK(h.f.send(kO, probe).outcome == Outcome::ok);
    h.s.win = 65535;
    h.s.got(probe);
    REQUIRE(h.server_ack().outcome == Outcome::ok);
    CHECK(h.f.cap() == Cap::none);
}

// A flow picked up mid-stream gets the unacknowledged timeout while it has seen no reply, not
// ESTABLISHED's 5 days; the reply, then any later packet, restores the state's timeout.
TEST_CASE("a picked-up flow with no reply is capped at the unacknowledged timeout", "[tcpstate][window][pickup]")
{
    Wflow f;
    f.create(seg(7000, 9000, kAck));
    CHECK(f.state() == State::established);
    CHECK(f.meta.liberal == 1);
    CHECK(f.cap() == Cap::unacknowledged);
    CHECK(f.timeout() == 300);
    REQUIRE(f.send(kO, seg(7000, 9000, kAck)).outcome == Outcome::ok);
    CHECK(f.cap() == Cap::unacknowledged);
    REQUIRE(f.send(kR, seg(9000, 7000, kAck)).outcome == Outcome::ok); // the first reply: netfilter still caps it
    CHECK(f.cap() == Cap::unacknowledged);
    REQUIRE(f.send(kO, seg(7000, 9000, kAck)).outcome == Outcome::ok);
    CHECK(f.cap() == Cap::none);
    CHECK(f.tracker.assured());
}

// capped_timeout never raises a state's own timeout and never returns 0.
TEST_CASE("capped_timeout lowers, never raises", "[tcpstate][window]")
{
    Timeouts t = Timeouts::netfilter_defaults();
    using flowcop::tcpstate::capped_timeout;
    CHECK(capped_timeout(t, State::established, Cap::none) == 432000);
    CHECK(capped_timeout(t, State::established, Cap::max_retrans) == 300);
    CHECK(capped_timeout(t, State::established, Cap::close) == 10);
    CHECK(capped_timeout(t, State::last_ack, Cap::unacknowledged) == 30);
    t.unacknowledged = 0;
    CHECK(capped_timeout(t, State::established, Cap::unacknowledged) == 432000);
}
