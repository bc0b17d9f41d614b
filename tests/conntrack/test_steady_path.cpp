// SPDX-License-Identifier: BSD-3-Clause
// The flow table's fused steady path (FlowTable::track_steady, issue 29: the kSteady eligibility bit,
// the per-burst expiry horizon, the prepared cap table, the window's steady_ack) against the full path
// run beside it on a shadow flow: random TCP conversations, many flows interleaved in bursts of up to
// 32 packets, are fed to a real table while each packet also goes through tcpstate::track_full on a
// copy of its flow. After every burst each record must hold what the full path left, field by field:
// the tracker, the 40 window bytes, the cap in the flags, kSteady exactly when the tracker is steady,
// each direction's packets, bytes and flags seen, and last_seen (moved only by accepted packets); the
// table's counters must count every packet as the model does. Time moves in small steps and now and then
// past a steady flow's horizon (the exact expiry test), and the timeouts and window policy change between bursts
// (the prepared rules are rebuilt). tests/tcpstate/test_window_steady.cpp compares the window's two
// paths alone. A twin table takes the same bursts through the steady lane (FlowTable::process_lite:
// every packet a TcpLite can carry, SYNs and FINs included, in runs between the others, as the worker
// splits a burst) and must hold byte for byte the records the first one holds, with the same counters.
#include "harness.h"
#include <conntrack/lite_key.h>
#include <conntrack/table_inspector.h>
#include <tcpstate/segment.h>
#include <tcpstate/window.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::FlowRecord;
using conntrack::TableInspector;
using tcpstate::Dir;
using tcpstate::Outcome;

namespace {

// One end of a connection, numbering its segments as a stack does.
struct End {
    uint32_t nxt = 0, rcv = 0;
    uint16_t win = 65535;
};

// A conversation: its parsed template packets (one per direction: key, src_is_lo), its ends and the
// shadow flow the full path keeps.
struct Conv {
    packet::Packet tmpl[2];
    End end[2];
    tcpstate::Tracker tracker;
    tcpstate::WindowSeq seq{};
    tcpstate::WindowMeta meta{};
    uint64_t packets[2] = {}, bytes[2] = {};
    uint8_t flags_seen[2] = {};
    uint64_t last_seen = 0;
    bool open = false;   // created in the table and still tracked
    bool closed = false; // reset, closed or reopened: no more packets
    packet::Packet last{};
    unsigned last_dir = 0;
};

struct Model {
    uint64_t tracked = 0, invalid = 0, out_of_window = 0;
};

class SteadyRun {
public:
    explicit SteadyRun(uint64_t seed) : rng(seed), h(small_config(1u << 16)), lane(small_config(1u << 16)) {}

    std::mt19937_64 rng;
    Harness h;
    Harness lane; // the same bursts through process_lite
    uint64_t lane_segments = 0;
    packet::LaneIsa lane_isa = packet::LaneIsa::baseline;
    uint64_t lane_bursts[2] = {}; // by the copy that ran them
    std::vector<Conv> convs;
    Model model;
    tcpstate::WindowPolicy policy;
    tcpstate::Timeouts timeouts = tcpstate::Timeouts::netfilter_defaults();
    uint64_t steady_candidates = 0; // packets that met every condition of the fused path

    uint32_t pick(uint32_t n) { return n == 0 ? 0 : uint32_t(rng() % n); }

    void add_conv(uint16_t port) { convs.push_back(make_conv(port)); }
    Conv make_conv(uint16_t port)
    {
        Conv c;
        const Ep a{"10.1.0.1", port}, b{"10.2.0.2", 443};
        for (unsigned d = 0; d < 2; ++d) {
            const auto f = d == 0 ? tcp_frame(a, b, kAck) : tcp_frame(b, a, kAck);
            packet::parse(f.data(), uint32_t(f.size()), c.tmpl[d]);
            REQUIRE(c.tmpl[d].verdict == packet::Verdict::tcp);
        }
        c.end[0].nxt = pick(3) == 0 ? 0xffffffffu - pick(100000) : uint32_t(rng());
        c.end[1].nxt = uint32_t(rng());
        return c;
    }

