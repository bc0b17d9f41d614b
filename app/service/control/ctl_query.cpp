// SPDX-License-Identifier: BSD-3-Clause
#include "ctl_query.h"

#include "control_parse.h"
#include <service/options/options.h>

#include <tcpstate/tcp_state.h>
#include <text/decimal.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <tuple>
#include <vector>

namespace flowcop::app {
namespace {

struct VerbName {
    const char* name;
    CtlVerb verb;
};
constexpr VerbName kVerbNames[] = {{"list", CtlVerb::list},     {"count", CtlVerb::count},
                                   {"get", CtlVerb::get},       {"update", CtlVerb::update},
                                   {"delete", CtlVerb::remove}, {"flush", CtlVerb::flush},
                                   {"stats", CtlVerb::stats},   {"events", CtlVerb::events},
                                   {"policy", CtlVerb::policy}, {"policy-reload", CtlVerb::policy_reload}};

std::string verb_list()
{
    std::string list;
    for (const VerbName& v : kVerbNames)
        list += (list.empty() ? "" : ", ") + std::string(v.name);
    return list;
}

// ADDR or ADDR/LEN; `allow_len` false for get's exact tuple.
std::string parse_prefix(const std::string& key, const std::string& v, bool allow_len, AddrPrefix& out)
{
    const size_t slash = v.find('/');
    bool ipv4 = false;
    if (!parse_addr(v.substr(0, slash), out.addr, &ipv4))
        return key + ": " + quoted(v) + " is not an IPv4 or IPv6 address";
    out.ipv4 = ipv4;
    if (!allow_len && !ipv4 && packet::is_ipv4_mapped(out.addr))
        return key + ": " + quoted(v) + " is an IPv4-mapped IPv6 address: no IPv6 flow is keyed by it (write the " +
               "IPv4 address for the IPv4 flow)";
    const unsigned max_len = ipv4 ? 32 : 128;
    uint64_t len = max_len;
    if (slash != std::string::npos) {
        if (!allow_len)
            return key + ": " + quoted(v) + ": get takes an exact address, not a prefix";
        if (!text::parse_decimal_in(v.substr(slash + 1), 0, max_len, len))
            return key + ": " + quoted(v) + " has a prefix length outside 0.." + std::to_string(max_len);
    }
    out.bits = unsigned(len) + (ipv4 ? 96 : 0);
    // Bits past the prefix are ignored when matching; clear them so the form is canonical.
    for (unsigned b = out.bits; b < 128; ++b)
        out.addr[b / 8] &= uint8_t(~(0x80u >> (b % 8)));
    return "";
}

bool prefix_matches(const AddrPrefix& p, const uint8_t a[16])
{
    const unsigned whole = p.bits / 8, rest = p.bits % 8;
    if (std::memcmp(p.addr, a, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    const uint8_t mask = uint8_t(0xff00u >> rest);
    return (a[whole] & mask) == p.addr[whole];
}

// "new,update,destroy" (any case; conntrack's NEW, UPDATE and DESTROY) -> a kind mask.
std::string parse_kinds(const std::string& v, events::KindMask& out)
{
    out = 0;
    size_t at = 0;
    while (at <= v.size()) {
        const size_t comma = std::min(v.find(',', at), v.size());
        std::string k = v.substr(at, comma - at);
        for (char& c : k)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        if (k == "new")
            out |= events::kind_bit(events::Kind::created);
        else if (k == "destroy")
            out |= events::kind_bit(events::Kind::destroyed);
        else if (k == "update")
            out |= events::kind_bit(events::Kind::updated);
        else
            return "kinds: " + quoted(k) + " is not an event kind (new, update, destroy)";
        at = comma + 1;
    }
    return "";
}

std::vector<std::string> split_spaces(const std::string& s)
{
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ')
            ++i;
        const size_t start = i;
        while (i < s.size() && s[i] != ' ')
            ++i;
        if (i > start)
            out.push_back(s.substr(start, i - start));
    }
    return out;
}

std::string upper(std::string s)
{
    for (char& c : s)
        c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

bool known_state(const std::string& name)
{
    if (name == "UNREPLIED" || name == "REPLIED") // every protocol but TCP (protostate::state_name)
        return true;
    for (size_t i = 1; i < tcpstate::kStateCount; ++i)
        if (name == tcpstate::state_name(static_cast<tcpstate::State>(i)))
            return true;
    return false;
}

// One KEY=VALUE into the filter.
std::string apply_key(const std::string& k, const std::string& v, bool exact, CtlFilter& f)
{
    uint64_t n = 0;
    auto twice = [&](bool& has) {
        if (has)
            return "'" + k + "' given twice";
        has = true;
        return std::string();
    };
    std::string e;
    if (k == "proto") {
        if (!(e = twice(f.has_proto)).empty())
            return e;
        if (!parse_proto(v, f.proto))
            return "proto: " + quoted(v) + " is not a protocol name (tcp, udp, icmp, icmpv6, ...) or number (0..255)";
    } else if (k == "src" || k == "dst") {
        if (!(e = twice(k == "src" ? f.has_src : f.has_dst)).empty())
            return e;
        return parse_prefix(k, v, !exact, k == "src" ? f.src : f.dst);
    } else if (k == "sport" || k == "dport") {
        if (!(e = twice(k == "sport" ? f.has_sport : f.has_dport)).empty())
            return e;
        if (!text::parse_decimal_in(v, 0, 65535, n))
            return k + ": " + quoted(v) + " is not a port (0..65535)";
        (k == "sport" ? f.sport : f.dport) = uint16_t(n);
    } else if (k == "state" && !exact) {
        if (!(e = twice(f.has_state)).empty())
            return e;
        f.state = upper(v);
        if (!known_state(f.state))
            return "state: " + quoted(v) + " is not a state (SYN_SENT, SYN_RECV, ESTABLISHED, FIN_WAIT, CLOSE_WAIT, " +
                   "LAST_ACK, TIME_WAIT, CLOSE, SYN_SENT2)";
    } else if (k == "vlan") {
        if (!(e = twice(f.has_vlan)).empty())
            return e;
        const size_t comma = v.find(',');
        uint64_t inner = 0;
        if (!text::parse_decimal_in(v.substr(0, comma), 0, 4095, n) ||
            (comma != std::string::npos && !text::parse_decimal_in(v.substr(comma + 1), 0, 4095, inner)))
            return "vlan: " + quoted(v) + " is not OUTER[,INNER] with VLAN IDs 0..4095";
        f.vlan_outer = uint16_t(n);
        f.vlan_inner = uint16_t(inner);
        f.has_vlan_inner = comma != std::string::npos;
    } else if (k == "zone") {
        if (!(e = twice(f.has_zone)).empty())
            return e;
        if (!text::parse_decimal_in(v, 0, 65535, n))
            return "zone: " + quoted(v) + " is not a zone (0..65535)";
        f.zone = uint16_t(n);
    } else if (k == "family" && !exact) {
        if (!(e = twice(f.has_family)).empty())
            return e;
        if (v != "ipv4" && v != "ipv6")
            return "family: " + quoted(v) + " is not ipv4 or ipv6";
        f.family_ipv4 = v == "ipv4";
    } else if (k == "lcore" && !exact) {
        if (!(e = twice(f.has_lcore)).empty())
            return e;
        if (!text::parse_decimal_in(v, 0, 1023, n))
            return "lcore: " + quoted(v) + " is not an lcore id (0..1023)";
        f.lcore = unsigned(n);
    } else {
        return "unknown key " + quoted(k) +
               (exact ? " for get (keys: proto, src, dst, sport, dport, vlan, zone)"
                      : " (keys: proto, src, dst, sport, dport, state, vlan, zone, lcore, family)");
    }
    return "";
}

// src=, dst= and family= that no flow could pass together: an error, not a filter that silently matches nothing.
std::string check_families(const CtlFilter& f)
{
    auto name = [](bool ipv4) { return ipv4 ? "IPv4" : "IPv6"; };
    if (f.has_src && f.has_dst && f.src.ipv4 != f.dst.ipv4)
        return std::string("src is ") + name(f.src.ipv4) + " and dst " + name(f.dst.ipv4) +
               ": a flow's addresses are of one family";
    for (const auto& [has, p, key] : {std::tuple{f.has_src, f.src, "src"}, std::tuple{f.has_dst, f.dst, "dst"}})
        if (has && f.has_family && p.ipv4 != f.family_ipv4)
            return std::string(key) + " is " + name(p.ipv4) + " but family=" + (f.family_ipv4 ? "ipv4" : "ipv6");
    return "";
}

} // namespace

std::string parse_ctl_request(const std::string& line, CtlRequest& out)
{
    out = CtlRequest{};
    if (line.size() > kMaxRequestBytes)
        return "request longer than " + std::to_string(kMaxRequestBytes) + " bytes";
    const std::vector<std::string> words = split_spaces(line);
    if (words.empty())
        return "empty request (verbs: " + verb_list() + ")";
    const std::string& verb = words[0];
    const VerbName* known =
        std::find_if(std::begin(kVerbNames), std::end(kVerbNames), [&](const VerbName& v) { return verb == v.name; });
    if (known == std::end(kVerbNames))
        return "unknown verb " + quoted(verb) + " (verbs: " + verb_list() + ")";
    out.verb = known->verb;
    if ((out.verb == CtlVerb::flush || out.verb == CtlVerb::stats || out.verb == CtlVerb::policy ||
         out.verb == CtlVerb::policy_reload) &&
        words.size() > 1)
        return verb + " takes no filters, got " + quoted(words[1]);
    // update takes list's filters too (conntrack -U): the whole tuple names one flow, as get's does.
    const bool exact = out.verb == CtlVerb::get;
    CtlFilter& f = out.filter;
    bool has_kinds = false, has_timeout = false, has_buffer = false;
    for (size_t i = 1; i < words.size(); ++i) {
        const size_t eq = words[i].find('=');
        if (eq == std::string::npos || eq == 0)
            return "expected KEY=VALUE, got " + quoted(words[i]);
        const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
        if (out.verb == CtlVerb::events && key == "kinds") {
            if (has_kinds)
                return "'kinds' given twice";
            has_kinds = true;
            if (std::string e = parse_kinds(value, out.kinds); !e.empty())
                return e;
            continue;
        }
        if (out.verb == CtlVerb::events && key == "buffer") {
            if (has_buffer)
                return "'buffer' given twice";
            has_buffer = true;
            uint64_t b = 0;
            if (!text::parse_decimal_in(value, kMinFollowBuffer, kMaxFollowBuffer, b))
                return "buffer: " + quoted(value) + " is not a number of bytes (" + std::to_string(kMinFollowBuffer) +
                       ".." + std::to_string(kMaxFollowBuffer) + ")";
            out.buffer_bytes = size_t(b);
            continue;
        }
        if (out.verb == CtlVerb::update && key == "timeout") {
            if (has_timeout)
                return "'timeout' given twice";
            has_timeout = true;
            uint64_t s = 0;
            if (!text::parse_decimal_in(value, 1, kMaxTimeoutS, s))
                return "timeout: " + quoted(value) + " is not a number of seconds (1.." + std::to_string(kMaxTimeoutS) +
                       ")";
            out.timeout_s = uint32_t(s);
            continue;
        }
        if (out.verb == CtlVerb::events && (key == "zone" || key == "state"))
            return "events cannot be filtered by " + key + " (events do not carry it)";
        if (std::string e = apply_key(key, value, exact, f); !e.empty())
            return e;
    }
    if (std::string e = check_families(f); !e.empty())
        return verb + ": " + e;
    if (out.verb == CtlVerb::update && !has_timeout)
        return "update needs timeout=SECONDS (1.." + std::to_string(kMaxTimeoutS) + ")";
    if (out.verb == CtlVerb::update) {
        const bool whole = f.has_src && f.has_dst && f.has_sport && f.has_dport && f.src.bits == 128 &&
                           f.dst.bits == 128 && !f.has_state && !f.has_lcore && !f.has_family;
        out.walk = !whole;
        if (out.walk)
            return "";
        for (const AddrPrefix* a : {&f.src, &f.dst})
            if (!a->ipv4 && packet::is_ipv4_mapped(a->addr))
                return "update: an IPv4-mapped IPv6 address names no IPv6 flow (write the IPv4 address for the IPv4 "
                       "flow)";
    } else if (!exact) {
        return "";
    } else if (!f.has_src || !f.has_dst || !f.has_sport || !f.has_dport) {
        return verb + " needs the whole tuple: src=, dst=, sport= and dport= (proto=, vlan=, zone= optional)";
    }
    out.key = packet::make_flow_key(f.src.addr, f.sport, f.dst.addr, f.dport, f.has_proto ? f.proto : 6, f.vlan_outer,
                                    f.vlan_inner, f.zone);
    return "";
}

CtlCandidate CtlCandidate::of(unsigned lcore, const conntrack::FlowSnapshot& f) noexcept
{
    CtlCandidate c;
    c.lcore = lcore;
    c.proto = f.key.proto;
    c.zone = f.key.zone;
    c.vlan_outer = packet::key_vlan_outer(f.key);
    c.vlan_inner = packet::key_vlan_inner(f.key);
    c.state = conntrack::state_name(f);
    packet::key_endpoints(f.key, f.orig_is_lo, c.src, c.sport, c.dst, c.dport);
    c.ipv4 = packet::key_is_ipv4(f.key);
    return c;
}

CtlCandidate CtlCandidate::of(const events::Event& e) noexcept
{
    CtlCandidate c;
    c.lcore = e.lcore;
    c.proto = e.proto;
    c.vlan_outer = e.vlan_outer;
    c.vlan_inner = e.vlan_inner;
    std::memcpy(c.src, e.src, sizeof c.src);
    std::memcpy(c.dst, e.dst, sizeof c.dst);
    c.sport = e.sport;
    c.dport = e.dport;
    c.ipv4 = packet::is_ipv4_mapped(c.src) && packet::is_ipv4_mapped(c.dst);
    return c;
}

bool ctl_matches(const CtlFilter& f, const CtlCandidate& c) noexcept
{
    if (f.has_lcore && c.lcore != f.lcore)
        return false;
    if (f.has_proto && c.proto != f.proto)
        return false;
    if (f.has_zone && c.zone != f.zone)
        return false;
    if (f.has_vlan) {
        if (c.vlan_outer != f.vlan_outer)
            return false;
        if ((f.has_vlan_inner || f.vlan_outer == 0) && c.vlan_inner != f.vlan_inner)
            return false;
    }
    if (f.has_state && (c.state == nullptr || f.state != c.state))
        return false;
    if ((f.has_sport && c.sport != f.sport) || (f.has_dport && c.dport != f.dport))
        return false;
    if (f.has_family && c.ipv4 != f.family_ipv4)
        return false;
    // The family first: IPv4 is held IPv4-mapped, so an IPv6 prefix such as ::/0 covers its bytes too.
    if ((f.has_src && (f.src.ipv4 != c.ipv4 || !prefix_matches(f.src, c.src))) ||
        (f.has_dst && (f.dst.ipv4 != c.ipv4 || !prefix_matches(f.dst, c.dst))))
        return false;
    return true;
}

} // namespace flowcop::app
