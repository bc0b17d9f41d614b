// SPDX-License-Identifier: BSD-3-Clause
// Whole conversations through window_create() and track(): a simultaneous open, a flow picked up
// mid-stream learning its windows, a reopen, and the contract that nothing out of the window changes
// the tracker or the cap, over random segments against live flows.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "window_test_util.h"

using namespace wtest;

// RFC 793 figure 8: both ends send SYN, both answer SYN-ACK; every segment is in the window.
TEST_CASE("a simultaneous open tracks both windows", "[tcpstate][window][simultaneous]")
{
    Wflow f;
    End a{1000}, b{5000};
    const Segment syn_a = a.send(kSyn, 0, syn_opts(2));
    f.create(syn_a);
    const Segment syn_b = b.send(kSyn, 0, syn_opts(2));
    CHECK(f.send(kR, syn_b).outcome == Outcome::ok);
    CHECK(f.state() == State::syn_sent2);
    a.got(syn_b);
    b.got(syn_a);
    CHECK(f.send(kO, Segment{Seq(1000), Seq(a.rcv), Seq(a.rcv), 0, 65535, kSynack, syn_opts(2)}).outcome ==
          Outcome::ok);
    CHECK(f.state() == State::syn_recv);
    CHECK(f.send(kR, Segment{Seq(5000), Seq(b.rcv), Seq(b.rcv), 0, 65535, kSynack, syn_opts(2)}).outcome ==
          Outcome::ignored); // netfilter's table ignores it too
    CHECK(f.send(kR, b.send(kAck)).outcome == Outcome::ok);
    CHECK(f.state() == State::established);
    CHECK(f.meta.flags[0].scale == 2);
    CHECK(f.meta.flags[1].scale == 2);
    for (int i = 0; i < 5; ++i) {
        const Segment da = a.send(kData, 100);
        b.got(da);
        CHECK(f.send(kO, da).outcome == Outcome::ok);
        const Segment db = b.send(kData, 50);
        a.got(db);
        CHECK(f.send(kR, db).outcome == Outcome::ok);
    }
    CHECK(f.tracker.assured());
}

// netfilter learns a picked-up side from its first segment (end, window, maxend = end + window) and
// the other side's end from the ack; a keep-alive answer (ack one past that end) moves it up by one.
TEST_CASE("a picked-up flow learns each side from its first segment", "[tcpstate][window][pickup]")
{
    Wflow f;
    f.create(seg(7000, 9000, kData, 100, 1000));
    CHECK(f.seq.side[0].end.raw == 7100);
    CHECK(f.seq.side[0].maxwin == 1000);
    CHECK(f.seq.side[0].maxend.raw == 8100);
    CHECK(f.meta.flags[0].sack_perm == 1); // assumed, as netfilter does for pickups
    REQUIRE(f.send(kR, seg(9000, 7101, kAck, 0, 2000)).outcome == Outcome::ok);
    CHECK(f.seq.side[0].end.raw == 7101); // ack == end + 1: the answer to a keep-alive probe
    CHECK(f.seq.side[1].end.raw == 9000);
    CHECK(f.seq.side[1].maxend.raw == 11000);
    // Liberal: even a segment far outside passes, as netfilter marks picked-up flows.
    CHECK(f.send(kO, seg(7101 + 5000000, 9000, kData, 10)).outcome == Outcome::ok);
}

// A SYN on TIME_WAIT reopens; window_create() then starts the new flow from nothing.
TEST_CASE("a reopened flow's window starts afresh", "[tcpstate][window]")
{
    Handshake h;
    REQUIRE(h.f.send(kO, h.c.send(kFinack)).outcome == Outcome::ok);
    REQUIRE(h.f.send(kR, h.s.send(kFinack)).outcome == Outcome::ok);
    REQUIRE(h.f.send(kO, seg(h.c.nxt, h.s.nxt, kAck)).outcome == Outcome::ok);
    REQUIRE(h.f.state() == State::time_wait);
    const Segment syn = seg(77777777, 0, kSyn);
    REQUIRE(h.f.send(kO, syn).outcome == Outcome::reopen);
    h.f.create(syn);
    CHECK(h.f.seq.side[0].end.raw == 77777778u);
    CHECK(h.f.seq.side[1].maxwin == 0);
    CHECK(h.f.meta.liberal == 0);
}

// The contract that makes out-of-window segments harmless: whatever arrives, out_of_window leaves the
// tracker byte for byte and the cap as they were, and ignored leaves the tracker too.
TEST_CASE("random segments against live flows never change the tracker when refused", "[tcpstate][window][random]")
{
    std::mt19937 rng(0x3177);
    unsigned refused = 0, accepted = 0, changed_on_refusal = 0;
    for (int flow = 0; flow < 200; ++flow) {
        const auto opts = [&rng] { return rng() % 2 ? syn_opts(static_cast<uint8_t>(rng() % 15)) : uint8_t{0}; };
        const uint32_t c_isn = static_cast<uint32_t>(rng()), s_isn = static_cast<uint32_t>(rng());
        const uint8_t c_opts = opts(), s_opts = opts();
        Handshake h(c_isn, s_isn, c_opts, s_opts);
        h.f.policy.be_liberal = rng() % 8 == 0;
        for (int i = 0; i < 200; ++i) {
            const Dir d = rng() % 2 ? kO : kR;
            End& e = d == kO ? h.c : h.s;
            const uint32_t near = static_cast<uint32_t>(rng() % 4 == 0 ? rng() : e.nxt + (rng() % 200000) - 100000);
            static constexpr uint8_t kFlags[] = {kAck, kData, kRst, kRstack, kFinack, kSyn, kSynack, 0, kFin};
            Segment s{Seq(near),
                      Seq(rng() % 2 ? e.rcv : static_cast<uint32_t>(rng())),
                      Seq(e.rcv),
                      static_cast<uint32_t>(rng() % 1500),
                      static_cast<uint16_t>(rng()),
                      kFlags[rng() % 9],
                      0};
            s.sack = s.ack + static_cast<uint32_t>(rng() % 3 == 0 ? rng() % 5000 : 0);
            const Tracker before = h.f.tracker;
            const uint8_t cap_before = h.f.meta.cap;
            const auto r = h.f.send(d, s);
            if (r.outcome == Outcome::out_of_window || r.outcome == Outcome::ignored) {
                refused += r.outcome == Outcome::out_of_window;
                changed_on_refusal += std::memcmp(&before, &h.f.tracker, sizeof before) != 0 ||
                                      (r.outcome == Outcome::out_of_window && h.f.meta.cap != cap_before);
                CHECK((r.outcome == Outcome::out_of_window) == (r.reason != WindowReason::none));
            } else {
                ++accepted;
                if (r.outcome == Outcome::reset || r.outcome == Outcome::reopen)
                    break;
            }
        }
    }
    CAPTURE(refused, accepted);
    CHECK(changed_on_refusal == 0);
    CHECK(refused > 1000);
    CHECK(accepted > 500);
}
