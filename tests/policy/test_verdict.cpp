// SPDX-License-Identifier: BSD-3-Clause
// The compiled Policy's verdicts: each match, first match wins, the default, the family rule and
// the established shortcut (policy.h).
#include "policy_test_support.h"

using namespace flowcop::policy;
using namespace flowcop::policy::test;

namespace {

constexpr State kNew = State::new_;
constexpr State kEst = State::established;

uint16_t rule_of(const Policy& p, const PacketView& v)
{
    return p.verdict(v).rule;
}

} // namespace

// Without --policy flowcop forwards everything: the empty policy accepts every state.
TEST_CASE("the empty policy accepts every packet as its default", "[policy][verdict]")
{
    Policy p;
    for (unsigned s = 0; s < kStateCount; ++s) {
        PacketView v;
        v.state = static_cast<State>(s);
        const Decision d = p.verdict(v);
        CHECK(d.rule == 0);
        CHECK(d.action == Action::accept);
    }
}

TEST_CASE("the default action decides what no rule matches", "[policy][verdict]")
{
    Policy p = compiled("tcp dport 22 accept\npolicy drop");
    Decision d = p.verdict(tcp(kNew, "10.0.0.1", 4000, "10.0.0.2", 80));
    CHECK(d.rule == 1);
    CHECK(d.action == Action::drop);
    d = p.verdict(tcp(kNew, "10.0.0.1", 4000, "10.0.0.2", 22));
    CHECK(d.rule == 0);
    CHECK(d.action == Action::accept);
}

TEST_CASE("the first matching rule wins, in file order", "[policy][verdict]")
{
    Policy p = compiled("tcp dport 22 drop\ntcp dport 1-100 accept\naccept\n");
    CHECK(p.verdict(tcp(kNew, "10.0.0.1", 4000, "10.0.0.2", 22)).action == Action::drop);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 4000, "10.0.0.2", 23)) == 1);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 4000, "10.0.0.2", 101)) == 2);
}

TEST_CASE("ct state matches exactly the states of its set", "[policy][verdict][state]")
{
    Policy p = compiled("ct state { new, invalid } drop\nct state related accept\nct state untracked drop\npolicy "
                        "accept");
    const uint16_t expect[kStateCount] = {0, 3, 1, 0, 2}; // new, established, related, invalid, untracked
    for (unsigned s = 0; s < kStateCount; ++s) {
        PacketView v;
        v.state = static_cast<State>(s);
        CHECK(rule_of(p, v) == expect[s]);
    }
}

TEST_CASE("ip saddr and daddr match IPv4 prefixes and sets against the packet's own direction",
          "[policy][verdict][addr]")
{
    Policy p = compiled("ip saddr { 10.0.0.0/8, 192.168.1.1 } ip daddr 172.16.0.0/12 accept\npolicy drop");
    CHECK(rule_of(p, tcp(kNew, "10.9.9.9", 1, "172.31.255.255", 2)) == 0);
    CHECK(rule_of(p, tcp(kNew, "192.168.1.1", 1, "172.16.0.0", 2)) == 0);
    CHECK(rule_of(p, tcp(kNew, "192.168.1.2", 1, "172.16.0.1", 2)) == 1);
    CHECK(rule_of(p, tcp(kNew, "11.0.0.1", 1, "172.16.0.1", 2)) == 1);
    CHECK(rule_of(p, tcp(kNew, "172.16.0.1", 1, "10.0.0.1", 2)) == 1); // the reply direction is another packet
}

