// SPDX-License-Identifier: BSD-3-Clause
// Opening a connection: the three-way handshake, its retransmissions, simultaneous open, TFO and ECN,
// and the flag combinations no stack sends.
#include "tcp_test_util.h"

using namespace tcptest;
using flowcop::tcpstate::initial_state;
using flowcop::tcpstate::step;

// The common case every other rule builds on; assured must wait for the final ACK, because until then
// the flow may be a spoofed or unanswered SYN that the table should be free to early-drop.
TEST_CASE("A SYN, SYN-ACK, ACK handshake reaches ESTABLISHED and is assured at the final ACK", "[tcpstate][handshake]")
{
    Tracker t{initial_state(kSyn, false)};
    CHECK(t.state == State::syn_sent);
    CHECK_FALSE(t.seen_reply());

    CHECK(step(t, kR, kSynack) == Outcome::ok);
    CHECK(t.state == State::syn_recv);
    CHECK(t.seen_reply());
    CHECK_FALSE(t.assured());

    CHECK(step(t, kO, kAck) == Outcome::ok);
    CHECK(t.state == State::established);
    CHECK(t.assured());

    CHECK(step(t, kO, kData) == Outcome::ok);
    CHECK(step(t, kR, kData) == Outcome::ok);
    CHECK(t.state == State::established);
    CHECK(t.assured());
}

// Direction is relative to the flow, not to addresses: whichever endpoint sends the SYN is orig, and
// the other endpoint's packets are reply. A table that got this backwards would leave every
// connection opened by the "other" side stuck in SYN_SENT.
TEST_CASE("The handshake is tracked the same whichever endpoint sends the SYN", "[tcpstate][handshake]")
{
    for (const char opener : {'c', 's'}) {
        const char other = opener == 'c' ? 's' : 'c';
        FlowDriver f(false);
        CHECK(f.feed(opener, kSyn) == FlowDriver::Event::created);
        CHECK(f.orig() == opener);
        CHECK(f.feed(other, kSynack) == FlowDriver::Event::ok);
        CHECK(f.feed(opener, kAck) == FlowDriver::Event::ok);
        CHECK(f.state() == State::established);
        CHECK(f.tracker().assured());
    }
}

// Clients retransmit an unanswered SYN (suricata syn_retransmit, nmap synscan): it is the same
// connection attempt, so it must neither reset nor reopen the flow.
TEST_CASE("A retransmitted SYN is accepted and leaves the flow in SYN_SENT", "[tcpstate][handshake]")
{
    Tracker t{initial_state(kSyn, false)};
    for (int i = 0; i < 5; ++i) {
        CHECK(step(t, kO, kSyn) == Outcome::ok);
        CHECK(t.state == State::syn_sent);
    }
    CHECK(step(t, kR, kSynack) == Outcome::ok);
    CHECK(step(t, kO, kAck) == Outcome::ok);
    CHECK(t.state == State::established);
}

// A server retransmits its SYN-ACK when the final ACK is lost or late; netfilter ignores the repeat
// (sIG) rather than treating it as a state change, and so do we, in both states it can arrive in.
TEST_CASE("A retransmitted SYN-ACK is ignored in SYN_RECV and ESTABLISHED and changes nothing", "[tcpstate][handshake]")
{
    for (const State s : {State::syn_recv, State::established}) {
        Tracker t = reach(s);
        const Tracker before = t;
        CHECK(step(t, kR, kSynack) == Outcome::ignored);
        CHECK(t.state == before.state);
        CHECK(t.flags == before.flags);
    }
}

// Both sides send a SYN before either sees the other's (RFC 793 figure 8). No real capture has one
// (PROVENANCE gaps), so both orders of the two SYN-ACKs and both final ACKs are driven here.
TEST_CASE("A simultaneous open goes SYN_SENT, SYN_SENT2, SYN_RECV, ESTABLISHED", "[tcpstate][handshake]")
{
    const Dir first_synack = GENERATE(kO, kR);
    const Dir final_ack = GENERATE(kO, kR);
    Tracker t{initial_state(kSyn, false)};
    CHECK(step(t, kR, kSyn) == Outcome::ok);
    CHECK(t.state == State::syn_sent2);
    CHECK(step(t, kO, kSyn) == Outcome::ok); // a late retransmission of orig's SYN
    CHECK(t.state == State::syn_sent2);

    CHECK(step(t, first_synack, kSynack) == Outcome::ok);
    CHECK(t.state == State::syn_recv);
    const Dir second_synack = first_synack == kO ? kR : kO;
    step(t, second_synack, kSynack); // accepted from orig, ignored from reply: either way no change
    CHECK(t.state == State::syn_recv);
    CHECK_FALSE(t.assured());

    CHECK(step(t, final_ack, kAck) == Outcome::ok);
    CHECK(t.state == State::established);
    CHECK(t.assured());
}

