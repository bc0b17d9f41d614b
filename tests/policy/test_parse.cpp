// SPDX-License-Identifier: BSD-3-Clause
// parse() reads every match of the subset into the Ruleset (policy.md's grammar).
#include <policy/parse.h>

#include <arpa/inet.h>
#include <catch2/catch.hpp>

using namespace flowcop::policy;

namespace {

Ruleset ok(std::string_view text)
{
    ParseResult r = parse(text, "t.nft");
    INFO(r.error);
    REQUIRE(r.ok);
    return r.ruleset;
}

Rule one(std::string_view text)
{
    Ruleset rs = ok(text);
    REQUIRE(rs.rules.size() == 1);
    return rs.rules[0];
}

Prefix v6(const char* text, uint8_t len)
{
    Prefix p;
    REQUIRE(inet_pton(AF_INET6, text, p.addr.data()) == 1);
    p.length = len;
    return p;
}

bool same(const Prefix& a, const Prefix& b)
{
    return a.addr == b.addr && a.length == b.length;
}

} // namespace

// Without a file (or with an empty one) nothing changes: default accept, no rule.
TEST_CASE("an empty file, blank lines and comments give no rule and the default accept", "[policy][parse]")
{
    for (const char* text : {"", "\n\n", "# only a comment\n   # another\n", " ;; \n"}) {
        Ruleset rs = ok(text);
        CHECK(rs.rules.empty());
        CHECK(rs.default_action == Action::accept);
    }
}

TEST_CASE("the policy line sets the default action, with or without nft's semicolon", "[policy][parse]")
{
    CHECK(ok("policy drop").default_action == Action::drop);
    CHECK(ok("policy drop;\n").default_action == Action::drop);
    CHECK(ok("accept\npolicy accept # end\n").default_action == Action::accept);
}

TEST_CASE("actions: a bare accept or drop is a rule matching everything", "[policy][parse]")
{
    Ruleset rs = ok("accept\ndrop\n");
    REQUIRE(rs.rules.size() == 2);
    CHECK(rs.rules[0].action == Action::accept);
    CHECK(rs.rules[1].action == Action::drop);
    CHECK(rs.rules[1].states == kAllStates);
    CHECK(rs.rules[1].line == 2);
}

// nft writes a flag list with commas and no braces, or an anonymous set in braces.
TEST_CASE("ct state takes nft's comma list and its braced set", "[policy][parse][state]")
{
    CHECK(one("ct state established,related accept").states ==
          (state_bit(State::established) | state_bit(State::related)));
    CHECK(one("ct state established , related accept").states ==
          (state_bit(State::established) | state_bit(State::related)));
    CHECK(one("ct state { new, invalid } drop").states == (state_bit(State::new_) | state_bit(State::invalid)));
    CHECK(one("ct state {\n new,\n untracked\n} drop").states ==
          (state_bit(State::new_) | state_bit(State::untracked)));
    CHECK(one("ct state invalid drop").states == state_bit(State::invalid));
}

TEST_CASE("ip saddr and daddr take IPv4 hosts, prefixes and sets, held IPv4-mapped", "[policy][parse][addr]")
{
    Rule r = one("ip saddr 10.0.0.0/8 ip daddr { 192.168.1.1, 172.16.0.0/12 } accept");
    CHECK(r.family == Family::ipv4);
    REQUIRE(r.saddr.size() == 1);
    CHECK(same(r.saddr[0], v6("::ffff:10.0.0.0", 104)));
    REQUIRE(r.daddr.size() == 2);
    CHECK(same(r.daddr[0], v6("::ffff:192.168.1.1", 128)));
    CHECK(same(r.daddr[1], v6("::ffff:172.16.0.0", 108)));
}

// nft normalises a prefix with host bits set; so do we, so equal rules compare equal.
TEST_CASE("host bits past a prefix length are cleared", "[policy][parse][addr]")
{
    CHECK(same(one("ip saddr 10.1.2.3/8 drop").saddr[0], v6("::ffff:10.0.0.0", 104)));
    CHECK(same(one("ip6 saddr 2001:db8:ffff::1/32 drop").saddr[0], v6("2001:db8::", 32)));
    CHECK(same(one("ip saddr 0.0.0.0/0 drop").saddr[0], v6("::ffff:0.0.0.0", 96)));
}

