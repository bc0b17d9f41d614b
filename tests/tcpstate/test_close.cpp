// SPDX-License-Identifier: BSD-3-Clause
// Closing a connection: the FIN exchange in both orders, repeated FINs, RST in every state, and a SYN
// that reuses a closed 5-tuple.
#include "tcp_test_util.h"

using namespace tcptest;
using flowcop::tcpstate::expiry_is_closed;
using flowcop::tcpstate::initial_state;
using flowcop::tcpstate::step;

namespace {
Dir other(Dir d)
{
    return d == kO ? kR : kO;
}
} // namespace

// netfilter's close path: the first FIN opens FIN_WAIT, the peer's ACK of it gives CLOSE_WAIT, the
// peer's own FIN gives LAST_ACK and the ACK of that gives TIME_WAIT, whose expiry is a "closed" end.
// Either side may close first; the path is the same.
TEST_CASE("A FIN from either side closes through FIN_WAIT, CLOSE_WAIT, LAST_ACK and TIME_WAIT", "[tcpstate][close]")
{
    const Dir closer = GENERATE(kO, kR);
    Tracker t = reach(State::established);
    CHECK(step(t, closer, kFinack) == Outcome::ok);
    CHECK(t.state == State::fin_wait);
    CHECK(step(t, other(closer), kAck) == Outcome::ok);
    CHECK(t.state == State::close_wait);
    CHECK(step(t, other(closer), kData) == Outcome::ok); // the half-open side may keep sending
    CHECK(t.state == State::close_wait);
    CHECK(step(t, other(closer), kFinack) == Outcome::ok);
    CHECK(t.state == State::last_ack);
    CHECK(step(t, closer, kAck) == Outcome::ok);
    CHECK(t.state == State::time_wait);
    CHECK(expiry_is_closed(t.state));
    CHECK(t.assured());
}

// The peer often acknowledges the FIN and sends its own in one FIN-ACK segment, skipping CLOSE_WAIT.
TEST_CASE("A FIN answered by the peer's FIN goes from FIN_WAIT straight to LAST_ACK", "[tcpstate][close]")
{
    const Dir closer = GENERATE(kO, kR);
    Tracker t = reach(State::established);
    CHECK(step(t, closer, kFinack) == Outcome::ok);
    CHECK(step(t, other(closer), kFinack | kPsh) == Outcome::ok);
    CHECK(t.state == State::last_ack);
    CHECK(step(t, closer, kAck) == Outcome::ok);
    CHECK(t.state == State::time_wait);
}

// zeek ssh-dups sends every FIN three times. netfilter would take the second copy as the peer's FIN
// (FIN_WAIT -> LAST_ACK) and the next ACK to TIME_WAIT while the peer had not closed at all. A repeat
// from the side that already sent a FIN is a retransmission and must leave the state where it is.
TEST_CASE("A FIN repeated by the side that sent it does not advance FIN_WAIT or CLOSE_WAIT", "[tcpstate][close]")
{
    const Dir closer = GENERATE(kO, kR);
    Tracker t = reach(State::established);
    CHECK(step(t, closer, kFinack) == Outcome::ok);
    CHECK(step(t, closer, kFinack) == Outcome::ok);
    CHECK(step(t, closer, kFinack | kPsh) == Outcome::ok);
    CHECK(t.state == State::fin_wait);
    CHECK(step(t, other(closer), kAck) == Outcome::ok);
    CHECK(t.state == State::close_wait);
    CHECK(step(t, closer, kFinack) == Outcome::ok);
    CHECK(t.state == State::close_wait);
    CHECK(step(t, other(closer), kFinack) == Outcome::ok);
    CHECK(t.state == State::last_ack);
}

// Once both FINs are seen, or the close is complete, more FINs are retransmissions of one of them.
TEST_CASE("Repeated FINs in LAST_ACK and TIME_WAIT leave the state unchanged", "[tcpstate][close]")
{
    for (const State s : {State::last_ack, State::time_wait}) {
        for (const Dir d : {kO, kR}) {
            Tracker t = reach(s);
            CHECK(step(t, d, kFinack) == Outcome::ok);
            CHECK(step(t, d, kFinack) == Outcome::ok);
            CHECK(t.state == s);
        }
    }
}