// TCP Fast Open puts data in the SYN (zeek tcp-fast-open conn 2: 86 bytes) and ECN setup sets ECE and
// CWR on it; the tracker sees only flags, and PSH/ECE/CWR must not turn a SYN into something else.
TEST_CASE("Data in a SYN (TCP Fast Open) and ECN bits do not change how the SYN is tracked", "[tcpstate][handshake]")
{
    for (const uint8_t syn : {uint8_t(kSyn), uint8_t(kSyn | kPsh), uint8_t(kSyn | kEce | kCwr), uint8_t(kSyn | kUrg)}) {
        CAPTURE(int(syn));
        CHECK(initial_state(syn, false) == State::syn_sent);
        CHECK(initial_state(syn, true) == State::syn_sent);
    }
    Tracker t{initial_state(kSyn | kEce | kCwr, false)};
    CHECK(step(t, kR, kSynack | kEce) == Outcome::ok);
    CHECK(t.state == State::syn_recv);

    // zeek_tcp_fast_open_syn_data.pcap, conn 2 (frames 8, 10-16): SYN with data, then a FIN close.
    FlowDriver f(false);
    CHECK(f.feed('c', kSyn) == FlowDriver::Event::created);
    CHECK(f.feed('s', kSynack) == FlowDriver::Event::ok);
    CHECK(f.feed('c', kAck) == FlowDriver::Event::ok);
    CHECK(f.feed('s', kData) == FlowDriver::Event::ok);
    CHECK(f.feed('c', kAck) == FlowDriver::Event::ok);
    CHECK(f.feed('s', kFinack) == FlowDriver::Event::ok);
    CHECK(f.feed('c', kFinack) == FlowDriver::Event::ok);
    CHECK(f.feed('s', kAck) == FlowDriver::Event::ok);
    CHECK(f.state() == State::time_wait);
    CHECK(f.ignored == 0);
}

// Until the SYN-ACK is seen an ACK from orig cannot be part of this handshake (netfilter sIV), and a
// reply ACK may be a half-open peer's challenge ACK (sIG): neither may complete the handshake.
TEST_CASE("ACKs in SYN_SENT are ignored from either side", "[tcpstate][handshake]")
{
    for (const Dir d : {kO, kR}) {
        Tracker t{initial_state(kSyn, false)};
        CHECK(step(t, d, kAck) == Outcome::ignored);
        CHECK(step(t, d, kData) == Outcome::ignored);
        CHECK(step(t, d, kFinack) == Outcome::ignored);
        CHECK(t.state == State::syn_sent);
        CHECK_FALSE(t.seen_reply());
    }
}

// Scanners and fuzzers send these (nmap Xmas/FIN/NULL scans, ndpi fuzz capture); no stack does. They
// must neither create a flow nor move one, in any state, or a scan could close real connections.
TEST_CASE("Invalid flag combinations are ignored in every state and create no flow", "[tcpstate][handshake]")
{
    const uint8_t invalid[] = {0,    kSyn | kFin,        kSyn | kRst, kSyn | kFin | kAck, kSyn | kRst | kAck,
                               kFin, kFin | kPsh | kUrg, kRst | kFin, kRst | kFin | kAck, kUrg,
                               kPsh, kSyn | kAck | kUrg, kEce | kCwr};
    for (const uint8_t f : invalid) {
        CAPTURE(int(f));
        CHECK(initial_state(f, false) == State::none);
        CHECK(initial_state(f, true) == State::none);
        for (const State s : kFlowStates) {
            for (const Dir d : {kO, kR}) {
                Tracker t = reach(s);
                const Tracker before = t;
                CHECK(step(t, d, f) == Outcome::ignored);
                CHECK(t.state == before.state);
                CHECK(t.flags == before.flags);
            }
        }
    }
}