    packet::Packet segment(Conv& c, unsigned d, uint8_t flags, uint32_t len, uint8_t opts = 0)
    {
        End& me = c.end[d];
        packet::Packet p = c.tmpl[d];
        p.seq = me.nxt;
        p.ack = (flags & kAck) ? me.rcv : 0;
        p.sack = p.ack;
        p.l4_payload_len = len;
        p.ip_len = 40 + len;
        p.window = me.win;
        p.tcp_flags = flags;
        p.tcp_opt = opts;
        me.nxt += len + ((flags & kSyn) ? 1u : 0u) + ((flags & kFin) ? 1u : 0u);
        return p;
    }
    static void got(End& e, const packet::Packet& p)
    {
        e.rcv = p.seq + p.l4_payload_len + ((p.tcp_flags & kSyn) ? 1u : 0u) + ((p.tcp_flags & kFin) ? 1u : 0u);
    }

    // The next packet of conversation c, mostly the steady kind.
    packet::Packet next(Conv& c, unsigned& d)
    {
        if (!c.open) { // its SYN (window scale and SACK sometimes)
            d = 0;
            const uint8_t opts =
                pick(2) ? uint8_t(packet::kTcpOptPresent | packet::kTcpOptWscale | packet::kTcpOptSackPerm | pick(15))
                        : 0;
            return segment(c, 0, kSyn, 0, opts);
        }
        d = pick(2);
        Conv& cv = c;
        End& me = cv.end[d];
        End& peer = cv.end[d ^ 1];
        if (cv.tracker.state == tcpstate::State::syn_sent && d == 1) {
            const uint8_t opts =
                pick(2) ? uint8_t(packet::kTcpOptPresent | packet::kTcpOptWscale | packet::kTcpOptSackPerm | pick(15))
                        : 0;
            packet::Packet p = segment(cv, 1, kSyn | kAck, 0, opts);
            got(peer, p);
            return p;
        }
        me.win = pick(10) == 0 ? 0 : uint16_t(pick(65536));
        const uint32_t kind = pick(100);
        packet::Packet p;
        if (kind < 80) { // data or a pure ACK, usually received
            p = segment(cv, d, pick(3) == 0 ? kAck : uint8_t(kAck | kPsh), pick(3) == 0 ? 0 : 1 + pick(1460));
            if (pick(10) != 0)
                got(peer, p);
        } else if (kind < 80 && cv.last.verdict == packet::Verdict::tcp) { // the previous packet again
            d = cv.last_dir;
            return cv.last;
        } else if (kind < 86) { // a SACK edge above the ack
            p = segment(cv, d, kAck, 0);
            p.sack = p.ack + pick(peer.nxt - p.ack + 2);
        } else if (kind < 97) { // an old or forged sequence or ack
            p = segment(cv, d, kAck, pick(100));
            const uint32_t shift = pick(2) ? pick(200000) : uint32_t(rng());
            if (pick(2))
                p.seq = pick(2) ? p.seq + shift : p.seq - shift;
            else
                p.ack = p.sack = pick(2) ? p.ack + shift : p.ack - shift;
        } else if (kind < 99 || pick(2) == 0) {
            p = segment(cv, d, kFin | kAck, 0);
            got(peer, p);
        } else {
            p = segment(cv, d, pick(2) ? kRst : uint8_t(kRst | kAck), 0);
        }
        cv.last = p;
        cv.last_dir = d;
        return p;
    }

    // The full path on the shadow flow: what the table must do with the packet.
    void model_packet(Conv& c, unsigned d, const packet::Packet& p)
    {
        const tcpstate::Segment s = tcpstate::segment_of(p);
        if (!c.open) {
            c.tracker = tcpstate::Tracker{tcpstate::initial_state(p.tcp_flags, true), 0};
            tcpstate::window_create(tcpstate::FlowRef{c.tracker, c.seq, c.meta}, s, timeouts);
            c.open = true;
            c.packets[0] = 1;
            c.bytes[0] = p.ip_len;
            c.flags_seen[0] = p.tcp_flags;
            c.last_seen = h.now;
            ++model.tracked;
            return;
        }
        const bool candidate = tcpstate::steady(c.tracker, p.tcp_flags);
        const tcpstate::TrackResult r = tcpstate::track_full(tcpstate::FlowRef{c.tracker, c.seq, c.meta},
                                                             d == 0 ? Dir::orig : Dir::reply, s, policy, timeouts);
        if (r.outcome == Outcome::reopen) {
            c.closed = true; // the table ends it and starts another flow: not followed further
            return;
        }
        c.packets[d] += 1;
        c.bytes[d] += p.ip_len;
        c.flags_seen[d] |= p.tcp_flags;
        if (r.outcome == Outcome::ignored) {
            ++model.invalid;
            return;
        }
        if (r.outcome == Outcome::out_of_window) {
            ++model.out_of_window;
            return;
        }
        ++model.tracked;
        c.last_seen = h.now;
        steady_candidates += candidate ? 1 : 0;
        if (r.outcome == Outcome::reset || tcpstate::is_closing(c.tracker.state))
            c.closed = true;
    }

