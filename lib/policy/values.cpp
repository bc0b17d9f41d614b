// SPDX-License-Identifier: BSD-3-Clause
#include "values.h"

#include <text/decimal.h>

#include <arpa/inet.h>
#include <array>
#include <cstring>

namespace flowcop::policy::detail {

std::optional<State> parse_state(std::string_view w) noexcept
{
    static constexpr std::array<std::string_view, kStateCount> kNames{"new", "established", "related", "invalid",
                                                                      "untracked"};
    for (unsigned i = 0; i < kStateCount; ++i)
        if (w == kNames[i])
            return static_cast<State>(i);
    return std::nullopt;
}

std::optional<uint8_t> parse_l4proto(std::string_view w) noexcept
{
    // The names nft resolves through /etc/protocols for the protocols flowcop meets; a number
    // covers the rest. Fixed here so a policy means the same on every host.
    struct Name {
        std::string_view name;
        uint8_t number;
    };
    static constexpr std::array<Name, 11> kNames{{{"icmp", 1},
                                                  {"igmp", 2},
                                                  {"tcp", 6},
                                                  {"udp", 17},
                                                  {"dccp", 33},
                                                  {"gre", 47},
                                                  {"esp", 50},
                                                  {"ah", 51},
                                                  {"icmpv6", 58},
                                                  {"sctp", 132},
                                                  {"udplite", 136}}};
    for (const Name& n : kNames)
        if (w == n.name)
            return n.number;
    unsigned v = 0;
    if (parse_number(w, 0, 255, v))
        return static_cast<uint8_t>(v);
    return std::nullopt;
}

RangeResult parse_port_range(std::string_view w, PortRange& out) noexcept
{
    const size_t dash = w.find('-');
    unsigned lo = 0;
    unsigned hi = 0;
    if (dash == std::string_view::npos) {
        if (!parse_number(w, 0, 65535, lo))
            return RangeResult::not_a_range;
        hi = lo;
    } else if (!parse_number(w.substr(0, dash), 0, 65535, lo) || !parse_number(w.substr(dash + 1), 0, 65535, hi)) {
        return RangeResult::not_a_range;
    }
    if (lo > hi)
        return RangeResult::reversed;
    out.lo = static_cast<uint16_t>(lo);
    out.hi = static_cast<uint16_t>(hi);
    return RangeResult::ok;
}

bool parse_prefix(std::string_view w, Family family, Prefix& out) noexcept
{
    const size_t slash = w.find('/');
    const std::string_view addr = w.substr(0, slash);
    const unsigned max_len = family == Family::ipv4 ? 32 : 128;
    unsigned len = max_len;
    if (slash != std::string_view::npos && !parse_number(w.substr(slash + 1), 0, max_len, len))
        return false;
    char buf[64];
    if (addr.empty() || addr.size() >= sizeof buf)
        return false;
    std::memcpy(buf, addr.data(), addr.size());
    buf[addr.size()] = '\0';
    Prefix p;
    if (family == Family::ipv4) {
        // inet_pton(AF_INET) takes only the dotted quad, as nft does (no "10.1", no octal).
        uint8_t v4[4];
        if (inet_pton(AF_INET, buf, v4) != 1)
            return false;
        p.addr[10] = 0xff;
        p.addr[11] = 0xff;
        std::memcpy(&p.addr[12], v4, 4);
        len += 96;
    } else {
        if (inet_pton(AF_INET6, buf, p.addr.data()) != 1)
            return false;
    }
    p.length = static_cast<uint8_t>(len);
    for (unsigned bit = len; bit < 128; ++bit)
        p.addr[bit / 8] = static_cast<uint8_t>(p.addr[bit / 8] & ~(0x80u >> (bit % 8)));
    out = p;
    return true;
}

bool parse_number(std::string_view w, unsigned lo, unsigned hi, unsigned& out) noexcept
{
    uint64_t v = 0;
    if (!text::parse_decimal_in(w, lo, hi, v))
        return false;
    out = static_cast<unsigned>(v);
    return true;
}

bool is_port_name(std::string_view w) noexcept
{
    if (w.empty())
        return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (!alnum(w.front()))
        return false;
    for (const char c : w)
        if (!alnum(c) && c != '_' && c != '.' && c != ':' && c != '-')
            return false;
    return true;
}

} // namespace flowcop::policy::detail
