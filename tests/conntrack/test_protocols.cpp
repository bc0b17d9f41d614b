// SPDX-License-Identifier: BSD-3-Clause
// FlowTable with every protocol (issue 15): UDP, ICMP/ICMPv6 queries, other IP protocols, their
// timeouts and netfilter's UDP stream rule, --track, ICMP errors counted on the flow they quote,
// attributed fragments, per-family counters, early drop of unreplied UDP.
#include "harness.h"

#include <catch2/catch.hpp>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Proto;
using conntrack::Reason;
using packet::Verdict;

namespace {

const Ep kDnsClient{"10.0.0.1", 5353};
const Ep kDnsServer{"10.0.0.2", 53};

bool is_v6(Ep e)
{
    return std::string(e.addr).find(':') != std::string::npos;
}

FrameBuilder ip_from(Ep a, Ep b)
{
    FrameBuilder f;
    if (is_v6(a))
        f.ipv6({.src = ip6(a.addr), .dst = ip6(b.addr)});
    else
        f.ipv4({.src = ip4(a.addr), .dst = ip4(b.addr)});
    return f;
}

std::vector<uint8_t> udp(Ep a, Ep b, size_t payload = 20)
{
    return ip_from(a, b).udp({.sport = a.port, .dport = b.port}).payload(payload).build();
}

// Echo request (from_a) or reply with identifier `id` between a and b.
std::vector<uint8_t> echo(Ep a, Ep b, bool request, uint16_t id = 7)
{
    const bool v6 = is_v6(a);
    const uint8_t type = request ? (v6 ? 128 : 8) : (v6 ? 129 : 0);
    return ip_from(a, b).icmp({.type = type, .id = id}).payload(16).build();
}

std::vector<uint8_t> gre(Ep a, Ep b)
{
    return ip_from(a, b).next_protocol(47).payload(24).build();
}

// A destination-unreachable error sent by `from` (the quoted packet's destination) about `inner`.
std::vector<uint8_t> unreachable(Ep from, Ep to, const FrameBuilder& inner)
{
    const uint8_t type = is_v6(from) ? 1 : 3;
    return ip_from(from, to).icmp({.type = type, .code = 3, .rest = 0}).quote(inner).build();
}

conntrack::FlowSnapshot only_flow(const Harness& h)
{
    conntrack::FlowSnapshot s[2];
    REQUIRE(h.table->snapshot({}, s, 2) == 1);
    return s[0];
}

size_t at(Proto p)
{
    return static_cast<size_t>(p);
}

} // namespace

TEST_CASE("UDP: both directions are one flow, unreplied until the reply, stream and assured after 2 s",
          "[conntrack][proto][udp]")
{
    Harness h;
    REQUIRE(h.send(udp(kDnsClient, kDnsServer)) == Verdict::udp);
    auto f = only_flow(h);
    CHECK(f.proto == Proto::udp);
    CHECK(std::string(conntrack::state_name(f)) == "UNREPLIED");
    CHECK_FALSE(f.assured);
    // The unreplied timeout is 30 s.
    CHECK(f.deadline_ns == h.now + 30 * kSec);

    h.now += kSec;
    h.send(udp(kDnsServer, kDnsClient));
    f = only_flow(h);
    CHECK(std::string(conntrack::state_name(f)) == "REPLIED");
    CHECK_FALSE(f.assured); // the first reply is still under the unreplied timeout, as in netfilter
    CHECK(f.deadline_ns == h.now + 30 * kSec);
    CHECK(f.packets[0] == 1);
    CHECK(f.packets[1] == 1);

    // 2 s after creation is not yet "older than 2 s"; after that the next packet assures it.
    h.now += kSec;
    h.send(udp(kDnsClient, kDnsServer));
    CHECK_FALSE(only_flow(h).assured);
    h.now += 1;
    h.send(udp(kDnsClient, kDnsServer));
    f = only_flow(h);
    CHECK(f.assured);
    CHECK(f.deadline_ns == h.now + 120 * kSec);
    CHECK(h.c().proto_tracked[at(Proto::udp)] == 4);
    CHECK(h.c().flows_created_by_proto[at(Proto::udp)] == 1);
    CHECK(h.accounting_holds());
}