TEST_CASE("ip6 saddr and daddr take IPv6 hosts, prefixes and sets", "[policy][parse][addr]")
{
    Rule r = one("ip6 daddr { 2001:db8::/32, ::1 } ip6 saddr fe80::/10 drop");
    CHECK(r.family == Family::ipv6);
    REQUIRE(r.daddr.size() == 2);
    CHECK(same(r.daddr[0], v6("2001:db8::", 32)));
    CHECK(same(r.daddr[1], v6("::1", 128)));
    CHECK(same(r.saddr[0], v6("fe80::", 10)));
}

TEST_CASE("meta l4proto takes nft's protocol names and numbers", "[policy][parse][proto]")
{
    CHECK(one("meta l4proto tcp accept").proto == 6);
    CHECK(one("meta l4proto udp accept").proto == 17);
    CHECK(one("meta l4proto icmp accept").proto == 1);
    CHECK(one("meta l4proto icmpv6 accept").proto == 58);
    CHECK(one("meta l4proto sctp accept").proto == 132);
    CHECK(one("meta l4proto 47 accept").proto == 47);
    CHECK(one("meta l4proto 0 accept").proto == 0);
    CHECK(one("meta l4proto 255 accept").proto == 255);
}

TEST_CASE("tcp and udp sport and dport take a port, a range and a set of both", "[policy][parse][ports]")
{
    Rule r = one("tcp dport 22 accept");
    CHECK(r.proto == 6);
    REQUIRE(r.dport.size() == 1);
    CHECK((r.dport[0].lo == 22 && r.dport[0].hi == 22));
    r = one("udp sport 1024-65535 accept");
    CHECK(r.proto == 17);
    CHECK((r.sport[0].lo == 1024 && r.sport[0].hi == 65535));
    r = one("tcp dport { 80, 443, 8000-8080 } tcp sport 0 accept");
    REQUIRE(r.dport.size() == 3);
    CHECK((r.dport[2].lo == 8000 && r.dport[2].hi == 8080));
    CHECK((r.sport[0].lo == 0 && r.sport[0].hi == 0));
    CHECK(one("meta l4proto tcp tcp dport 22 accept").proto == 6); // consistent: allowed
}

TEST_CASE("iif keeps a port id or a name as written, quoted or not", "[policy][parse][iif]")
{
    CHECK(one("iif 1 accept").iif == "1");
    CHECK(one("iif eth0 accept").iif == "eth0");
    CHECK(one("iif \"net_af_packet0\" accept").iif == "net_af_packet0");
    Rule r = one("tcp dport 22 iif 0000:01:00.0 accept");
    CHECK(r.iif == "0000:01:00.0");
    CHECK(r.iif_line == 1);
    CHECK(r.iif_column == 18);
}

TEST_CASE("vlan id and ct zone take their numbers", "[policy][parse]")
{
    CHECK(one("vlan id 42 accept").vlan == 42);
    CHECK(one("vlan id 4095 accept").vlan == 4095);
    CHECK(one("ct zone 7 drop").zone == 7);
    CHECK(one("ct zone 65535 drop").zone == 65535);
    Rule r = one("accept");
    CHECK(r.vlan == -1);
    CHECK(r.zone == -1);
    CHECK(r.proto == -1);
}

TEST_CASE("several matches in one rule all land in it; ';' ends a rule as a newline does", "[policy][parse]")
{
    Ruleset rs = ok("ct state new ip saddr 10.0.0.0/8 tcp dport 22 iif 2 vlan id 5 ct zone 3 accept; drop");
    REQUIRE(rs.rules.size() == 2);
    const Rule& r = rs.rules[0];
    CHECK(r.states == state_bit(State::new_));
    CHECK(r.family == Family::ipv4);
    CHECK(r.proto == 6);
    CHECK(r.iif == "2");
    CHECK(r.vlan == 5);
    CHECK(r.zone == 3);
    CHECK(rs.rules[1].action == Action::drop);
}

// Rule identity (counters carry over a reload by it): the text without comments, one space apart.
TEST_CASE("a rule's identity is its tokens without the comment clause and # comments", "[policy][parse][identity]")
{
    Rule r = one("  tcp   dport {22,80}   accept comment \"ssh and web\"  # why\n");
    CHECK(r.identity == "tcp dport { 22 , 80 } accept");
    CHECK(r.comment == "ssh and web");
    CHECK(one("tcp dport { 22, 80 } accept").identity == r.identity);
    CHECK(one("iif \"eth0\" drop").identity == "iif \"eth0\" drop");
}