TEST_CASE("ip6 saddr and daddr match IPv6 prefixes, including across the 64-bit halves", "[policy][verdict][addr]")
{
    Policy p = compiled("ip6 saddr 2001:db8::/32 ip6 daddr { ::1, 2001:db8:0:0:8000::/65 } accept\npolicy drop");
    CHECK(rule_of(p, tcp(kNew, "2001:db8:1::5", 1, "::1", 2)) == 0);
    CHECK(rule_of(p, tcp(kNew, "2001:db8::5", 1, "2001:db8::8fff:0:0:1", 2)) == 0);
    CHECK(rule_of(p, tcp(kNew, "2001:db8::5", 1, "2001:db8::7fff:0:0:1", 2)) == 1); // bit 64 clear
    CHECK(rule_of(p, tcp(kNew, "2001:db9::5", 1, "::1", 2)) == 1);
    CHECK(rule_of(p, tcp(kNew, "2001:db8::5", 1, "::2", 2)) == 1);
}

// flowcop holds IPv4 IPv4-mapped: without the family test, ::ffff:0:0/96 would match IPv4 packets
// and 10.0.0.0/8 an IPv6 packet carrying ::ffff:10.x on the wire.
TEST_CASE("an IPv4 prefix never matches an IPv6 packet, nor an IPv6 prefix an IPv4 one", "[policy][verdict][family]")
{
    Policy v4 = compiled("ip saddr 0.0.0.0/0 drop");
    PacketView mapped = tcp(kNew, "::ffff:10.0.0.1", 1, "::ffff:10.0.0.2", 2);
    REQUIRE(mapped.family == Family::ipv6);
    CHECK(v4.verdict(mapped).action == Action::accept);
    CHECK(v4.verdict(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 2)).action == Action::drop);

    Policy v6 = compiled("ip6 saddr ::/0 drop");
    CHECK(v6.verdict(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 2)).action == Action::accept);
    CHECK(v6.verdict(mapped).action == Action::drop);
    Policy mapped_prefix = compiled("ip6 daddr ::ffff:0.0.0.0/96 drop");
    CHECK(mapped_prefix.verdict(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 2)).action == Action::accept);

    PacketView arp; // non-IP: no address or protocol match applies
    arp.state = State::untracked;
    CHECK(v4.verdict(arp).action == Action::accept);
    CHECK(compiled("meta l4proto 0 drop").verdict(arp).action == Action::accept);
}

TEST_CASE("meta l4proto matches the packet's protocol", "[policy][verdict][proto]")
{
    Policy p = compiled("meta l4proto udp drop");
    CHECK(p.verdict(udp(kNew, "10.0.0.1", 1, "10.0.0.2", 53)).action == Action::drop);
    CHECK(p.verdict(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 53)).action == Action::accept);
}

TEST_CASE("tcp and udp ports match single ports, ranges and sets, and only their protocol", "[policy][verdict][ports]")
{
    Policy p = compiled("tcp dport { 22, 8000-8080 } accept\nudp sport 53 accept\npolicy drop");
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 22)) == 0);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 8000)) == 0);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 8080)) == 0);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 8081)) == 2);
    CHECK(rule_of(p, udp(kNew, "10.0.0.1", 1, "10.0.0.2", 22)) == 2); // udp to 22: not a tcp dport
    CHECK(rule_of(p, udp(kNew, "10.0.0.1", 53, "10.0.0.2", 9)) == 1);
    CHECK(rule_of(p, tcp(kNew, "10.0.0.1", 53, "10.0.0.2", 9)) == 2);
}

TEST_CASE("iif matches the ingress port by id or by a name the resolver knows", "[policy][verdict][iif]")
{
    Policy p = compiled("iif eth1 drop\niif 3 drop");
    PacketView v = tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 2);
    v.port = 0;
    CHECK(p.verdict(v).action == Action::accept);
    v.port = 1;
    CHECK(rule_of(p, v) == 0);
    v.port = 3;
    CHECK(rule_of(p, v) == 1);
}

TEST_CASE("vlan id and ct zone match the outer VLAN id and the zone", "[policy][verdict]")
{
    Policy p = compiled("vlan id 42 drop\nct zone 7 drop");
    PacketView v = tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 2);
    CHECK(p.verdict(v).action == Action::accept);
    v.vlan = 42;
    CHECK(rule_of(p, v) == 0);
    v.vlan = 43;
    v.zone = 7;
    CHECK(rule_of(p, v) == 1);
}