TEST_CASE("UDP: an unreplied flow expires after 30 s of silence, a stream after 120 s", "[conntrack][proto][udp]")
{
    Harness h;
    h.send(udp(kDnsClient, kDnsServer));
    h.run_for(29);
    CHECK(h.c().active() == 1);
    h.run_for(2);
    CHECK(h.c().active() == 0);
    CHECK(h.expired(Reason::inactivity) == 1);
    CHECK(h.c().flows_expired_by_proto[at(Proto::udp)] == 1);

    h.send(udp(kDnsClient, kDnsServer));
    h.now += kSec;
    h.send(udp(kDnsServer, kDnsClient));
    h.now += 2 * kSec;
    h.send(udp(kDnsServer, kDnsClient));
    REQUIRE(only_flow(h).assured);
    h.run_for(119);
    CHECK(h.c().active() == 1);
    h.run_for(2);
    CHECK(h.c().active() == 0);
    CHECK(h.accounting_holds());
}

TEST_CASE("UDP timeouts are settable, and a shortened one fires on time", "[conntrack][proto][udp]")
{
    auto cfg = small_config();
    cfg.proto_timeouts.seconds_by_timeout[static_cast<size_t>(protostate::Timeout::udp_unreplied)] = 5;
    Harness h(cfg);
    h.send(udp(kDnsClient, kDnsServer));
    CHECK(only_flow(h).deadline_ns == h.now + 5 * kSec);
    h.run_for(6);
    CHECK(h.c().active() == 0);

    h.send(udp(kDnsClient, kDnsServer));
    auto t = protostate::Timeouts::netfilter_defaults();
    t.seconds_by_timeout[static_cast<size_t>(protostate::Timeout::udp_unreplied)] = 2;
    h.table->set_proto_timeouts(t);
    while (h.table->rebase_step(1024) != 0) {
    }
    h.run_for(3);
    CHECK(h.c().active() == 0);
    CHECK(h.accounting_holds());
}

TEST_CASE("ICMP and ICMPv6 echo: request and reply are one flow by identifier, 30 s", "[conntrack][proto][icmp]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        Harness h;
        const Ep a = v6 ? Ep{"2001:db8::1", 0} : Ep{"10.0.0.1", 0};
        const Ep b = v6 ? Ep{"2001:db8::2", 0} : Ep{"10.0.0.2", 0};
        // A reply to no known request creates nothing.
        REQUIRE(h.send(echo(b, a, false)) == Verdict::icmp);
        CHECK(h.c().proto_no_flow[at(Proto::icmp)] == 1);
        CHECK(h.c().flows_created == 0);

        h.send(echo(a, b, true));
        h.send(echo(b, a, false));
        h.send(echo(a, b, true, 8)); // another identifier: another flow
        CHECK(h.c().flows_created_by_proto[at(Proto::icmp)] == 2);
        conntrack::FlowSnapshot s[3];
        REQUIRE(h.table->snapshot({}, s, 3) == 2);
        for (size_t i = 0; i < 2; ++i) {
            const auto& f = s[i];
            if (f.packets[0] + f.packets[1] == 2) {
                CHECK(f.packets[1] == 1);
                CHECK(std::string(conntrack::state_name(f)) == "REPLIED");
                CHECK_FALSE(f.assured); // ICMP is never assured (netfilter)
            }
            CHECK(f.proto == Proto::icmp);
            CHECK(f.deadline_ns == h.now + 30 * kSec);
        }
        h.run_for(31);
        CHECK(h.c().active() == 0);
        CHECK(h.accounting_holds());
    }
}

TEST_CASE("Other IP protocols are keyed by addresses and protocol, 600 s", "[conntrack][proto][other]")
{
    Harness h;
    const Ep a{"10.0.0.1", 0}, b{"10.0.0.2", 0};
    REQUIRE(h.send(gre(a, b)) == Verdict::other_l4);
    h.send(gre(b, a));
    const auto f = only_flow(h);
    CHECK(f.proto == Proto::other);
    CHECK(f.key.proto == 47);
    CHECK(f.packets[0] == 1);
    CHECK(f.packets[1] == 1);
    CHECK(f.deadline_ns == h.now + 600 * kSec);
    h.run_for(599);
    CHECK(h.c().active() == 1);
    h.run_for(2);
    CHECK(h.c().active() == 0);
    CHECK(h.c().flows_expired_by_proto[at(Proto::other)] == 1);
}