    // What differs between the record of c and the shadow flow ("" when nothing).
    std::string differences(const Conv& c) const
    {
        if (!c.open || c.closed)
            return "";
        const int32_t pos = TableInspector::find(*h.table, c.tmpl[0].key);
        if (pos < 0)
            return "the flow is not in the table";
        const FlowRecord& r = TableInspector::record(*h.table, uint32_t(pos));
        std::string out;
        const auto field = [&](const char* name, uint64_t table, uint64_t model) {
            if (table != model)
                out += std::string(name) + " " + std::to_string(table) + "/" + std::to_string(model) + " ";
        };
        field("state", unsigned(r.l4.tcp.state), unsigned(c.tracker.state));
        field("tracker.flags", r.l4.tcp.flags, c.tracker.flags);
        field("window.seq", std::memcmp(&r.window.tcp.seq, &c.seq, sizeof c.seq) != 0, 0);
        field("window.meta", std::memcmp(&r.window.tcp.meta, &c.meta, sizeof c.meta) != 0, 0);
        field("cap", unsigned(conntrack::cap_of(r.flags)), unsigned(c.meta.timeout_cap()));
        field("kSteady", (r.flags & FlowRecord::kSteady) != 0,
              tcpstate::steady(c.tracker, kAck) && tcpstate::steady_window(c.seq, c.meta));
        field("orig is tmpl[0]", ((r.flags & FlowRecord::kOrigIsLo) != 0) == c.tmpl[0].src_is_lo, 1);
        for (unsigned d = 0; d < 2; ++d) {
            field(d == 0 ? "packets[orig]" : "packets[reply]", r.packets[d], c.packets[d]);
            field(d == 0 ? "bytes[orig]" : "bytes[reply]", r.bytes[d], c.bytes[d]);
            field(d == 0 ? "flags_seen[orig]" : "flags_seen[reply]", r.tcp_flags_seen[d], c.flags_seen[d]);
        }
        field("last_seen", r.last_seen_ns, c.last_seen);
        return out;
    }

    // Past its deadline the table would end the flow and start another from the packet: not followed.
    bool expired(const Conv& c) const
    {
        if (!c.open)
            return false;
        const uint32_t s = tcpstate::capped_timeout(timeouts, c.tracker.state, c.meta.timeout_cap());
        return h.now >= c.last_seen + uint64_t(s) * kSec;
    }

    // One burst: up to 32 packets of random open conversations, each modelled in order.
    void burst()
    {
        std::vector<packet::Packet> pkts;
        pkts.reserve(32);
        const unsigned n = 1 + pick(32);
        for (unsigned i = 0; i < n; ++i) {
            Conv& c = convs[pick(uint32_t(convs.size()))];
            if (expired(c))
                c.closed = true;
            if (c.closed)
                continue;
            unsigned d = 0;
            const packet::Packet p = next(c, d);
            model_packet(c, d, p);
            pkts.push_back(p);
        }
        std::vector<const packet::Packet*> ptrs;
        for (const auto& p : pkts)
            ptrs.push_back(&p);
        h.table->process_burst(ptrs.data(), unsigned(ptrs.size()), h.now);
        feed_lane(pkts);
    }

