// SPDX-License-Identifier: BSD-3-Clause
#include "policy_check.h"

#include <policy/parse.h>
#include <policy/policy.h>

#include <cstring>
#include <string>
#include <string_view>

namespace flowcop::fuzz {

namespace {

using namespace flowcop::policy;

std::optional<uint16_t> resolve(std::string_view name)
{
    if (name == "eth0")
        return 0;
    if (name == "eth1")
        return 1;
    return std::nullopt;
}

bool well_formed_error(const std::string& e)
{
    const std::string head = "fuzz.nft:";
    if (e.rfind(head, 0) != 0)
        return false;
    if (e == head + " out of memory while reading the policy")
        return true;
    size_t i = head.size();
    for (int field = 0; field < 2; ++field) {
        const size_t start = i;
        while (i < e.size() && e[i] >= '0' && e[i] <= '9')
            ++i;
        if (i == start || e[start] == '0' || i >= e.size() || e[i] != ':')
            return false;
        ++i;
    }
    return e.compare(i, 10, " expected ") == 0;
}

// The reference: the ruleset read literally, one rule after another.
bool in_prefixes(const std::vector<Prefix>& set, const uint8_t addr[16])
{
    for (const Prefix& p : set) {
        bool ok = true;
        for (unsigned bit = 0; bit < p.length && ok; ++bit) {
            const uint8_t m = static_cast<uint8_t>(0x80u >> (bit % 8));
            ok = (addr[bit / 8] & m) == (p.addr[bit / 8] & m);
        }
        if (ok)
            return true;
    }
    return false;
}

bool in_ranges(const std::vector<PortRange>& set, uint16_t port)
{
    for (const PortRange& r : set)
        if (port >= r.lo && port <= r.hi)
            return true;
    return false;
}

bool reference_match(const Rule& r, const PacketView& v, uint16_t iif)
{
    if (!(r.states & state_bit(v.state)))
        return false;
    if (r.family != Family::any && r.family != v.family)
        return false;
    if (r.proto >= 0 && (v.family == Family::any || v.proto != r.proto))
        return false;
    if (!r.iif.empty() && v.port != iif)
        return false;
    if (r.vlan >= 0 && v.vlan != r.vlan)
        return false;
    if (r.zone >= 0 && v.zone != r.zone)
        return false;
    if (!r.saddr.empty() && !in_prefixes(r.saddr, v.src))
        return false;
    if (!r.daddr.empty() && !in_prefixes(r.daddr, v.dst))
        return false;
    if (!r.sport.empty() && !in_ranges(r.sport, v.sport))
        return false;
    if (!r.dport.empty() && !in_ranges(r.dport, v.dport))
        return false;
    return true;
}

uint16_t iif_of(const Rule& r)
{
    if (r.iif.empty())
        return 0;
    if (r.iif.find_first_not_of("0123456789") == std::string::npos)
        return static_cast<uint16_t>(std::stoul(r.iif));
    return resolve(r.iif).value_or(0);
}

const char* check_view(const Ruleset& rs, const Policy& p, const PacketView& v)
{
    size_t expect = rs.rules.size();
    for (size_t i = 0; i < rs.rules.size(); ++i)
        if (reference_match(rs.rules[i], v, iif_of(rs.rules[i]))) {
            expect = i;
            break;
        }
    const Decision d = p.verdict(v);
    if (d.rule != expect)
        return "verdict() chose another rule than the ruleset read in order";
    const Action want = expect < rs.rules.size() ? rs.rules[expect].action : rs.default_action;
    if (d.action != want)
        return "verdict()'s action is not its rule's";
    unsigned examined = 0;
    const Decision e = p.verdict_examined(v, examined);
    if (e.rule != d.rule || e.action != d.action || examined > rs.rules.size())
        return "verdict_examined() disagrees with verdict()";
    return nullptr;
}

// A packet that satisfies rule r (its first element of each set, its lowest state).
PacketView satisfying(const Rule& r, const uint8_t* data, size_t size)
{
    PacketView v;
    for (unsigned s = 0; s < kStateCount; ++s)
        if (r.states & state_bit(static_cast<State>(s))) {
            v.state = static_cast<State>(s);
            break;
        }
    v.family = r.family == Family::any ? Family::ipv4 : r.family;
    if (size >= 32) { // some input bytes as host bits, so prefixes are tested off their base
        std::memcpy(v.src, data, 16);
        std::memcpy(v.dst, data + 16, 16);
    }
    if (!r.saddr.empty())
        std::memcpy(v.src, r.saddr[0].addr.data(), 16);
    if (!r.daddr.empty())
        std::memcpy(v.dst, r.daddr[0].addr.data(), 16);
    v.proto = r.proto >= 0 ? static_cast<uint8_t>(r.proto) : 6;
    v.sport = r.sport.empty() ? 1 : r.sport[0].hi;
    v.dport = r.dport.empty() ? 2 : r.dport[0].lo;
    v.port = iif_of(r);
    v.vlan = r.vlan >= 0 ? static_cast<uint16_t>(r.vlan) : 0;
    v.zone = r.zone >= 0 ? static_cast<uint16_t>(r.zone) : 0;
    return v;
}

} // namespace

const char* check_policy(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const ParseResult r = parse(text, "fuzz.nft");
    if (!r.ok) {
        if (!well_formed_error(r.error))
            return "a refusal without file:line:column: expected";
        if (!r.ruleset.rules.empty())
            return "a refused file left rules behind";
        return nullptr;
    }
    const Ruleset& rs = r.ruleset;
    if (rs.rules.size() > kMaxRules)
        return "more rules than kMaxRules";
    bool names_unknown_port = false;
    std::string again;
    for (const Rule& rule : rs.rules) {
        if (rule.saddr.size() > kMaxSetElements || rule.daddr.size() > kMaxSetElements ||
            rule.sport.size() > kMaxSetElements || rule.dport.size() > kMaxSetElements)
            return "a set longer than kMaxSetElements";
        if (rule.proto > 255 || rule.vlan > 4095 || rule.zone > 65535 || rule.states == 0 || rule.states > kAllStates ||
            rule.comment.size() > kMaxCommentBytes)
            return "a value out of range";
        if ((!rule.sport.empty() || !rule.dport.empty()) && rule.proto != 6 && rule.proto != 17)
            return "ports without tcp or udp";
        if (!rule.iif.empty() && rule.iif.find_first_not_of("0123456789") != std::string::npos && !resolve(rule.iif))
            names_unknown_port = true;
        again += rule.identity + "\n";
    }
    again += rs.default_action == Action::drop ? "policy drop\n" : "policy accept\n";
    const ParseResult r2 = parse(again, "fuzz.nft");
    if (!r2.ok || r2.ruleset.rules.size() != rs.rules.size() || r2.ruleset.default_action != rs.default_action)
        return "the rules' identities do not parse back to the same rules";
    for (size_t i = 0; i < rs.rules.size(); ++i)
        if (r2.ruleset.rules[i].identity != rs.rules[i].identity)
            return "an identity does not parse back to itself";

    Policy p;
    const CompileResult c = Policy::compile(rs, "fuzz.nft", resolve, p);
    if (c.ok == names_unknown_port)
        return names_unknown_port ? "compile() accepted an iif name no port has" : "compile() refused a valid ruleset";
    if (!c.ok)
        return well_formed_error(c.error) ? nullptr : "a compile error without file:line:column: expected";
    if (p.rule_count() != rs.rules.size())
        return "the policy lost or gained rules";
    for (unsigned s = 0; s < kStateCount; ++s)
        for (const Family f : {Family::any, Family::ipv4, Family::ipv6}) {
            PacketView v;
            v.state = static_cast<State>(s);
            v.family = f;
            v.proto = 6;
            if (const char* broken = check_view(rs, p, v))
                return broken;
        }
    for (size_t i = 0; i < rs.rules.size() && i < 64; ++i)
        if (const char* broken = check_view(rs, p, satisfying(rs.rules[i], data, size)))
            return broken;
    return nullptr;
}

} // namespace flowcop::fuzz
