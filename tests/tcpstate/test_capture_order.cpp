// SPDX-License-Identifier: BSD-3-Clause
// Capture-order edge cases from the real captures in ../shared/pcaps (PROVENANCE.md). Each sequence is
// the capture's TCP flags, frame by frame, as tshark 4.0.17 prints them (`-T fields -e tcp.flags.str`),
// with 'c' for the client (the SYN's sender) and 's' for the server. test_pcap_replay.cpp replays the
// files themselves when they are present; these transcriptions keep the rules tested without them.
#include "tcp_test_util.h"

#include <vector>

using namespace tcptest;
using Event = FlowDriver::Event;

namespace {
std::vector<Event> drive(FlowDriver& f, const std::vector<Seg>& segs)
{
    std::vector<Event> out;
    for (const auto& [from, flags] : segs)
        out.push_back(f.feed(from, flags));
    return out;
}
} // namespace

// zeek handshake-reorder: the SYN-ACK is captured before the SYN (frame 1 vs 2). With loose pickup the
// SYN-ACK creates the flow in SYN_RECV with the server as orig; the client's SYN, now a reply, is
// ignored; the client's ACK (a reply) completes the handshake; the FIN close then ends in TIME_WAIT.
// Without loose pickup the SYN-ACK creates nothing, the SYN opens SYN_SENT, and since no SYN-ACK
// follows it every later packet is ignored: the flow expires as idle from SYN_SENT (netfilter's
// behaviour too, which is why loose pickup is the default worth having).
TEST_CASE("A SYN-ACK captured before its SYN still yields a tracked flow that closes by FIN", "[tcpstate][capture]")
{
    const std::vector<Seg> reorder = {
        {'s', kSynack}, {'c', kSyn},  {'c', kAck}, {'c', kData}, {'s', kAck},    {'s', kAck},    {'s', kAck},
        {'s', kAck},    {'s', kData}, {'c', kAck}, {'c', kAck},  {'c', kFinack}, {'s', kFinack}, {'c', kAck},
    };
    SECTION("loose pickup")
    {
        FlowDriver f(true);
        const auto ev = drive(f, reorder);
        CHECK(ev[0] == Event::created);
        CHECK(f.orig() == 's');
        CHECK(ev[1] == Event::ignored);
        CHECK(f.created == 1);
        CHECK(f.ignored == 1);
        CHECK(f.state() == State::time_wait);
        CHECK(f.tracker().assured());
        CHECK(flowcop::tcpstate::expiry_is_closed(f.state()));
    }
    SECTION("strict")
    {
        FlowDriver f(false);
        const auto ev = drive(f, reorder);
        CHECK(ev[0] == Event::not_created);
        CHECK(ev[1] == Event::created);
        CHECK(f.ignored == 12);
        CHECK(f.state() == State::syn_sent);
        CHECK_FALSE(flowcop::tcpstate::expiry_is_closed(f.state()));
    }
}

// zeek missing-syn: the capture starts at the SYN-ACK; the client's SYN was never captured. Loose
// pickup tracks it from the SYN-ACK, the client's ACK completes it, and the close reaches TIME_WAIT
// with nothing ignored.
TEST_CASE("A capture that starts at the SYN-ACK is tracked from it to TIME_WAIT", "[tcpstate][capture]")
{
    const std::vector<Seg> missing_syn = {
        {'s', kSynack}, {'c', kAck},  {'c', kData}, {'s', kAck},    {'s', kAck}, {'c', kAck},    {'c', kAck},
        {'s', kAck},    {'s', kAck},  {'s', kAck},  {'s', kAck},    {'c', kAck}, {'c', kAck},    {'c', kAck},
        {'c', kAck},    {'s', kData}, {'c', kAck},  {'c', kFinack}, {'s', kAck}, {'s', kFinack}, {'c', kAck},
    };
    FlowDriver f(true);
    const auto ev = drive(f, missing_syn);
    CHECK(ev[0] == Event::created);
    CHECK(f.created == 1);
    CHECK(f.ignored == 0);
    CHECK(f.state() == State::time_wait);
    CHECK(f.tracker().assured());

    // The states along the way: SYN_RECV until the client's ACK, then the close path.
    FlowDriver g(true);
    g.feed('s', kSynack);
    CHECK(g.state() == State::syn_recv);
    g.feed('c', kAck);
    CHECK(g.state() == State::established);
    const Seg tail[] = {{'c', kFinack}, {'s', kAck}, {'s', kFinack}, {'c', kAck}};
    const State expect[] = {State::fin_wait, State::close_wait, State::last_ack, State::time_wait};
    for (size_t i = 0; i < 4; ++i) {
        g.feed(tail[i].first, tail[i].second);
        CHECK(g.state() == expect[i]);
    }
}

// zeek ssh-dups: every data segment and every FIN is sent up to four times (frames 364-366 are the
// client's FIN three times, 371-373 the server's). Duplicated data is ACK-class and changes nothing;
// the repeated FINs stay in FIN_WAIT and LAST_ACK, so TIME_WAIT is reached only by frame 374, the
// client's ACK of the server's FIN. netfilter's table would be in TIME_WAIT at frame 367 already.
TEST_CASE("Retransmitted data and duplicate FINs do not move the state", "[tcpstate][capture]")
{
    FlowDriver f(false);
    drive(f, {{'c', kSyn}, {'s', kSynack}, {'c', kAck}});
    REQUIRE(f.state() == State::established);
    for (int round = 0; round < 40; ++round) { // frames 4-363: data and its copies both ways
        drive(f, {{'c', kData}, {'c', kData}, {'c', kData}, {'s', kAck}, {'s', kData}, {'s', kData}, {'c', kAck}});
        REQUIRE(f.state() == State::established);
    }
    drive(f, {{'c', kFinack}, {'c', kFinack}, {'c', kFinack}}); // 364-366
    CHECK(f.state() == State::fin_wait);
    drive(f, {{'s', kAck}, {'s', kAck}, {'s', kAck}, {'s', kAck}}); // 367-370
    CHECK(f.state() == State::close_wait);
    drive(f, {{'s', kFinack}, {'s', kFinack}, {'s', kFinack}}); // 371-373
    CHECK(f.state() == State::last_ack);
    drive(f, {{'c', kAck}, {'c', kAck}, {'c', kAck}, {'c', kAck}}); // 374-377
    CHECK(f.state() == State::time_wait);
    CHECK(f.ignored == 0);
    CHECK(f.created == 1);
}