    static const packet::Packet& full_of(void* ctx, unsigned i) noexcept
    {
        return static_cast<const packet::Packet*>(ctx)[i];
    }
    // The burst through the twin table as the worker feeds it: runs of lane packets and runs of others,
    // each burst's in the other compiled copy of the lane (packet/lane_isa.h) where this CPU runs both, so
    // the two must leave the same records burst after burst.
    void feed_lane(const std::vector<packet::Packet>& pkts)
    {
        lane_isa = lane_isa == packet::LaneIsa::baseline ? packet::LaneIsa::v3 : packet::LaneIsa::baseline;
        lane.table->set_lane_isa(lane_isa);
        lane_bursts[size_t(lane.table->lane_isa())] += 1;
        lane.now = h.now;
        lane.table->set_window_policy(policy);
        lane.table->set_timeouts(timeouts, 0);
        std::vector<packet::TcpLite> segs(pkts.size());
        std::vector<char> lite(pkts.size());
        for (size_t i = 0; i < pkts.size(); ++i)
            lite[i] = packet::lite_of(pkts[i], segs[i]);
        for (size_t start = 0, end = 0; start < pkts.size(); start = end) {
            for (end = start + 1; end < pkts.size() && lite[end] == lite[start];)
                ++end;
            if (lite[start]) {
                lane.table->process_lite(segs.data() + start, unsigned(end - start), lane.now, &full_of,
                                         const_cast<packet::Packet*>(pkts.data() + start));
                lane_segments += end - start;
            } else {
                std::vector<const packet::Packet*> ptrs;
                for (size_t i = start; i < end; ++i)
                    ptrs.push_back(&pkts[i]);
                lane.table->process_burst(ptrs.data(), unsigned(ptrs.size()), lane.now);
            }
        }
    }
    // What differs between the two tables for conversation c's flow ("" when nothing).
    std::string lane_differences(const Conv& c) const
    {
        const int32_t a = TableInspector::find(*h.table, c.tmpl[0].key);
        const int32_t b = TableInspector::find(*lane.table, c.tmpl[0].key);
        if ((a < 0) != (b < 0))
            return a < 0 ? "the lane's table has a flow the other has not" : "the lane's table lacks the flow";
        if (a >= 0 && std::memcmp(&TableInspector::record(*h.table, uint32_t(a)),
                                  &TableInspector::record(*lane.table, uint32_t(b)), sizeof(FlowRecord)) != 0)
            return "the lane's record differs";
        return "";
    }
};

} // namespace

TEST_CASE("steady path: the table's fused path leaves every record as the full path does",
          "[conntrack][steady][random]")
{
    SteadyRun run(29);
    for (uint16_t i = 0; i < 400; ++i)
        run.add_conv(uint16_t(20000 + i));
    uint16_t next_port = 30000;
    std::string bad;
    for (int b = 0; b < 4000 && bad.empty(); ++b) {
        // Time: mostly milliseconds, sometimes past CLOSE's 10 s (quiet steady flows stay on the steady
        // path: their horizon is ESTABLISHED's timeout under their cap), now and then past the caps' 60..660 s.
        run.h.now += run.pick(400) == 0  ? (61 + run.pick(640)) * kSec
                     : run.pick(50) == 0 ? 11 * kSec + run.pick(5) * kSec
                                         : run.pick(2'000'000);
        if (run.pick(200) == 0) { // new rules between bursts: the prepared table and horizon follow
            run.policy.max_retrans = uint8_t(1 + run.pick(5));
            run.policy.be_liberal = run.pick(4) == 0;
            run.h.table->set_window_policy(run.policy);
            run.timeouts.max_retrans = run.pick(3) == 0 ? 0 : 60 + run.pick(600);
            run.timeouts.unacknowledged = run.pick(3) == 0 ? 0 : 60 + run.pick(600);
            run.h.table->set_timeouts(run.timeouts, 0);
        }
        run.burst();
        for (Conv& c : run.convs) {
            bad = run.differences(c);
            if (bad.empty())
                bad = run.lane_differences(c);
            if (!bad.empty()) {
                INFO("burst " << b << ", ports " << c.tmpl[0].key.port_lo << "/" << c.tmpl[0].key.port_hi << ", state "
                              << unsigned(c.tracker.state) << ", last flags " << unsigned(c.last.tcp_flags));
                FAIL(bad);
            }
            if (c.closed && run.pick(8) == 0) // a new conversation in its place
                c = run.make_conv(next_port++);
        }
    }
    const auto& k = run.h.c();
    CHECK(k.tcp_tracked == run.model.tracked);
    CHECK(k.tcp_invalid == run.model.invalid);
    CHECK(k.out_of_window_total() == run.model.out_of_window);
    INFO("steady candidates " << run.steady_candidates << " of " << run.model.tracked);
    CHECK(run.steady_candidates > 20000); // the fused path is exercised, not only declined
    // The twin table: every counter the packets move, as the first table's.
    const auto& l = run.lane.c();
    CHECK(l.tcp_tracked == k.tcp_tracked);
    CHECK(l.tcp_invalid == k.tcp_invalid);
    CHECK(l.out_of_window_total() == k.out_of_window_total());
    CHECK(l.packets_by_verdict == k.packets_by_verdict);
    CHECK(l.flows_created == k.flows_created);
    CHECK(l.active() == k.active());
    CHECK(run.lane_segments > 30000);
    // Both copies ran, where this CPU runs the v3 one.
    CHECK(run.lane_bursts[0] > 1000);
    CHECK((run.lane_bursts[1] > 1000) == packet::lane_isa_runs(packet::LaneIsa::v3));
}