// Without window tracking every RST is believed (lib/tcpstate/tcp-tracking.md), in every state including
// CLOSE itself, and the caller learns it through Outcome::reset so it can reap on the next tick.
TEST_CASE("A RST in every state moves the flow to CLOSE with Outcome::reset", "[tcpstate][close]")
{
    for (const State s : kFlowStates) {
        for (const Dir d : {kO, kR}) {
            for (const uint8_t rst : {uint8_t(kRst), uint8_t(kRstack), uint8_t(kRstack | kPsh)}) {
                CAPTURE(s, d == kO ? "orig" : "reply", int(rst));
                Tracker t = reach(s);
                CHECK(step(t, d, rst) == Outcome::reset);
                CHECK(t.state == State::close);
            }
        }
    }
}

// The flow table reaps a reset flow on the next tick; packets already in flight may reach it first.
// They are accepted (ok: a caller that re-arms would use the CLOSE timeout) but never resurrect the
// flow, and another RST is reported as a reset again.
TEST_CASE("Packets after a RST keep the flow in CLOSE until it is reaped", "[tcpstate][close]")
{
    Tracker t = reach(State::established);
    REQUIRE(step(t, kR, kRstack) == Outcome::reset);
    CHECK(step(t, kO, kData) == Outcome::ok);
    CHECK(step(t, kR, kAck) == Outcome::ok);
    CHECK(step(t, kO, kFinack) == Outcome::ok);
    CHECK(t.state == State::close);
    CHECK(step(t, kR, kSynack) == Outcome::ignored);
    CHECK(step(t, kO, kRst) == Outcome::reset);
    CHECK(t.state == State::close);
    CHECK(expiry_is_closed(t.state));

    // The driver reaps on the tick; a late packet afterwards is a new (loose) pickup, as in netfilter.
    FlowDriver f(true);
    f.feed('c', kSyn);
    f.feed('s', kSynack);
    f.feed('c', kAck);
    CHECK(f.feed('s', kRstack) == FlowDriver::Event::reset);
    CHECK(f.feed('c', kData) == FlowDriver::Event::ok);
    CHECK(f.state() == State::close);
    f.tick();
    CHECK_FALSE(f.tracked());
    CHECK(f.feed('c', kData) == FlowDriver::Event::created);
    CHECK(f.state() == State::established);
}

// A client may reuse a 5-tuple as soon as the old connection is closed (RFC 1122 4.2.2.13). The
// tracker cannot turn itself into the new flow (its counters and start time belong to the old one),
// so it reports reopen untouched and the caller rebuilds from this SYN, whose sender becomes orig.
TEST_CASE("A SYN from either side on a TIME_WAIT or CLOSE flow asks for a reopen", "[tcpstate][close]")
{
    for (const State s : {State::time_wait, State::close}) {
        for (const Dir d : {kO, kR}) {
            Tracker t = reach(s);
            const Tracker before = t;
            CHECK(step(t, d, kSyn) == Outcome::reopen);
            CHECK(t.state == before.state);
            CHECK(t.flags == before.flags);
        }
    }
    FlowDriver f(false);
    const Seg close[] = {{'c', kSyn}, {'s', kSynack}, {'c', kAck}, {'c', kFinack}, {'s', kFinack}, {'c', kAck}};
    for (const auto& [from, flags] : close)
        f.feed(from, flags);
    REQUIRE(f.state() == State::time_wait);
    CHECK(f.feed('s', kSyn) == FlowDriver::Event::reopened);
    CHECK(f.state() == State::syn_sent);
    CHECK(f.orig() == 's');
    CHECK_FALSE(f.tracker().assured());
    CHECK(f.feed('c', kSynack) == FlowDriver::Event::ok);
    CHECK(f.state() == State::syn_recv);
}

// A SYN inside a live connection is either a stale duplicate or an attack; the receiver will answer
// it (RST or challenge ACK) and that answer is what we act on (netfilter sIG/sIV).
TEST_CASE("A SYN on an open connection is ignored", "[tcpstate][close]")
{
    for (const State s : {State::syn_recv, State::established, State::fin_wait, State::close_wait, State::last_ack}) {
        for (const Dir d : {kO, kR}) {
            CAPTURE(s, d == kO ? "orig" : "reply");
            Tracker t = reach(s);
            CHECK(step(t, d, kSyn) == Outcome::ignored);
            CHECK(t.state == s);
        }
    }
}
