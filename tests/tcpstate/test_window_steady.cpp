// SPDX-License-Identifier: BSD-3-Clause
// The steady ACK's fast path (track_steady, window_inline.h) against the full path (track_full) on the
// same flows: crafted conversations at each bound's edge, across 2^32, with window scaling, a zero
// window and retransmissions, then random conversations and random (even corrupt) window state. Every
// segment runs both ways on copies of the flow: when the fast path takes it, every field of the flow
// must equal what the full path left; when it declines, it must have written nothing; and track(),
// the composition the flow table calls, must equal the full path either way.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "window_test_util.h"

using namespace wtest;
using flowcop::tcpstate::Segment;
using flowcop::tcpstate::SideFlags;
using flowcop::tcpstate::track;
using flowcop::tcpstate::track_full;
using flowcop::tcpstate::track_steady;

namespace {

struct Flow {
    Tracker tracker;
    WindowSeq seq{};
    WindowMeta meta{};
    FlowRef ref() { return FlowRef{tracker, seq, meta}; }
};

void differ_side_flags(std::string& out, const char* who, const SideFlags& a, const SideFlags& b)
{
    const auto field = [&](const char* name, unsigned x, unsigned y) {
        if (x != y)
            out += std::string(who) + "." + name + " " + std::to_string(x) + "/" + std::to_string(y) + " ";
    };
    field("scale", a.scale, b.scale);
    field("sack_perm", a.sack_perm, b.sack_perm);
    field("wscale_offered", a.wscale_offered, b.wscale_offered);
    field("unacked", a.unacked, b.unacked);
    field("maxack_set", a.maxack_set, b.maxack_set);
}

// Every field that differs, by name ("" when equal), plus a byte comparison that catches anything a
// later field would add without a line here.
std::string differences(const Flow& a, const Flow& b)
{
    std::string out;
    const auto field = [&](const std::string& name, uint64_t x, uint64_t y) {
        if (x != y)
            out += name + " " + std::to_string(x) + "/" + std::to_string(y) + " ";
    };
    field("state", unsigned(a.tracker.state), unsigned(b.tracker.state));
    field("tracker.flags", a.tracker.flags, b.tracker.flags);
    for (int d = 0; d < 2; ++d) {
        const std::string s = d == 0 ? "orig." : "reply.";
        field(s + "end", a.seq.side[d].end.raw, b.seq.side[d].end.raw);
        field(s + "maxend", a.seq.side[d].maxend.raw, b.seq.side[d].maxend.raw);
        field(s + "maxwin", a.seq.side[d].maxwin, b.seq.side[d].maxwin);
        field(s + "maxack", a.seq.maxack[d].raw, b.seq.maxack[d].raw);
        differ_side_flags(out, d == 0 ? "orig" : "reply", a.meta.flags[d], b.meta.flags[d]);
    }
    field("retrans", a.meta.retrans, b.meta.retrans);
    field("last_ignored", a.meta.last_ignored, b.meta.last_ignored);
    field("liberal", a.meta.liberal, b.meta.liberal);
    field("last_dir", a.meta.last_dir, b.meta.last_dir);
    field("last_class", a.meta.last_class, b.meta.last_class);
    field("last_win_zero", a.meta.last_win_zero, b.meta.last_win_zero);
    field("cap", a.meta.cap, b.meta.cap);
    field("last", a.meta.last, b.meta.last);
    if (out.empty() &&
        (std::memcmp(&a.seq, &b.seq, sizeof a.seq) != 0 || std::memcmp(&a.meta, &b.meta, sizeof a.meta) != 0))
        out = "bytes differ";
    return out;
}

std::string describe(Dir d, const Segment& s)
{
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s seq %u ack %u sack %u len %u win %u flags 0x%02x opts 0x%02x",
                  d == Dir::orig ? "orig" : "reply", s.seq.raw, s.ack.raw, s.sack.raw, s.payload_len,
                  unsigned(s.window), unsigned(s.flags), unsigned(s.options));
    return buf;
}

struct Paths {
    uint64_t fast = 0, full = 0;
};