namespace {

// One frame through the steady lane (process_lite), as the worker feeds a frame parse_tcp_lite() takes.
packet::Packet lite_packet;
const packet::Packet& lite_parse(void* frame, unsigned) noexcept
{
    const auto& f = *static_cast<const std::vector<uint8_t>*>(frame);
    packet::parse(f.data(), uint32_t(f.size()), lite_packet);
    return lite_packet;
}
void send_lite(Harness& h, const std::vector<uint8_t>& frame)
{
    packet::TcpLite seg{};
    REQUIRE(packet::parse_tcp_lite(frame.data(), uint32_t(frame.size()), uint32_t(frame.size()), seg));
    h.table->process_lite(&seg, 1, h.now, &lite_parse, const_cast<std::vector<uint8_t>*>(&frame));
}

} // namespace

// The steady path's expiry horizon is ESTABLISHED's timeout under the flow's cap: a steady flow quiet for
// longer than CLOSE's 10 s is still live, and one whose unacknowledged data caps its timeout at 300 s
// expires on arrival past it, on the table's packet path and on the steady lane alike.
TEST_CASE("steady path: a quiet steady flow lives past CLOSE's timeout and expires past its capped one",
          "[conntrack][steady]")
{
    for (const bool lane : {false, true}) {
        CAPTURE(lane);
        Harness h(small_config(1024));
        tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
        t.unacknowledged = 300;
        h.table->set_timeouts(t, 0);
        const Ep a{"10.9.0.1", 40000}, b{"10.9.0.2", 443};
        h.handshake(a, b);
        // Data from a that b has not acknowledged: the cap is unacknowledged's 300 s.
        uint32_t& a_nxt = h.next_seq(a, b);
        const uint32_t b_nxt = h.next_seq(b, a);
        const auto data = tcp_frame(a, b, kAck | kPsh, 100, 0, a_nxt, b_nxt);
        a_nxt += 100;
        lane ? send_lite(h, data) : void(h.send(data));
        const int32_t pos = TableInspector::find(*h.table, h.key(a, b));
        REQUIRE(pos >= 0);
        const FlowRecord& r = TableInspector::record(*h.table, uint32_t(pos));
        REQUIRE((r.flags & FlowRecord::kSteady) != 0);
        REQUIRE(conntrack::cap_of(r.flags) == tcpstate::Cap::unacknowledged);
        const auto ack = [&] { return tcp_frame(a, b, kAck, 0, 0, a_nxt, b_nxt); };
        // 20 s later (CLOSE's timeout is 10 s): the same flow, tracked.
        h.now += 20 * kSec;
        const uint64_t tracked = h.c().tcp_tracked, packets = r.packets[0];
        lane ? send_lite(h, ack()) : void(h.send(ack()));
        CHECK(h.c().tcp_tracked == tracked + 1);
        CHECK(r.packets[0] == packets + 1);
        CHECK(r.last_seen_ns == h.now);
        CHECK(h.expired(conntrack::Reason::inactivity) == 0);
        // 301 s later: past the capped timeout, the flow ends on arrival.
        h.now += 301 * kSec;
        lane ? send_lite(h, ack()) : void(h.send(ack()));
        CHECK(h.expired(conntrack::Reason::inactivity) == 1);
    }
}

