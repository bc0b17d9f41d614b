// SPDX-License-Identifier: BSD-3-Clause
// Window scaling and SACK as window tracking uses them: scaling only when both SYNs offered it, a SYN's
// own window never scaled, SACK edges checked against bound III only when the receiver permitted SACK.
#include <catch2/catch.hpp>

#include "window_test_util.h"

using namespace wtest;

namespace {
constexpr uint32_t kC = 1000000, kS = 5000000;
constexpr uint32_t kCEnd = kC + 1, kSEnd = kS + 1;
} // namespace

// Server window 2000 << 7 = 256000: data 200000 bytes ahead is inside. Where only one side offered
// scaling, the same window is 2000 bytes and the data is far outside.
TEST_CASE("window scale applies only when both SYNs offered it", "[tcpstate][window][wscale]")
{
    const Segment ack_win2000 = seg(kSEnd, kCEnd, kAck, 0, 2000);
    const Segment far_data = seg(kCEnd + 200000, kSEnd, kData, 100);
    {
        Handshake h(kC, kS, syn_opts(7), syn_opts(7));
        CHECK(h.f.meta.flags[0].scale == 7);
        CHECK(h.f.meta.flags[1].scale == 7);
        REQUIRE(h.f.send(kR, ack_win2000).outcome == Outcome::ok);
        CHECK(h.f.seq.side[1].maxwin == 2000u << 7);
        CHECK(h.f.send(kO, far_data).outcome == Outcome::ok);
    }
    constexpr uint8_t kSackPermOnly = flowcop::tcpstate::kOptPresent | flowcop::tcpstate::kOptSackPerm;
    for (const uint8_t server_opts : {uint8_t{0}, kSackPermOnly}) {
        CAPTURE(server_opts);
        Handshake h(kC, kS, syn_opts(7), static_cast<uint8_t>(server_opts));
        CHECK(h.f.meta.flags[0].scale == 0);
        CHECK(h.f.meta.flags[1].scale == 0);
        REQUIRE(h.f.send(kR, ack_win2000).outcome == Outcome::ok);
        CHECK(h.f.send(kO, far_data).reason == WindowReason::seq_above_window);
    }
}

// RFC 7323 2.2: the window field of a SYN is never scaled. The SYN-ACK's 65535 allows 65535 bytes,
// not 65535 << 14.
TEST_CASE("a SYN's window is not scaled", "[tcpstate][window][wscale]")
{
    Handshake h(kC, kS, syn_opts(14), syn_opts(14));
    CHECK(h.f.meta.flags[0].scale == 14);
    CHECK(h.f.seq.side[0].maxend.raw == kCEnd + 65535); // from the SYN-ACK, unscaled
    // The largest scaled window a header can carry (65535 << 14, just under 2^30) is learnt intact.
    REQUIRE(h.f.send(kR, seg(kSEnd, kCEnd, kAck, 0, 65535)).outcome == Outcome::ok);
    CHECK(h.f.seq.side[0].maxend.raw == kCEnd + (65535u << 14));
    CHECK(h.f.send(kO, seg(kCEnd + (65535u << 14) - 1, kSEnd, kData, 1)).outcome == Outcome::ok);
}

// With SACK permitted by the client, the server's SACK edge (not its cumulative ack) is what III and
// IV check: an edge past what the client sent is refused even with a valid ack.
TEST_CASE("SACK edges are checked when the receiver permitted SACK", "[tcpstate][window][sack]")
{
    auto sacked = [](uint32_t ack, uint32_t edge) {
        Segment s = seg(kSEnd, ack, kAck);
        s.sack = Seq(edge);
        return s;
    };
    {
        Handshake h(kC, kS, syn_opts(0, true), syn_opts(0, true));
        for (int i = 0; i < 3; ++i)
            REQUIRE(h.f.send(kO, seg(kCEnd + 1000 * i, kSEnd, kData, 1000)).outcome == Outcome::ok);
        // The first segment was lost: the server acks 1000001 and SACKs the other two.
        CHECK(h.f.send(kR, sacked(kCEnd, kCEnd + 3000)).outcome == Outcome::ok);
        CHECK(h.f.seq.side[1].maxwin == 65535u + 3000u); // netfilter's maxwin grows by sack - ack
        const auto r = h.f.send(kR, sacked(kCEnd, kCEnd + 3001));
        CHECK(r.outcome == Outcome::out_of_window);
        CHECK(r.reason == WindowReason::ack_above_sent);
    }
    {
        // The client did not permit SACK: blocks are not the receiver's business, the ack is.
        Handshake h(kC, kS, syn_opts(0, false), syn_opts(0, true));
        REQUIRE(h.f.send(kO, seg(kCEnd, kSEnd, kData, 1000)).outcome == Outcome::ok);
        CHECK(h.f.send(kR, sacked(kCEnd, kCEnd + 5000)).outcome == Outcome::ok);
    }
}