// One segment both ways; `f` becomes what the full path left. Returns whether the fast path took it.
// Checks by hand (not CHECK per call): the random runs make 10^5 calls.
bool both_ways(Flow& f, Dir d, const Segment& s, const WindowPolicy& p, const Timeouts& t, Paths& paths,
               TrackResult* result = nullptr)
{
    Flow full = f, fast = f, composed = f, prepared = f;
    const TrackResult rf = track_full(full.ref(), d, s, p, t);
    const bool took = track_steady(fast.ref(), d, s, p, t);
    const TrackResult rc = track(composed.ref(), d, s, p, t);
    // The flow table's form: the rules prepared once (the cap from SteadyRules' table).
    const bool took_prepared = track_steady(prepared.ref(), d, s, flowcop::tcpstate::steady_rules(p, t));
    std::string bad;
    if (took_prepared != took || !differences(fast, prepared).empty())
        bad =
            "with prepared rules: " + std::string(took_prepared ? "took " : "declined ") + differences(fast, prepared);
    else if (took && (rf.outcome != Outcome::ok || rf.reason != WindowReason::none))
        bad = "the fast path took a segment the full path does not accept as ok";
    else if (took && !differences(full, fast).empty())
        bad = "fast/full: " + differences(full, fast);
    else if (!took && !differences(f, fast).empty())
        bad = "the fast path declined but wrote: " + differences(f, fast);
    else if (rc.outcome != rf.outcome || rc.reason != rf.reason || !differences(full, composed).empty())
        bad = "track()/track_full(): " + differences(full, composed);
    if (!bad.empty()) {
        INFO(describe(d, s));
        FAIL(bad);
    }
    (took ? paths.fast : paths.full) += 1;
    f = full;
    if (result != nullptr)
        *result = rf;
    return took;
}

// A Handshake (window_test_util.h) whose later segments go through both_ways().
struct Twin {
    Handshake h;
    Paths paths;

    explicit Twin(uint32_t c_isn = 1000, uint32_t s_isn = 5000, uint8_t c_opts = 0, uint8_t s_opts = 0)
        : h(c_isn, s_isn, c_opts, s_opts)
    {}
    bool send(Dir d, const Segment& s, TrackResult* r = nullptr)
    {
        Flow f{h.f.tracker, h.f.seq, h.f.meta};
        const bool took = both_ways(f, d, s, h.f.policy, h.f.timeouts, paths, r);
        h.f.tracker = f.tracker;
        h.f.seq = f.seq;
        h.f.meta = f.meta;
        return took;
    }
    bool client_data(uint32_t len)
    {
        const Segment d = h.c.send(kData, len);
        h.s.got(d);
        return send(kO, d);
    }
    bool server_ack() { return send(kR, h.s.send(kAck)); }
    bool client_ack() { return send(kO, h.c.send(kAck)); }
};

} // namespace

TEST_CASE("steady path: a data transfer's segments take it, the handshake's do not", "[tcpstate][window][steady]")
{
    Twin t;
    CHECK(t.h.f.meta.flags[0].maxack_set); // the handshake went through track(), flows as usual
    for (int i = 0; i < 20; ++i) {
        CHECK(t.client_data(1448));
        CHECK(t.server_ack());
    }
    CHECK(t.paths.full == 0);
    // Closing: FINs are never steady.
    CHECK_FALSE(t.send(kO, t.h.c.send(kFinack)));
    CHECK(t.h.f.state() == State::fin_wait);
}

TEST_CASE("steady path: each bound's edge, taken inside and declined one past it", "[tcpstate][window][steady]")
{
    constexpr uint32_t kC = 1000000, kS = 5000000;
    constexpr uint32_t kCEnd = kC + 1, kSEnd = kS + 1;
    TrackResult r{};
    SECTION("I: seq at the receiver's window edge")
    {
        Twin t(kC, kS);
        CHECK(t.send(kO, seg(kCEnd + 65535, kSEnd, kData, 10), &r));
        Twin u(kC, kS);
        CHECK_FALSE(u.send(kO, seg(kCEnd + 65536, kSEnd, kData, 10), &r));
        CHECK(r.reason == WindowReason::seq_overshoot);
    }
    SECTION("II: end a window behind the sender's end")
    {
        Twin t(kC, kS);
        CHECK(t.send(kO, seg(kCEnd - 65535 - 10, kSEnd, kData, 10)));
        CHECK_FALSE(t.send(kO, seg(kCEnd - 65536 - 10, kSEnd, kData, 10), &r));
        CHECK(r.reason == WindowReason::seq_below_window);
    }
    SECTION("III: ack at the other side's end")
    {
        Twin t(kC, kS);
        CHECK(t.send(kO, seg(kCEnd, kSEnd, kAck)));
        CHECK_FALSE(t.send(kO, seg(kCEnd, kSEnd + 1, kAck), &r));
        CHECK(r.reason == WindowReason::ack_above_sent);
    }
    SECTION("IV: ack MAXACKWINCONST behind")
    {
        Twin t(kC, kS);
        CHECK(t.send(kO, seg(kCEnd, kSEnd - 66000, kAck)));
        CHECK_FALSE(t.send(kO, seg(kCEnd, kSEnd - 66001, kAck), &r));
        CHECK(r.reason == WindowReason::ack_below_window);
    }
    SECTION("a liberal policy takes the fast path inside, the full one outside")
    {
        Twin t(kC, kS);
        t.h.f.policy.be_liberal = true;
        CHECK(t.send(kO, seg(kCEnd, kSEnd, kAck)));
        CHECK_FALSE(t.send(kO, seg(kCEnd, kSEnd + 100000, kAck), &r));
        CHECK(r.outcome == Outcome::ok);
    }
}