// The lane compares only the 12 bytes a segment carries (the IPv4 addresses and the ports), so a record
// whose key differs elsewhere (a zone, VLAN IDs) must never pass its test: kLiteKey, set from the key when
// a flow is created or restored, keeps it off. A zoned, double-tagged flow between the same endpoints as
// an untagged lane segment, its zone and tags chosen so that its key's probe (home bucket and signature)
// is the segment's: its record is the segment's candidate, steady, with the same 12 bytes; the segment
// must start its own flow and leave that record as it was. Created by packets, and restored from a file's
// image.
TEST_CASE("steady path: the lane never takes a flow whose key it cannot carry, though that flow is its candidate",
          "[conntrack][steady][lane]")
{
    const Ep a{"10.9.0.1", 40000}, b{"10.9.0.2", 443};
    for (const bool restored : {false, true}) {
        CAPTURE(restored);
        Harness h(small_config(8));
        const conntrack::Probe want = TableInspector::index(*h.table).probe(conntrack::flow_hash(h.key(a, b)));
        packet::FlowKey other = h.key(a, b);
        bool found = false;
        for (uint32_t v = 1; v < (1u << 24) && !found; ++v) {
            other.zone = uint16_t(v);
            other.vlan[2] = uint8_t(v >> 16);
            const conntrack::Probe p = TableInspector::index(*h.table).probe(conntrack::flow_hash(other));
            found = p.bucket == want.bucket && p.sig == want.sig;
        }
        REQUIRE(found);
        REQUIRE(!packet::is_lite_key(other));
        // The zoned flow's handshake and one ACK, as Packets with that key.
        const auto send_other = [&](Ep from, Ep to, uint8_t flags) {
            uint32_t& nxt = h.next_seq(from, to);
            const uint32_t ack = (flags & kAck) ? h.next_seq(to, from) : 0;
            packet::Packet p;
            const auto f = tcp_frame(from, to, flags, 0, 0, nxt, ack);
            packet::parse(f.data(), uint32_t(f.size()), p);
            p.key = other;
            const packet::Packet* pp = &p;
            h.table->process_burst(&pp, 1, h.now);
            nxt += (flags & kSyn) ? 1u : 0u;
        };
        send_other(a, b, kSyn);
        send_other(b, a, kSyn | kAck);
        send_other(a, b, kAck);
        if (restored) {
            const std::vector<conntrack::FlowImage> images = export_all(*h.table);
            REQUIRE(images.size() == 1);
            Harness fresh(small_config(8));
            fresh.now = h.now;
            h.table = std::move(fresh.table);
            REQUIRE(h.table->restore_flow(images[0], {}, h.now, 0) == conntrack::RestoreOutcome::restored);
            h.table->finish_restore();
            send_other(a, b, kAck); // a restored flow is steady again after its first packet (track())
        }
        const int32_t pos = TableInspector::find(*h.table, other);
        REQUIRE(pos >= 0);
        const FlowRecord& r = TableInspector::record(*h.table, uint32_t(pos));
        REQUIRE((r.flags & FlowRecord::kSteady) != 0);
        REQUIRE((r.flags & FlowRecord::kLiteKey) == 0);
        // The segment's candidate (the table in use now: a restore made a new one, of the same size).
        REQUIRE(TableInspector::index(*h.table).first_candidate(want) == uint32_t(pos));
        const uint64_t packets = r.packets[0], created = h.c().flows_created;
        send_lite(h, tcp_frame(a, b, kAck, 0, 0, h.next_seq(a, b), h.next_seq(b, a)));
        CHECK(r.packets[0] == packets);
        CHECK(h.c().flows_created == created + 1);
        CHECK(h.has(a, b));
    }
}

