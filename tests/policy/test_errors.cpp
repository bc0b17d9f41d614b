// SPDX-License-Identifier: BSD-3-Clause
// Every error message parse() and compile() can give, one row each, with its exact
// file:line:column text: an operator reads these, so a changed word or column is a regression.
#include <policy/parse.h>
#include <policy/policy.h>

#include <catch2/catch.hpp>
#include <string>

using namespace flowcop::policy;

namespace {

struct Case {
    const char* name;
    std::string text;
    const char* error;
};

std::string too_many_rules()
{
    std::string s;
    for (size_t i = 0; i <= kMaxRules; ++i)
        s += "accept\n";
    return s;
}

std::string big_set()
{
    std::string s = "tcp dport {";
    for (size_t i = 0; i <= kMaxSetElements; ++i)
        s += " 1,";
    return s + " 2 } accept";
}

} // namespace

TEST_CASE("each parse error names file, line, column, what was expected and what was found", "[policy][errors]")
{
    const Case cases[] = {
        {"a byte that starts no rule", "!accept",
         "policy.nft:1:1: expected a match, 'accept', 'drop' or 'policy', found '!'"},
        {"a rule without an action", "tcp dport 22\naccept",
         "policy.nft:1:13: expected another match, 'accept' or 'drop', found end of line"},
        {"a word longer than the limit", "iif " + std::string(300, 'a') + " accept",
         "policy.nft:1:5: expected a word of at most 256 bytes, found one of 300 bytes"},
        {"an unterminated string", "accept comment \"open\n",
         "policy.nft:1:16: expected a closing '\"' before the end of the line"},
        {"ct without state or zone", "ct mark 1 accept",
         "policy.nft:1:4: expected 'state' or 'zone' after 'ct', found 'mark'"},
        {"an unknown state", "ct state established,reply accept",
         "policy.nft:1:22: expected a state (new, established, related, invalid or untracked) after ',', found "
         "'reply'"},
        {"a zone out of range", "ct zone 65536 drop",
         "policy.nft:1:9: expected a zone number 0-65535 after 'zone', found '65536'"},
        {"ip without saddr or daddr", "ip protocol tcp accept",
         "policy.nft:1:4: expected 'saddr' or 'daddr' after 'ip', found 'protocol'"},
        {"a bad IPv4 prefix", "ip saddr 10.0.0.0/33 drop",
         "policy.nft:1:10: expected an IPv4 address or prefix after 'saddr', found '10.0.0.0/33'"},
        {"an IPv6 address after ip", "ip daddr ::1 drop",
         "policy.nft:1:10: expected an IPv4 address or prefix after 'daddr', found '::1'"},
        {"a bad IPv6 prefix", "ip6 saddr { ::1, 2001:db8::g } drop",
         "policy.nft:1:18: expected an IPv6 address or prefix after ',', found '2001:db8::g'"},
        {"meta without l4proto", "meta mark 1 accept", "policy.nft:1:6: expected 'l4proto' after 'meta', found 'mark'"},
        {"an unknown protocol", "meta l4proto 256 accept",
         "policy.nft:1:14: expected a protocol name or a number 0-255 after 'l4proto', found '256'"},
        {"tcp without sport or dport", "tcp flags syn drop",
         "policy.nft:1:5: expected 'sport' or 'dport' after 'tcp', found 'flags'"},
        {"a service name for a port", "\n\n   tcp dport ssh accept",
         "policy.nft:3:14: expected a port number or range after 'dport', found 'ssh'"},
        {"a reversed range", "udp sport 90-80 accept",
         "policy.nft:1:11: expected a range whose first port is not above its last, found '90-80'"},
        {"a set without its separator", "tcp dport { 22 80 } accept",
         "policy.nft:1:16: expected ',' or '}' in the set, found '80'"},
        {"an empty set", "tcp dport { } accept",
         "policy.nft:1:13: expected a port number or range after '{', found '}'"},
        {"a nested set", "tcp dport { { 22 } } accept",
         "policy.nft:1:13: expected a port number or range after '{', found '{'"},
        {"a set over the limit", big_set(), "policy.nft:1:3085: expected at most 1024 elements in a set, found more"},
        {"an iif that is no id or name", "iif 70000 accept",
         "policy.nft:1:5: expected a port id 0-65535 or a port name after 'iif', found '70000'"},
        {"vlan without id", "vlan pcp 3 accept", "policy.nft:1:6: expected 'id' after 'vlan', found 'pcp'"},
        {"a VLAN id out of range", "vlan id 4096 accept",
         "policy.nft:1:9: expected a VLAN id 0-4095 after 'id', found '4096'"},
        {"a match named twice", "tcp dport 22 tcp dport 80 accept",
         "policy.nft:1:14: expected each match at most once per rule, found 'tcp dport' again"},
        {"ip and ip6 in one rule", "ip saddr 10.0.0.1 ip6 daddr ::1 accept",
         "policy.nft:1:19: expected matches one packet can satisfy, found 'ip6' in a rule that already matches 'ip'"},
        {"two protocols in one rule", "meta l4proto tcp udp dport 53 accept",
         "policy.nft:1:18: expected matches one packet can satisfy, found 'udp' in a rule that already requires "
         "protocol 6"},
        {"something after the action", "accept tcp dport 22",
         "policy.nft:1:8: expected 'comment' or the end of the rule after 'accept', found 'tcp'"},
        {"a comment that is not a string", "drop comment spam",
         "policy.nft:1:14: expected a quoted string after 'comment', found 'spam'"},
        {"a comment over the limit", "drop comment \"" + std::string(129, 'c') + "\"",
         "policy.nft:1:14: expected a comment of at most 128 bytes, found 129 bytes"},
        {"something after the comment", "drop comment \"x\" accept",
         "policy.nft:1:18: expected the end of the rule after the comment, found 'accept'"},
        {"a policy that is neither accept nor drop", "policy reject",
         "policy.nft:1:8: expected 'accept' or 'drop' after 'policy', found 'reject'"},
        {"a rule after the policy line", "policy drop\naccept",
         "policy.nft:2:1: expected nothing after the policy line, found 'accept'"},
        {"a negation, which the subset refuses", "tcp dport != 22 drop",
         "policy.nft:1:11: expected a port number or range after 'dport', found '!'"},
        {"a control byte", "ct state new\x01 drop",
         "policy.nft:1:13: expected another match, 'accept' or 'drop', found '\\x01'"},
        {"more rules than the limit", too_many_rules(),
         "policy.nft:4097:1: expected at most 4096 rules, found another"},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.name)
        {
            ParseResult r = parse(c.text, "policy.nft");
            CHECK_FALSE(r.ok);
            CHECK(r.error == c.error);
            CHECK(r.ruleset.rules.empty()); // a refused file yields nothing half-read
        }
    }
}

TEST_CASE("a file over the size limit is refused before it is read", "[policy][errors]")
{
    const std::string text(kMaxFileBytes + 1, '#');
    ParseResult r = parse(text, "big.nft");
    CHECK_FALSE(r.ok);
    CHECK(r.error == "big.nft:1:1: expected a file of at most 1048576 bytes, found 1048577 bytes");
}

// The service resolves names; one that names no port is refused at its own line and column.
TEST_CASE("compile refuses an iif name no port has, at the name's position", "[policy][errors]")
{
    ParseResult r = parse("accept\n  iif eth9 drop\n", "p.nft");
    REQUIRE(r.ok);
    Policy p;
    CompileResult c = Policy::compile(
        r.ruleset, "p.nft", [](std::string_view) { return std::nullopt; }, p);
    CHECK_FALSE(c.ok);
    CHECK(c.error == "p.nft:2:7: expected the id or name of a port after 'iif', found 'eth9', which names no port");
    CHECK(p.rule_count() == 0); // unchanged on error
    c = Policy::compile(r.ruleset, "p.nft", nullptr, p);
    CHECK_FALSE(c.ok);
}
