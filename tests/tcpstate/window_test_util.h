// SPDX-License-Identifier: BSD-3-Clause
// Fixtures for the window tests: Wflow, one flow's tracked state with the calls the flow table makes
// (create, track), and Ends, a TCP endpoint that numbers its segments as a real stack does (ISN, next
// sequence, what it has received), so a test writes a conversation rather than raw numbers.
#pragma once

#include <tcpstate/window.h>

#include <catch2/catch.hpp>

#include <cstdint>

#include "tcp_test_util.h"

namespace wtest {

using flowcop::tcpstate::Cap;
using flowcop::tcpstate::FlowRef;
using flowcop::tcpstate::Segment;
using flowcop::tcpstate::Seq;
using flowcop::tcpstate::Timeouts;
using flowcop::tcpstate::TrackResult;
using flowcop::tcpstate::WindowMeta;
using flowcop::tcpstate::WindowPolicy;
using flowcop::tcpstate::WindowReason;
using flowcop::tcpstate::WindowSeq;
using namespace tcptest;

// Option bytes of a Segment: window scale `shift` and SACK permitted, as a SYN carries them.
constexpr uint8_t syn_opts(uint8_t shift, bool sack_perm = true)
{
    return static_cast<uint8_t>(flowcop::tcpstate::kOptPresent | flowcop::tcpstate::kOptWscale | shift |
                                (sack_perm ? flowcop::tcpstate::kOptSackPerm : 0));
}

struct Wflow {
    Tracker tracker;
    WindowSeq seq{};
    WindowMeta meta{};
    WindowPolicy policy{};
    Timeouts timeouts = Timeouts::netfilter_defaults();

    FlowRef ref() { return FlowRef{tracker, seq, meta}; }
    // The first packet of the flow, loose pickup on.
    void create(const Segment& s)
    {
        tracker = Tracker{flowcop::tcpstate::initial_state(s.flags, true)};
        REQUIRE(tracker.state != State::none);
        flowcop::tcpstate::window_create(ref(), s, timeouts);
    }
    TrackResult send(Dir d, const Segment& s) { return flowcop::tcpstate::track(ref(), d, s, policy, timeouts); }
    Cap cap() const { return meta.timeout_cap(); }
    State state() const { return tracker.state; }
    uint32_t timeout() const { return flowcop::tcpstate::capped_timeout(timeouts, tracker.state, cap()); }
};

// One endpoint: `nxt` is the next sequence it sends, `rcv` the next it expects from its peer.
struct End {
    uint32_t nxt;
    uint32_t rcv = 0;
    uint16_t win = 65535;

    // A segment with `len` payload bytes and `flags`, acknowledging rcv when ACK is set; advances nxt.
    Segment send(uint8_t flags, uint32_t len = 0, uint8_t options = 0)
    {
        const Segment s{Seq(nxt), Seq(rcv), Seq(rcv), len, win, flags, options};
        nxt += len + ((flags & kSyn) ? 1u : 0u) + ((flags & kFin) ? 1u : 0u);
        return s;
    }
    // The peer's segment arrived: expect what follows it.
    void got(const Segment& s)
    {
        rcv = s.seq.raw + s.payload_len + ((s.flags & kSyn) ? 1u : 0u) + ((s.flags & kFin) ? 1u : 0u);
    }
};

// Segment with explicit numbers, for the edges of each bound.
inline Segment seg(uint32_t seq, uint32_t ack, uint8_t flags, uint32_t len = 0, uint16_t win = 65535)
{
    return Segment{Seq(seq), Seq(ack), Seq(ack), len, win, flags, 0};
}

// A client and a server through the three-way handshake, both windows 65535 unscaled unless told.
struct Handshake {
    Wflow f;
    End c{1000};
    End s{5000};

    explicit Handshake(uint32_t client_isn = 1000, uint32_t server_isn = 5000, uint8_t c_opts = 0, uint8_t s_opts = 0)
        : c{client_isn}, s{server_isn}
    {
        const Segment syn = c.send(kSyn, 0, c_opts);
        f.create(syn);
        s.got(syn);
        const Segment synack = s.send(kSynack, 0, s_opts);
        REQUIRE(f.send(kR, synack).outcome == Outcome::ok);
        c.got(synack);
        REQUIRE(f.send(kO, c.send(kAck)).outcome == Outcome::ok);
        REQUIRE(f.state() == State::established);
    }
    // Client sends `len` bytes; the server receives them (its rcv advances). Returns the result.
    TrackResult client_data(uint32_t len)
    {
        const Segment d = c.send(kData, len);
        s.got(d);
        return f.send(kO, d);
    }
    TrackResult server_ack() { return f.send(kR, s.send(kAck)); }
    TrackResult server_data(uint32_t len)
    {
        const Segment d = s.send(kData, len);
        c.got(d);
        return f.send(kR, d);
    }
    TrackResult client_ack() { return f.send(kO, c.send(kAck)); }
    bool tracker_assured() const { return f.tracker.assured(); }
};

} // namespace wtest

namespace Catch {
template <>
struct StringMaker<flowcop::tcpstate::WindowReason> {
    static std::string convert(flowcop::tcpstate::WindowReason r) { return flowcop::tcpstate::window_reason_name(r); }
};
} // namespace Catch