TEST_CASE("steady path: sequence numbers across 2^32", "[tcpstate][window][steady][wrap]")
{
    Twin t(0xffffff00u, 0xfffff000u);
    for (int i = 0; i < 10; ++i) {
        CHECK(t.client_data(100));
        CHECK(t.server_ack());
    }
    CHECK(t.h.f.seq.side[0].end.raw < 0x1000u); // wrapped
    for (int i = 0; i < 50; ++i) {
        const Segment d = t.h.s.send(kData, 100);
        t.h.c.got(d);
        CHECK(t.send(kR, d));
        CHECK(t.client_ack());
    }
    CHECK(t.h.f.seq.side[1].end.raw < 0x2000u);
    CHECK(t.paths.full == 0);
}

TEST_CASE("steady path: scaled windows and SACK blocks", "[tcpstate][window][steady][scale]")
{
    Twin t(77, 99, syn_opts(7), syn_opts(14));
    REQUIRE(t.h.f.meta.flags[0].scale == 7);
    REQUIRE(t.h.f.meta.flags[1].scale == 14);
    // The server's first scaled window is 65535 << 14: far more than an unscaled window in flight.
    CHECK(t.server_ack());
    for (int i = 0; i < 100; ++i)
        CHECK(t.client_data(1448));
    CHECK(t.server_ack());
    // A SACK block: the receiver holds a later range (sack above ack, within what was sent).
    const Segment d1 = t.h.c.send(kData, 1000);
    const Segment d2 = t.h.c.send(kData, 1000);
    CHECK(t.send(kO, d1));
    CHECK(t.send(kO, d2));
    Segment sack = t.h.s.send(kAck);
    sack.sack = d2.seq + 1000;
    CHECK(t.send(kR, sack));
    CHECK(t.h.f.seq.side[1].maxwin > 65535u);
}

TEST_CASE("steady path: a zero window, its probes and retransmissions", "[tcpstate][window][steady][zero]")
{
    Twin t;
    CHECK(t.client_data(1000));
    t.h.s.win = 0;
    CHECK(t.server_ack()); // the window closes: cap max_retrans, as the full path chooses
    CHECK(t.h.f.cap() == Cap::max_retrans);
    const Segment probe = t.h.c.send(kData, 1);
    CHECK(t.send(kO, probe)); // one byte at the closed window's edge
    for (int i = 0; i < 4; ++i)
        CHECK(t.send(kO, probe)); // the same probe again: the retransmission count
    CHECK(t.h.f.meta.retrans == 4);
    t.h.s.got(probe);
    t.h.s.win = 65535;
    CHECK(t.server_ack());
    CHECK(t.h.f.cap() == Cap::none);
    CHECK(t.paths.full == 0);
}