TEST_CASE("all matches of one rule must hold together", "[policy][verdict]")
{
    Policy p = compiled("ct state new ip saddr 10.0.0.0/8 tcp dport 22 iif 2 vlan id 5 ct zone 3 accept\npolicy drop");
    PacketView v = tcp(kNew, "10.1.1.1", 999, "192.0.2.1", 22);
    v.port = 2;
    v.vlan = 5;
    v.zone = 3;
    CHECK(rule_of(p, v) == 0);
    for (int broken = 0; broken < 6; ++broken) {
        PacketView w = v;
        switch (broken) {
        case 0: w.state = kEst; break;
        case 1: to16("11.1.1.1", w.src); break;
        case 2: w.dport = 23; break;
        case 3: w.port = 1; break;
        case 4: w.vlan = 6; break;
        default: w.zone = 4; break;
        }
        CHECK(rule_of(p, w) == 1);
    }
}

// Issue 31's cost clause: with `ct state established,related accept` first, an established packet
// is decided by the per-state table (one byte test) before any rule is examined.
TEST_CASE("a leading ct state established,related accept decides established packets without a rule walk",
          "[policy][verdict][shortcut]")
{
    Policy p = compiled("ct state established,related accept\nct state invalid drop\ntcp dport 22 accept\n"
                        "ip saddr 10.0.0.0/8 tcp dport 80 accept\npolicy drop");
    unsigned examined = 99;
    Decision d = p.verdict_examined(tcp(kEst, "10.0.0.1", 4000, "10.0.0.2", 443), examined);
    CHECK(examined == 0);
    CHECK(d.rule == 0);
    CHECK(d.action == Action::accept);
    d = p.verdict_examined(tcp(State::related, "10.0.0.1", 1, "10.0.0.2", 2), examined);
    CHECK(examined == 0);
    CHECK(d.rule == 0);
    // invalid: decided by its own state-only rule, also without a walk
    d = p.verdict_examined(tcp(State::invalid, "10.0.0.1", 1, "10.0.0.2", 2), examined);
    CHECK(examined == 0);
    CHECK(d.action == Action::drop);
    // new: skips the two state-only rules by their state bit, examines the next two
    d = p.verdict_examined(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 80), examined);
    CHECK(examined == 2);
    CHECK(d.rule == 3);
    d = p.verdict_examined(tcp(kNew, "10.0.0.1", 1, "10.0.0.2", 81), examined);
    CHECK(examined == 2);
    CHECK(d.rule == 4);
    CHECK(d.action == Action::drop);
}

// The shortcut must not skip an earlier rule that could match: only the first rule that can
// match the state, when it has no other match, decides.
TEST_CASE("the per-state shortcut never jumps over a rule that could match", "[policy][verdict][shortcut]")
{
    Policy p = compiled("tcp dport 22 drop\nct state established accept\npolicy drop");
    unsigned examined = 0;
    Decision d = p.verdict_examined(tcp(kEst, "10.0.0.1", 1, "10.0.0.2", 22), examined);
    CHECK(d.rule == 0);
    CHECK(examined == 1);
    d = p.verdict_examined(tcp(kEst, "10.0.0.1", 1, "10.0.0.2", 23), examined);
    CHECK(d.rule == 1);
    CHECK(examined == 2);
    // a family-only rule is not state-only: ip6 traffic must fall through it
    Policy q = compiled("ct state established ip6 saddr ::/0 accept\npolicy drop");
    CHECK(q.verdict(tcp(kEst, "10.0.0.1", 1, "10.0.0.2", 2)).action == Action::drop);
    CHECK(q.verdict(tcp(kEst, "2001:db8::1", 1, "2001:db8::2", 2)).action == Action::accept);
}