TEST_CASE("--track: an untracked family is only counted by verdict", "[conntrack][proto][track]")
{
    auto cfg = small_config();
    conntrack::TrackMask m = 0;
    REQUIRE(conntrack::parse_track_mask("tcp,icmp", m));
    cfg.track = m;
    Harness h(cfg);
    h.send(udp(kDnsClient, kDnsServer));
    h.send(gre({"10.0.0.1", 0}, {"10.0.0.2", 0}));
    h.handshake(client, server);
    h.send(echo({"10.0.0.1", 0}, {"10.0.0.2", 0}, true));
    CHECK(h.c().flows_created == 2);
    CHECK(h.c().flows_created_by_proto[at(Proto::tcp)] == 1);
    CHECK(h.c().flows_created_by_proto[at(Proto::icmp)] == 1);
    CHECK(h.c().packets_by_verdict[static_cast<size_t>(Verdict::udp)] == 1);
    CHECK(h.c().packets_by_verdict[static_cast<size_t>(Verdict::other_l4)] == 1);
    CHECK(h.c().proto_tracked[at(Proto::udp)] == 0);

    REQUIRE(conntrack::parse_track_mask("udp", m));
    auto cfg2 = small_config();
    cfg2.track = m;
    Harness u(cfg2);
    u.handshake(client, server);
    u.send(udp(kDnsClient, kDnsServer));
    CHECK(u.c().flows_created == 1);
    CHECK(u.c().tcp_tracked == 0);
    CHECK(u.accounting_holds());
}

TEST_CASE("--track's parser", "[conntrack][proto][track]")
{
    conntrack::TrackMask m = 0x55;
    CHECK(conntrack::parse_track_mask("all", m));
    CHECK(m == conntrack::kTrackAll);
    CHECK(conntrack::parse_track_mask("tcp,udp,icmp,other", m));
    CHECK(m == conntrack::kTrackAll);
    CHECK(conntrack::parse_track_mask("other", m));
    CHECK(m == conntrack::track_bit(Proto::other));
    for (const char* bad : {"", "tcp,", ",tcp", "tcp,,udp", "TCP", "sctp", "all,tcp"}) {
        CAPTURE(bad);
        conntrack::TrackMask before = m;
        CHECK_FALSE(conntrack::parse_track_mask(bad, m));
        CHECK(m == before);
    }
}

TEST_CASE("ICMP errors count on the flow they quote, from either side, and never create one",
          "[conntrack][proto][related]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        Harness h;
        const Ep c = v6 ? Ep{"2001:db8::1", 5353} : kDnsClient;
        const Ep s = v6 ? Ep{"2001:db8::2", 53} : kDnsServer;
        const Ep router = v6 ? Ep{"2001:db8::fe", 0} : Ep{"10.0.0.254", 0};
        h.send(udp(c, s));
        // The server's port is closed: it quotes the client's datagram.
        REQUIRE(h.send(unreachable(s, c, ip_from(c, s).udp({.sport = c.port, .dport = s.port}).payload(20))) ==
                Verdict::icmp_error);
        // A router on the way back quotes a server -> client datagram.
        h.send(unreachable(router, s, ip_from(s, c).udp({.sport = s.port, .dport = c.port}).payload(20)));
        auto f = only_flow(h);
        CHECK(f.related == 2);
        CHECK(f.packets[0] + f.packets[1] == 1); // errors are not the flow's packets
        CHECK(std::string(conntrack::state_name(f)) == "UNREPLIED");
        CHECK(h.c().icmp_related == 2);
        // A quote of a flow that is not here.
        h.send(unreachable(s, c, ip_from(c, s).udp({.sport = 1, .dport = 2}).payload(20)));
        CHECK(h.c().icmp_related_unknown == 1);
        CHECK(h.c().flows_created == 1);
        // A TCP flow's error counts on it too.
        h.handshake(client, server);
        if (!v6) {
            h.send(unreachable({"10.0.0.254", 0}, client, ip_from(client, server).tcp({.sport = 40000, .dport = 80})));
            CHECK(h.c().icmp_related == 3);
        }
        CHECK(h.accounting_holds());
    }
}