TEST_CASE("steady path: a picked-up flow's first reply initialises its side first", "[tcpstate][window][steady]")
{
    Wflow w;
    w.create(seg(4000, 9000, kAck));
    Flow f{w.tracker, w.seq, w.meta};
    Paths paths;
    // Not steady yet (no reply seen): the full path.
    CHECK_FALSE(both_ways(f, kO, seg(4000, 9000, kData, 100), w.policy, w.timeouts, paths));
    CHECK_FALSE(both_ways(f, kR, seg(9000, 4100, kAck), w.policy, w.timeouts, paths));
    REQUIRE(f.tracker.assured());
    CHECK_FALSE(steady_window(f.seq, f.meta));
    // Picked up, liberal: no segment so far was inside the bounds (each met an end not yet learnt), so
    // neither side's highest ack is known (maxack_set), which the fast path takes as given
    // (steady_window). Each side's first segment inside them learns it on the full path; the next takes
    // the fast one.
    CHECK_FALSE(both_ways(f, kO, seg(4100, 9000, kData, 100), w.policy, w.timeouts, paths));
    CHECK_FALSE(both_ways(f, kR, seg(9000, 4200, kAck), w.policy, w.timeouts, paths));
    REQUIRE(steady_window(f.seq, f.meta));
    CHECK(both_ways(f, kO, seg(4200, 9000, kData, 100), w.policy, w.timeouts, paths));
    CHECK(both_ways(f, kR, seg(9000, 4300, kAck), w.policy, w.timeouts, paths));
}

namespace {

// A random conversation: two ends numbering their segments as stacks do, random ISNs (often near
// 2^32), window scales, SACK, zero windows, and now and then a retransmission, a keep-alive, an old
// duplicate, a forged sequence or ack, or a FIN/RST/SYN; a closed flow starts over.
struct Conversation {
    explicit Conversation(std::mt19937_64& r) : rng(r) {}
    std::mt19937_64& rng;
    Flow f;
    End c{0}, s{0};
    uint8_t c_scale = 0, s_scale = 0;
    Segment last{};
    Dir last_dir = kO;

    uint32_t pick(uint32_t n) { return n == 0 ? 0 : uint32_t(rng() % n); }
    uint32_t isn() { return pick(3) == 0 ? 0xffffffffu - pick(200000) : uint32_t(rng()); }

    void start(const WindowPolicy& p, const Timeouts& t, Paths& paths)
    {
        c = End{isn()};
        s = End{isn()};
        const bool wscale = pick(2) == 0;
        c_scale = wscale ? uint8_t(pick(15)) : 0;
        s_scale = wscale ? uint8_t(pick(15)) : 0;
        const Segment syn = c.send(kSyn, 0, wscale ? syn_opts(c_scale, pick(2) == 0) : 0);
        f = Flow{Tracker{flowcop::tcpstate::initial_state(kSyn, true)}, {}, {}};
        flowcop::tcpstate::window_create(f.ref(), syn, t);
        s.got(syn);
        const Segment synack = s.send(kSynack, 0, wscale ? syn_opts(s_scale, pick(2) == 0) : 0);
        both_ways(f, kR, synack, p, t, paths);
        c.got(synack);
        both_ways(f, kO, c.send(kAck), p, t, paths);
    }

    Segment make(Dir& d)
    {
        const bool client = pick(2) == 0;
        d = client ? kO : kR;
        End& me = client ? c : s;
        End& peer = client ? s : c;
        me.win = pick(8) == 0 ? 0 : uint16_t(pick(65536));
        const uint32_t kind = pick(100);
        Segment seg;
        if (kind < 55) { // data (sometimes none: a pure ACK), received by the peer
            seg = me.send(pick(3) == 0 ? kAck : kData, pick(3) == 0 ? 0 : 1 + pick(1460));
            if (pick(10) != 0)
                peer.got(seg);
        } else if (kind < 65) { // the previous segment again: a retransmission
            d = last_dir;
            return last;
        } else if (kind < 72) { // a SACK edge above the ack, up to what the peer sent
            seg = me.send(kAck);
            seg.sack = seg.ack + pick(peer.nxt - seg.ack.raw + 1 + pick(3));
        } else if (kind < 78) { // a keep-alive: one byte before the next
            seg = Segment{Seq(me.nxt - 1), Seq(me.rcv), Seq(me.rcv), pick(2), me.win, kAck, 0};
        } else if (kind < 88) { // an old or forged sequence or ack
            seg = me.send(kAck, pick(100));
            const uint32_t shift = pick(2) == 0 ? pick(200000) : uint32_t(rng());
            if (pick(2) == 0)
                seg.seq = pick(2) == 0 ? seg.seq + shift : seg.seq - shift;
            else
                seg.ack = seg.sack = pick(2) == 0 ? seg.ack + shift : seg.ack - shift;
        } else if (kind < 92) { // flags beside ACK that stay steady: URG, ECE, CWR
            seg = me.send(uint8_t(kAck | (pick(2) ? kUrg : 0) | (pick(2) ? kEce : 0) | (pick(2) ? kCwr : 0)), pick(50));
            peer.got(seg);
        } else if (kind < 96) {
            seg = me.send(kFinack);
            peer.got(seg);
        } else if (kind < 98) {
            seg = me.send(pick(2) ? kRst : kRstack);
        } else {
            seg = me.send(pick(2) ? kSyn : kSynack);
        }
        last = seg;
        last_dir = d;
        return seg;
    }
};

} // namespace

