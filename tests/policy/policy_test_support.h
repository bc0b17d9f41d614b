// SPDX-License-Identifier: BSD-3-Clause
// Test support for tests/policy: compile a policy text, build packet views.
#pragma once

#include <policy/parse.h>
#include <policy/policy.h>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <cstring>

namespace flowcop::policy::test {

inline Policy compiled(std::string_view text)
{
    ParseResult r = parse(text, "t.nft");
    INFO(r.error);
    REQUIRE(r.ok);
    Policy p;
    CompileResult c = Policy::compile(
        r.ruleset, "t.nft",
        [](std::string_view name) -> std::optional<uint16_t> {
            if (name == "eth0")
                return 0;
            if (name == "eth1")
                return 1;
            return std::nullopt;
        },
        p);
    INFO(c.error);
    REQUIRE(c.ok);
    return p;
}

// Address text in flowcop's 16-byte form: IPv4 as IPv4-mapped, as lib/packet/flow_key.h holds it.
inline void to16(const char* text, uint8_t out[16])
{
    std::memset(out, 0, 16);
    uint8_t v4[4];
    if (inet_pton(AF_INET, text, v4) == 1) {
        out[10] = out[11] = 0xff;
        std::memcpy(out + 12, v4, 4);
        return;
    }
    REQUIRE(inet_pton(AF_INET6, text, out) == 1);
}

// A TCP packet from src:sport to dst:dport in `state`; family from the address text.
inline PacketView tcp(State state, const char* src, uint16_t sport, const char* dst, uint16_t dport)
{
    PacketView v;
    v.state = state;
    v.family = std::strchr(src, ':') ? Family::ipv6 : Family::ipv4;
    v.proto = 6;
    v.sport = sport;
    v.dport = dport;
    to16(src, v.src);
    to16(dst, v.dst);
    return v;
}

inline PacketView udp(State state, const char* src, uint16_t sport, const char* dst, uint16_t dport)
{
    PacketView v = tcp(state, src, sport, dst, dport);
    v.proto = 17;
    return v;
}

} // namespace flowcop::policy::test
