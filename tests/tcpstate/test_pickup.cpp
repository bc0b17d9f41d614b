// SPDX-License-Identifier: BSD-3-Clause
// Which first packets create a flow (strict and loose pickup), and when a flow becomes assured.
#include "tcp_test_util.h"

using namespace tcptest;
using flowcop::tcpstate::initial_state;
using flowcop::tcpstate::step;

namespace {
bool is_syn_class(unsigned f)
{
    const unsigned m = f & (kFin | kSyn | kRst | kAck | kUrg);
    return m == kSyn || m == (kSyn | kUrg);
}
} // namespace

// Strict mode (netfilter nf_conntrack_tcp_loose=0) tracks only connections it saw open, so a stray
// ACK, FIN or SYN-ACK (backscatter from a spoofed flood) costs no table entry at all.
TEST_CASE("Without loose pickup only a SYN creates a flow", "[tcpstate][pickup]")
{
    for (unsigned f = 0; f < 256; ++f) {
        CAPTURE(f);
        const State s = initial_state(static_cast<uint8_t>(f), false);
        CHECK(s == (is_syn_class(f) ? State::syn_sent : State::none));
    }
}

// Connections that were open before flowcop started (pcapplusplus tls2: 334 of them, no SYN at all)
// are picked up at their first ACK, as netfilter does, but not assured: one direction alone may be
// a spoofer or an asymmetric route, and such a flow must stay early-droppable.
TEST_CASE("With loose pickup an ACK creates an ESTABLISHED flow that is not assured", "[tcpstate][pickup]")
{
    for (const uint8_t f : {uint8_t(kAck), uint8_t(kData), uint8_t(kAck | kUrg), uint8_t(kData | kEce)}) {
        CAPTURE(int(f));
        CHECK(initial_state(f, true) == State::established);
        const Tracker t{initial_state(f, true)};
        CHECK_FALSE(t.assured());
        CHECK_FALSE(t.seen_reply());
    }
}

// The other side answering is what proves a picked-up flow is a real connection through us.
// netfilter assures it one packet later (it tests SEEN_REPLY before setting it); here the reply
// itself counts, so "both directions seen" and "assured" coincide.
TEST_CASE("A picked-up flow becomes assured at the first packet from the other side", "[tcpstate][pickup]")
{
    Tracker t{initial_state(kData, true)};
    for (int i = 0; i < 4; ++i) {
        CHECK(step(t, kO, kData) == Outcome::ok);
        CHECK_FALSE(t.assured());
    }
    CHECK(step(t, kR, kAck) == Outcome::ok);
    CHECK(t.state == State::established);
    CHECK(t.seen_reply());
    CHECK(t.assured());
}

// netfilter creates nothing for these; we do, in loose mode only, so captures that start at the
// SYN-ACK (zeek missing-syn) or see the close of an old connection are still tracked to TIME_WAIT.
TEST_CASE("With loose pickup a SYN-ACK creates SYN_RECV and a FIN creates FIN_WAIT", "[tcpstate][pickup]")
{
    CHECK(initial_state(kSynack, true) == State::syn_recv);
    CHECK(initial_state(kSynack | kEce, true) == State::syn_recv);
    CHECK(initial_state(kFinack, true) == State::fin_wait);
    CHECK(initial_state(kFinack | kPsh, true) == State::fin_wait);
    CHECK(initial_state(kSynack, false) == State::none);
    CHECK(initial_state(kFinack, false) == State::none);
    CHECK_FALSE(Tracker{initial_state(kSynack, true)}.assured());
    CHECK_FALSE(Tracker{initial_state(kFinack, true)}.assured());
}

// A RST for an unknown flow ends something we never tracked; creating a CLOSE flow would only make
// the table reap it again (netfilter: sIV for RST in NONE).
TEST_CASE("A RST never creates a flow", "[tcpstate][pickup]")
{
    for (const bool loose : {false, true})
        for (const uint8_t f : {uint8_t(kRst), uint8_t(kRstack), uint8_t(kRstack | kPsh)})
            CHECK(initial_state(f, loose) == State::none);
}

// A flow picked up at its FIN knows orig has closed: orig's retransmitted FIN must not count as the
// peer's FIN, and the rest of the close must still reach TIME_WAIT.
TEST_CASE("A flow picked up at a FIN closes normally when orig repeats the FIN", "[tcpstate][pickup]")
{
    Tracker t{initial_state(kFinack, true)};
    CHECK(step(t, kO, kFinack) == Outcome::ok);
    CHECK(t.state == State::fin_wait);
    CHECK(step(t, kR, kAck) == Outcome::ok);
    CHECK(t.state == State::close_wait);
    CHECK(step(t, kR, kFinack) == Outcome::ok);
    CHECK(t.state == State::last_ack);
    CHECK(step(t, kO, kAck) == Outcome::ok);
    CHECK(t.state == State::time_wait);
}

// A flow picked up at the SYN-ACK has the server as orig, so the client's ACK (a reply) is the one
// that completes the handshake; and, as for every flow, an ignored packet leaves the tracker alone.
TEST_CASE("A flow picked up at the SYN-ACK is completed by the other side's ACK", "[tcpstate][pickup]")
{
    Tracker t{initial_state(kSynack, true)};
    const Tracker fresh = t;
    CHECK(step(t, kR, kSyn) == Outcome::ignored); // the client's SYN, seen late
    CHECK(t.state == fresh.state);
    CHECK(t.flags == fresh.flags);
    CHECK_FALSE(t.seen_reply());
    CHECK(step(t, kO, kSynack) == Outcome::ok); // the server retransmits
    CHECK(t.state == State::syn_recv);
    CHECK(step(t, kR, kAck) == Outcome::ok);
    CHECK(t.state == State::established);
    CHECK(t.assured());
}

// Assured means "a handshake (or both directions) completed into ESTABLISHED". A flow that closes
// before reaching ESTABLISHED is never assured; once set, assured survives the close and the RST,
// because the table's early-drop policy looks at it until the flow is gone.
TEST_CASE("Assured is set only on entering ESTABLISHED and is never cleared", "[tcpstate][pickup]")
{
    Tracker early = reach(State::syn_recv);
    CHECK(step(early, kO, kFinack) == Outcome::ok);
    CHECK(early.state == State::fin_wait);
    CHECK_FALSE(early.assured());

    Tracker t = reach(State::established);
    REQUIRE(t.assured());
    for (const auto& [d, f] : {std::pair{kO, kFinack}, std::pair{kR, kFinack}, std::pair{kO, kAck}}) {
        step(t, d, f);
        CHECK(t.assured());
    }
    CHECK(t.state == State::time_wait);
    CHECK(step(t, kR, kRst) == Outcome::reset);
    CHECK(t.assured());
}