TEST_CASE("steady path: random conversations give the full path's result", "[tcpstate][window][steady][random]")
{
    std::mt19937_64 rng(20261203);
    Paths paths;
    for (int conv = 0; conv < 1000; ++conv) {
        WindowPolicy p;
        p.be_liberal = rng() % 8 == 0;
        p.ignore_invalid_rst = rng() % 8 == 0;
        // 0 too (every count at the limit: SteadyRules::fresh reads cap[]'s odd half), which the library
        // takes though --tcp-max-retrans does not.
        p.max_retrans = uint8_t(rng() % 6);
        Timeouts t = Timeouts::netfilter_defaults();
        if (rng() % 4 == 0)
            t.max_retrans = uint32_t(rng() % 3 == 0 ? 0 : rng() % 1000);
        if (rng() % 4 == 0)
            t.unacknowledged = uint32_t(rng() % 3 == 0 ? 0 : rng() % 1000);
        if (rng() % 4 == 0)
            t.seconds[size_t(State::established)] = uint32_t(rng() % 1000);
        Conversation cv(rng);
        cv.start(p, t, paths);
        for (int i = 0; i < 300; ++i) {
            if (cv.f.tracker.state == State::close || cv.f.tracker.state == State::time_wait)
                cv.start(p, t, paths);
            Dir d;
            const Segment s = cv.make(d);
            both_ways(cv.f, d, s, p, t, paths);
        }
    }
    INFO("fast " << paths.fast << ", full " << paths.full);
    CHECK(paths.fast > 80000); // the test exercises the fast path, not only its refusals
    CHECK(paths.full > 10000);
}

TEST_CASE("steady path: random and corrupt window state gives the full path's result",
          "[tcpstate][window][steady][random]")
{
    std::mt19937_64 rng(16);
    Paths paths;
    const Timeouts t = Timeouts::netfilter_defaults();
    for (int i = 0; i < 100000; ++i) {
        Flow f;
        f.tracker = Tracker{State::established, uint8_t(rng() % 4 == 0 ? rng() : 0x2c)};
        uint8_t raw[sizeof(WindowSeq) + sizeof(WindowMeta)];
        for (uint8_t& b : raw)
            b = uint8_t(rng());
        std::memcpy(&f.seq, raw, sizeof f.seq);
        std::memcpy(&f.meta, raw + sizeof f.seq, sizeof f.meta);
        const Dir d = rng() % 2 == 0 ? kO : kR;
        const unsigned side = d == kO ? 0 : 1;
        // A side never seen (only corrupt state is steady then), nothing known of the receiver's window,
        // or a side's highest ack unknown: not steady_window(), so the fast path must decline and write
        // nothing.
        if (rng() % 8 == 0)
            f.seq.side[side].maxwin = 0;
        if (rng() % 8 == 0)
            f.seq.side[side ^ 1].maxwin = 0;
        f.meta.flags[side].maxack_set = rng() % 16 == 0 ? 0 : 1;
        f.meta.flags[side ^ 1].maxack_set = rng() % 16 == 0 ? 0 : 1;
        // Mostly near the bounds, so that about half the segments are inside them.
        const uint32_t jitter = uint32_t(rng() % 4 == 0 ? rng() : rng() % 70000);
        const Seq seq = f.seq.side[side].maxend - jitter;
        const Seq ack = f.seq.side[side ^ 1].end - uint32_t(rng() % 70000);
        const Seq sack = rng() % 2 == 0 ? ack : ack + uint32_t(rng() % 3000);
        const uint8_t flags = uint8_t(rng() % 8 == 0 ? rng() : kAck | (rng() % 2 ? kPsh : 0));
        WindowPolicy p;
        p.max_retrans = uint8_t(1 + rng() % 127);
        p.be_liberal = rng() % 2 == 0;
        both_ways(f, d, Segment{seq, ack, sack, uint32_t(rng() % 3000), uint16_t(rng()), flags, 0}, p, t, paths);
    }
    INFO("fast " << paths.fast << ", full " << paths.full);
    CHECK(paths.fast > 10000);
    CHECK(paths.full > 10000);
}
