// SPDX-License-Identifier: BSD-3-Clause
// One match of a rule (policy.md's `match`): the selector's keywords, then one value or a set.
#include "parser.h"
#include "values.h"

namespace flowcop::policy::detail {

namespace {

// One bit per selector: a rule names each at most once (nft would AND two, which a policy writer
// almost never means; we refuse it rather than guess).
enum : unsigned {
    kSeenState = 1u << 0,
    kSeenZone = 1u << 1,
    kSeenSaddr = 1u << 2,
    kSeenDaddr = 1u << 3,
    kSeenProto = 1u << 4,
    kSeenSport = 1u << 5,
    kSeenDport = 1u << 6,
    kSeenIif = 1u << 7,
    kSeenVlan = 1u << 8,
};

} // namespace

bool Parser::once(unsigned bit, const Token& first, const std::string& name)
{
    if (_seen & bit)
        return fail_at(first.line, first.column,
                       "expected each match at most once per rule, found '" + name + "' again");
    _seen |= bit;
    return true;
}

bool Parser::require_family(Rule& r, const Token& first, Family f)
{
    if (r.family != Family::any && r.family != f)
        return fail_at(first.line, first.column,
                       std::string("expected matches one packet can satisfy, found '") + std::string(first.text) +
                           "' in a rule that already matches " + (r.family == Family::ipv4 ? "'ip'" : "'ip6'"));
    r.family = f;
    return true;
}

bool Parser::require_proto(Rule& r, const Token& first, uint8_t proto)
{
    if (r.proto >= 0 && r.proto != proto)
        return fail_at(first.line, first.column,
                       "expected matches one packet can satisfy, found '" + std::string(first.text) +
                           "' in a rule that already requires protocol " + std::to_string(r.proto));
    r.proto = proto;
    return true;
}

bool Parser::match(Rule& r, bool& handled)
{
    const Token first = _tok;
    if (is_word("ct"))
        return ct(r, first);
    if (is_word("ip"))
        return address(r, first, Family::ipv4);
    if (is_word("ip6"))
        return address(r, first, Family::ipv6);
    if (is_word("meta"))
        return meta(r, first);
    if (is_word("tcp"))
        return ports(r, first, 6);
    if (is_word("udp"))
        return ports(r, first, 17);
    if (is_word("iif"))
        return iif(r, first);
    if (is_word("vlan"))
        return vlan(r, first);
    handled = false;
    return true;
}

bool Parser::values(const std::string& what, const std::function<bool(const Token&)>& one)
{
    if (_tok.kind != Token::Kind::lbrace) {
        if (_tok.kind != Token::Kind::word)
            return fail_after(what);
        if (!one(_tok))
            return false;
        advance();
        return true;
    }
    advance(); // '{': a set may span lines, as nft writes long ones
    size_t n = 0;
    for (;;) {
        while (_tok.kind == Token::Kind::newline)
            advance();
        if (_tok.kind != Token::Kind::word)
            return fail_after(what);
        if (++n > kMaxSetElements)
            return fail_at(_tok.line, _tok.column,
                           "expected at most " + std::to_string(kMaxSetElements) + " elements in a set, found more");
        if (!one(_tok))
            return false;
        advance();
        while (_tok.kind == Token::Kind::newline)
            advance();
        if (_tok.kind == Token::Kind::rbrace) {
            advance();
            return true;
        }
        if (_tok.kind != Token::Kind::comma)
            return fail("',' or '}' in the set");
        advance();
    }
}

bool Parser::ct(Rule& r, const Token& first)
{
    advance();
    if (is_word("zone")) {
        if (!once(kSeenZone, first, "ct zone"))
            return false;
        advance();
        if (_tok.kind != Token::Kind::word)
            return fail_after("a zone number 0-65535");
        unsigned z = 0;
        if (!parse_number(_tok.text, 0, 65535, z))
            return fail_after("a zone number 0-65535");
        r.zone = static_cast<int>(z);
        advance();
        return true;
    }
    if (!is_word("state"))
        return fail_after("'state' or 'zone'");
    if (!once(kSeenState, first, "ct state"))
        return false;
    advance();
    const char* what = "a state (new, established, related, invalid or untracked)";
    uint8_t states = 0;
    auto one = [&](const Token& t) {
        const auto s = parse_state(t.text);
        if (!s)
            return fail_after(what);
        states = static_cast<uint8_t>(states | state_bit(*s));
        return true;
    };
    if (_tok.kind == Token::Kind::lbrace) {
        if (!values(what, one))
            return false;
    } else {
        // nft's flag list: `ct state established,related` (no braces, commas between).
        for (;;) {
            if (_tok.kind != Token::Kind::word)
                return fail_after(what);
            if (!one(_tok))
                return false;
            advance();
            if (_tok.kind != Token::Kind::comma)
                break;
            advance();
        }
    }
    r.states = states;
    return true;
}

bool Parser::address(Rule& r, const Token& first, Family f)
{
    advance();
    const bool src = is_word("saddr");
    if (!src && !is_word("daddr"))
        return fail_after("'saddr' or 'daddr'");
    if (!require_family(r, first, f))
        return false;
    if (!once(src ? kSeenSaddr : kSeenDaddr, first, std::string(first.text) + (src ? " saddr" : " daddr")))
        return false;
    advance();
    std::vector<Prefix>& out = src ? r.saddr : r.daddr;
    const std::string what = f == Family::ipv4 ? "an IPv4 address or prefix" : "an IPv6 address or prefix";
    return values(what, [&](const Token& t) {
        Prefix p;
        if (!parse_prefix(t.text, f, p))
            return fail_after(what);
        out.push_back(p);
        return true;
    });
}

bool Parser::meta(Rule& r, const Token& first)
{
    advance();
    if (!is_word("l4proto"))
        return fail_after("'l4proto'");
    if (!once(kSeenProto, first, "meta l4proto"))
        return false;
    advance();
    if (_tok.kind != Token::Kind::word)
        return fail_after("a protocol name or a number 0-255");
    const auto proto = parse_l4proto(_tok.text);
    if (!proto)
        return fail_after("a protocol name or a number 0-255");
    if (!require_proto(r, first, *proto))
        return false;
    advance();
    return true;
}

bool Parser::ports(Rule& r, const Token& first, uint8_t proto)
{
    advance();
    const bool src = is_word("sport");
    if (!src && !is_word("dport"))
        return fail_after("'sport' or 'dport'");
    if (!require_proto(r, first, proto))
        return false;
    if (!once(src ? kSeenSport : kSeenDport, first, std::string(first.text) + (src ? " sport" : " dport")))
        return false;
    advance();
    std::vector<PortRange>& out = src ? r.sport : r.dport;
    const std::string what = "a port number or range";
    return values(what, [&](const Token& t) {
        PortRange pr;
        switch (parse_port_range(t.text, pr)) {
        case RangeResult::ok: out.push_back(pr); return true;
        case RangeResult::reversed:
            return fail_at(t.line, t.column,
                           "expected a range whose first port is not above its last, found '" + std::string(t.text) +
                               "'");
        case RangeResult::not_a_range: break;
        }
        return fail_after(what);
    });
}

bool Parser::iif(Rule& r, const Token& first)
{
    if (!once(kSeenIif, first, "iif"))
        return false;
    advance();
    const char* what = "a port id 0-65535 or a port name";
    if (_tok.kind != Token::Kind::word && _tok.kind != Token::Kind::string)
        return fail_after(what);
    // A number is a port id; anything else is a name the service resolves (compile()).
    const std::string_view v = _tok.text;
    unsigned id = 0;
    const bool digits = v.find_first_not_of("0123456789") == std::string_view::npos;
    if (v.empty() || v.size() > 64 || (digits && !parse_number(v, 0, 65535, id)) || !is_port_name(v))
        return fail_after(what);
    r.iif = std::string(v);
    r.iif_line = _tok.line;
    r.iif_column = _tok.column;
    advance();
    return true;
}

bool Parser::vlan(Rule& r, const Token& first)
{
    advance();
    if (!is_word("id"))
        return fail_after("'id'");
    if (!once(kSeenVlan, first, "vlan id"))
        return false;
    advance();
    unsigned id = 0;
    if (_tok.kind != Token::Kind::word || !parse_number(_tok.text, 0, 4095, id))
        return fail_after("a VLAN id 0-4095");
    r.vlan = static_cast<int>(id);
    advance();
    return true;
}

} // namespace flowcop::policy::detail
