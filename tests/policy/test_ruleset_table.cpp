// SPDX-License-Identifier: BSD-3-Clause
// A realistic ruleset, as an operator would put flowcop in front of a server farm, parsed and
// compiled once, then a table of packets with the rule and action each must get.
#include "policy_test_support.h"

using namespace flowcop::policy;
using namespace flowcop::policy::test;

namespace {

constexpr const char* kRuleset = R"(# flowcop inline policy for the web tier
ct state established,related accept comment "return traffic"
ct state invalid drop comment "out of window, bad RST, untracked ICMP errors"
ct state untracked accept   # ARP and excluded protocols

# management only from the admin networks, on the management port
ct state new iif eth1 ip saddr { 10.10.0.0/16, 192.168.100.0/24 } tcp dport 22 accept comment "ssh"
ct state new iif eth1 ip6 saddr fd00:10::/32 tcp dport 22 accept comment "ssh v6"

ct state new tcp dport { 80, 443 } accept comment "web"
ct state new udp dport 53 ip daddr 10.0.0.53 accept
ct state new meta l4proto icmp accept
ct state new meta l4proto icmpv6 accept
ct state new vlan id 300 ct zone 3 udp dport 5000-5100 accept comment "rtp in the voice vlan"
tcp dport 0-1023 drop comment "low ports"
policy drop;
)";

struct Row {
    const char* what;
    PacketView v;
    uint16_t rule;
    Action action;
};

PacketView on(PacketView v, uint16_t port)
{
    v.port = port;
    return v;
}

PacketView proto(PacketView v, uint8_t p)
{
    v.proto = p;
    v.sport = v.dport = 0;
    return v;
}

PacketView voice(PacketView v, uint16_t vlan, uint16_t zone)
{
    v.vlan = vlan;
    v.zone = zone;
    return v;
}

} // namespace

TEST_CASE("a realistic ruleset parses, compiles and gives each packet its rule", "[policy][table]")
{
    ParseResult r = parse(kRuleset, "web.nft");
    INFO(r.error);
    REQUIRE(r.ok);
    REQUIRE(r.ruleset.rules.size() == 11);
    CHECK(r.ruleset.default_action == Action::drop);
    CHECK(r.ruleset.rules[3].line == 7);
    CHECK(r.ruleset.rules[3].comment == "ssh");
    Policy p = compiled(kRuleset);
    const State n = State::new_;
    const Row rows[] = {
        {"established", tcp(State::established, "203.0.113.9", 443, "10.0.0.80", 50000), 0, Action::accept},
        {"related ICMP error", proto(tcp(State::related, "198.51.100.1", 0, "10.0.0.80", 0), 1), 0, Action::accept},
        {"invalid", tcp(State::invalid, "203.0.113.9", 1, "10.0.0.80", 80), 1, Action::drop},
        {"untracked ARP", PacketView{}, 2, Action::accept},
        {"ssh from admin net on eth1", on(tcp(n, "10.10.3.4", 40000, "10.0.0.1", 22), 1), 3, Action::accept},
        {"ssh from admin net on eth0", on(tcp(n, "10.10.3.4", 40000, "10.0.0.1", 22), 0), 10, Action::drop},
        {"ssh from elsewhere on eth1", on(tcp(n, "10.11.3.4", 40000, "10.0.0.1", 22), 1), 10, Action::drop},
        {"ssh v6 on eth1", on(tcp(n, "fd00:10::7", 40000, "fd00:1::1", 22), 1), 4, Action::accept},
        {"ssh from IPv4-mapped v6", on(tcp(n, "::ffff:10.10.3.4", 40000, "::ffff:10.0.0.1", 22), 1), 10, Action::drop},
        {"web", tcp(n, "203.0.113.9", 50000, "10.0.0.80", 443), 5, Action::accept},
        {"web over udp (QUIC) is not tcp dport 443", udp(n, "203.0.113.9", 50000, "10.0.0.80", 443), 11, Action::drop},
        {"dns to the resolver", udp(n, "10.0.5.5", 5353, "10.0.0.53", 53), 6, Action::accept},
        {"dns elsewhere", udp(n, "10.0.5.5", 5353, "10.0.0.54", 53), 11, Action::drop},
        {"ping", proto(tcp(n, "203.0.113.9", 0, "10.0.0.80", 0), 1), 7, Action::accept},
        {"ping6", proto(tcp(n, "2001:db8::9", 0, "2001:db8::80", 0), 58), 8, Action::accept},
        {"rtp in vlan 300 zone 3", voice(udp(n, "10.3.0.1", 5004, "10.3.0.2", 5050), 300, 3), 9, Action::accept},
        {"rtp in vlan 301", voice(udp(n, "10.3.0.1", 5004, "10.3.0.2", 5050), 301, 3), 11, Action::drop},
        {"telnet", tcp(n, "203.0.113.9", 50000, "10.0.0.80", 23), 10, Action::drop},
        {"high tcp port", tcp(n, "203.0.113.9", 50000, "10.0.0.80", 8443), 11, Action::drop},
    };
    for (const Row& row : rows) {
        INFO(row.what);
        const Decision d = p.verdict(row.v);
        CHECK(d.rule == row.rule);
        CHECK(d.action == row.action);
    }
    CHECK(p.comment(8).empty());
    CHECK(p.comment(9) == "rtp in the voice vlan");
    CHECK(p.identity(0) == "ct state established , related accept");
}