TEST_CASE("steady path: a segment that wraps the receiver's allowance to 0 takes the flow off the fused path",
          "[conntrack][steady]")
{
    // The fused path takes a flow only while both sides' maxwin are known (tcpstate::steady_window): a
    // forged stream sending past the receiver's allowance grows it by at most a segment each time, so
    // 2^32 is reached only after ~65 000 such segments. The record is set just short of it here.
    for (const bool lane : {false, true}) {
        CAPTURE(lane);
        Harness h(small_config(1024));
        const Ep a{"10.9.1.1", 40000}, b{"10.9.1.2", 443};
        h.handshake(a, b);
        uint32_t& a_nxt = h.next_seq(a, b);
        const uint32_t b_nxt = h.next_seq(b, a);
        const auto ack = tcp_frame(a, b, kAck, 0, 0, a_nxt, b_nxt);
        lane ? send_lite(h, ack) : void(h.send(ack)); // a's side and b's seen: steady
        const int32_t pos = TableInspector::find(*h.table, h.key(a, b));
        REQUIRE(pos >= 0);
        const FlowRecord& r = TableInspector::record(*h.table, uint32_t(pos));
        REQUIRE((r.flags & FlowRecord::kSteady) != 0);
        // 100 bytes from a ending 90 past a's maxend, and b's allowance 90 short of 2^32 (the record is
        // the owner's; the test stands in for the forged stream).
        auto& w = const_cast<FlowRecord&>(r).window.tcp.seq;
        w.side[0].maxend = tcpstate::Seq(a_nxt + 10);
        w.side[1].maxwin = 0u - 90u;
        const uint64_t tracked = h.c().tcp_tracked, fused = h.table->steady_taken();
        const auto data = tcp_frame(a, b, kAck | kPsh, 100, 0, a_nxt, b_nxt);
        a_nxt += 100;
        lane ? send_lite(h, data) : void(h.send(data));
        CHECK(h.c().tcp_tracked == tracked + 1);
        CHECK(h.table->steady_taken() == fused + 1); // the fused path took it, as the full path would have
        CHECK(w.side[1].maxwin == 0);
        CHECK((r.flags & FlowRecord::kSteady) == 0); // and gave the flow up
        // The next segment: the full path (b's side is unseen again), tracked all the same.
        const auto reply = tcp_frame(b, a, kAck, 0, 0, b_nxt, a_nxt);
        lane ? send_lite(h, reply) : void(h.send(reply));
        CHECK(h.c().tcp_tracked == tracked + 2);
        CHECK(h.table->steady_taken() == fused + 1);
        CHECK(w.side[1].maxwin != 0);
    }
}

TEST_CASE(
    "steady path: the lane's key test is same_key() on every byte of the key and none after it, its hash the key's",
    "[conntrack][steady][lane]")
{
    // A record holding the segment's own key (IPv4-mapped, TCP, no VLAN IDs, zone 0), then each of its
    // 42 bytes changed in turn (an IPv6 key, a VLAN, a zone, another protocol...), and the record's
    // bytes after the key (flags, state) random: the lane's test, kLiteKey as the record would hold it
    // (is_lite_key() of its key, as creation and restore set it) and then lite_key_of(), must say what
    // same_key() says.
    std::mt19937_64 rng(29);
    unsigned matched = 0, differed = 0;
    for (int i = 0; i < 2000; ++i) {
        packet::TcpLite t{};
        t.addr_lo = uint32_t(rng());
        t.addr_hi = uint32_t(rng());
        t.port_lo = uint16_t(rng());
        t.port_hi = uint16_t(rng());
        t.seq = uint32_t(rng());
        t.ack = t.sack = uint32_t(rng());
        FlowRecord r{};
        r.key = packet::lite_key(t);
        r.flags = uint8_t(rng());
        r.l4.raw[0] = uint8_t(rng());
        r.tcp_flags_seen[0] = uint8_t(rng());
        r.timeout_slot = uint8_t(rng());
        const unsigned byte = unsigned(rng() % 43); // 42: the key as it is
        if (byte < 42)
            reinterpret_cast<uint8_t*>(&r.key)[byte] ^= uint8_t(1u << (rng() % 8));
        const bool same = conntrack::same_key(r.key, packet::lite_key(t));
        CAPTURE(byte);
        const bool lite = packet::is_lite_key(r.key);
        REQUIRE(lite == (byte >= 42 || (byte >= 12 && byte < 16) || (byte >= 28 && byte < 36)));
        REQUIRE((lite && conntrack::lite_key_of(r, t)) == same);
        REQUIRE(conntrack::same_key(r.key, conntrack::lite_words(t)) == same);
        // The lane's hash is the FlowKey's, from the per-burst base, whatever the seed.
        const uint32_t seed = i % 2 == 0 ? 0 : uint32_t(rng());
        REQUIRE(conntrack::flow_hash(conntrack::lite_words(t), conntrack::lite_hash_base(seed)) ==
                conntrack::flow_hash(packet::lite_key(t), seed));
        (same ? matched : differed) += 1;
    }
    CHECK(matched > 20);
    CHECK(differed > 1000);
}