TEST_CASE("Attributed later fragments count on their flow; unattributed ones are not taken",
          "[conntrack][proto][fragment]")
{
    Harness h;
    const auto first = FrameBuilder()
                           .ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2"), .id = 9, .more_fragments = true})
                           .udp({.sport = 5353, .dport = 53, .length = 1008})
                           .payload(600)
                           .build();
    const auto later = FrameBuilder()
                           .ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2"), .id = 9, .frag_offset = 76})
                           .next_protocol(17)
                           .payload(400)
                           .build();
    REQUIRE(h.send(first) == Verdict::udp);
    packet::Packet p;
    packet::parse(later.data(), uint32_t(later.size()), p);
    REQUIRE(p.verdict == Verdict::fragment);
    const packet::Packet* pp = &p;
    // Not attributed: counted by verdict only.
    h.table->process_burst(&pp, 1, h.now);
    CHECK(h.c().fragments_tracked + h.c().fragments_no_flow == 0);
    // Attributed (the worker's fragattr gives it the first fragment's ports).
    p.key.port_lo = p.src_is_lo ? 5353 : 53;
    p.key.port_hi = p.src_is_lo ? 53 : 5353;
    p.extra.frag_flags |= packet::kFragAttributed;
    h.table->process_burst(&pp, 1, h.now);
    CHECK(h.c().fragments_tracked == 1);
    const auto f = only_flow(h);
    CHECK(f.packets[0] == 2);
    CHECK(f.bytes[0] == test::ip_length(first) + test::ip_length(later));
    // Its flow gone: counted, nothing created.
    h.run_for(31);
    h.table->process_burst(&pp, 1, h.now);
    CHECK(h.c().fragments_no_flow == 1);
    CHECK(h.c().flows_created == 1);
}

TEST_CASE("A full table evicts unreplied UDP before refusing, never an assured flow", "[conntrack][proto][udp]")
{
    Harness h(small_config(8));
    for (uint16_t i = 0; i < 8; ++i)
        h.send(udp({"10.0.0.1", uint16_t(1000 + i)}, kDnsServer));
    CHECK(h.c().active() == 8);
    // Each new flow samples 8 random records for an unassured one: all are, so nothing is refused.
    for (uint16_t i = 0; i < 50; ++i) {
        h.now += 1000;
        h.send(udp({"10.0.0.3", uint16_t(2000 + i)}, kDnsServer));
    }
    CHECK(h.c().proto_table_full[at(Proto::udp)] + h.expired(Reason::evicted) >= 50);
    CHECK(h.c().active() == 8);
    CHECK(h.accounting_holds());

    // A table of assured streams refuses a new flow instead of evicting one.
    Harness s(small_config(8));
    for (uint16_t i = 0; i < 8; ++i) {
        const Ep c{"10.0.0.1", uint16_t(1000 + i)};
        s.send(udp(c, kDnsServer));
        s.send(udp(kDnsServer, c));
    }
    s.now += 3 * kSec;
    for (uint16_t i = 0; i < 8; ++i)
        s.send(udp({"10.0.0.1", uint16_t(1000 + i)}, kDnsServer));
    s.send(udp({"10.0.0.9", 9}, kDnsServer));
    CHECK(s.c().proto_table_full[at(Proto::udp)] == 1);
    CHECK(s.expired(Reason::evicted) == 0);
}

TEST_CASE("Flows list and filter by protocol; kill ends a UDP flow", "[conntrack][proto]")
{
    Harness h;
    h.send(udp(kDnsClient, kDnsServer));
    h.handshake(client, server);
    conntrack::SnapshotFilter f;
    f.match_proto = true;
    f.proto = Proto::udp;
    conntrack::FlowSnapshot s[4];
    REQUIRE(h.table->snapshot(f, s, 4) == 1);
    CHECK(s[0].key.proto == 17);
    REQUIRE(h.table->kill(s[0].key));
    h.run_for(1);
    CHECK(h.expired(Reason::killed) == 1);
    CHECK(h.c().active_of(Proto::udp) == 0);
    CHECK(h.c().active_of(Proto::tcp) == 1);
}

namespace {

// A model of netfilter's UDP/ICMP/generic rules (lib/protostate) for the randomized check below.
struct ModelFlow {
    bool live = false;
    bool orig_is_a = true; // who sent the creating packet
    bool seen_reply = false, assured = false;
    uint64_t first = 0, last = 0;
    uint64_t packets[2] = {0, 0};
    uint32_t related = 0;
    uint64_t timeout_s(Proto p) const { return p == Proto::udp ? (assured ? 120 : 30) : p == Proto::icmp ? 30 : 600; }
};

} // namespace

TEST_CASE("Randomized: UDP, ICMP and other flows match a model of netfilter's rules", "[conntrack][proto][model]")
{
    // Three conversations between a and b (UDP, echo, GRE), driven at random: packets either way,
    // echo replies that may precede their request, ICMP errors about the UDP flow, time steps that
    // straddle every timeout and the 2 s stream age, and the cop after each step. Every flow the model
    // knows to be live must be in the table with the model's packets, reply state, assurance and
    // related count; every flow past its deadline by a tick must be gone; counters must add up.
    const Ep a{"10.1.0.1", 4000}, b{"10.1.0.2", 53};
    const Proto protos[3] = {Proto::udp, Proto::icmp, Proto::other};
    const uint64_t steps_ms[] = {0, 100, 1500, 2100, 29'000, 30'500, 119'000, 121'000, 599'000, 601'000};
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        CAPTURE(seed);
        Harness h;
        uint64_t rng = seed * 0x9e3779b97f4a7c15ull;
        auto rnd = [&](uint64_t n) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            return rng % n;
        };
        ModelFlow m[3];
        uint64_t created[3] = {}, ended[3] = {};
        for (int step = 0; step < 300; ++step) {
            h.now += steps_ms[rnd(std::size(steps_ms))] * 1'000'000;
            h.cop();
            const unsigned k = unsigned(rnd(3));
            const bool from_a = rnd(2) == 0;
            const Ep src = from_a ? a : b, dst = from_a ? b : a;
            ModelFlow& f = m[k];
            // The table ends a flow at its deadline, on arrival or by the cop.
            if (f.live && h.now >= f.last + f.timeout_s(protos[k]) * kSec) {
                f.live = false;
                ++ended[k];
            }
            if (k == 0 && rnd(4) == 0) {
                // An ICMP error about the UDP conversation, quoting a datagram from src.
                h.send(unreachable(dst, src, ip_from(src, dst).udp({.sport = src.port, .dport = dst.port}).payload(8)));
                f.related += f.live ? 1 : 0;
                continue;
            }
            bool request = true;
            if (k == 0)
                h.send(udp(src, dst));
            else if (k == 1) {
                // The side that opened the echo flow sends requests; the other replies.
                request = !f.live ? rnd(3) != 0 : from_a == f.orig_is_a;
                h.send(echo({src.addr, 0}, {dst.addr, 0}, request, 9));
            } else
                h.send(gre({src.addr, 0}, {dst.addr, 0}));
            if (!f.live) {
                if (k == 1 && !request)
                    continue; // a reply starts no flow
                f = ModelFlow{};
                f.live = true;
                f.orig_is_a = from_a;
                f.first = f.last = h.now;
                f.packets[0] = 1;
                ++created[k];
                continue;
            }
            const bool reply = from_a != f.orig_is_a;
            if (protos[k] == Proto::udp && f.seen_reply && h.now - f.first > 2 * kSec)
                f.assured = true;
            f.seen_reply |= reply;
            f.last = h.now;
            ++f.packets[reply ? 1 : 0];
        }
        // Every live model flow is in the table as modelled; every dead one is gone after a tick.
        h.now += 0;
        std::vector<conntrack::FlowSnapshot> all(16);
        all.resize(h.table->snapshot({}, all.data(), all.size()));
        for (unsigned k = 0; k < 3; ++k) {
            CAPTURE(k);
            const conntrack::FlowSnapshot* got = nullptr;
            for (const auto& s : all)
                if (s.proto == protos[k])
                    got = &s;
            const ModelFlow& f = m[k];
            const uint64_t deadline = f.last + f.timeout_s(protos[k]) * kSec;
            if (f.live && h.now < deadline) {
                REQUIRE(got != nullptr);
                CHECK(got->packets[0] == f.packets[0]);
                CHECK(got->packets[1] == f.packets[1]);
                CHECK(got->first_seen_ns == f.first);
                CHECK(got->last_seen_ns == f.last);
                CHECK(got->other.seen_reply() == f.seen_reply);
                CHECK(got->assured == f.assured);
                CHECK(got->deadline_ns == deadline);
                CHECK(got->related == f.related);
            } else if (!f.live || h.now >= deadline + kSec) {
                CHECK(got == nullptr);
            }
            CHECK(h.c().flows_created_by_proto[size_t(protos[k])] == created[k]);
        }
        CHECK(h.accounting_holds());
        CHECK(h.c().proto_tracked[size_t(Proto::udp)] + h.c().proto_tracked[size_t(Proto::icmp)] +
                  h.c().proto_tracked[size_t(Proto::other)] + h.c().proto_no_flow[size_t(Proto::icmp)] ==
              h.c().packets_by_verdict[size_t(Verdict::udp)] + h.c().packets_by_verdict[size_t(Verdict::icmp)] +
                  h.c().packets_by_verdict[size_t(Verdict::other_l4)]);
        CHECK(h.c().icmp_related + h.c().icmp_related_unknown == h.c().packets_by_verdict[size_t(Verdict::icmp_error)]);
    }
}
