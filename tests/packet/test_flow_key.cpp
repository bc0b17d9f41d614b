// SPDX-License-Identifier: BSD-3-Clause
// FlowKey canonicalisation and the helpers for events and listings.
#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <cstring>
#include <random>
#include <set>
#include <string>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;
using test::ip4;
using test::ip6;

namespace {

std::string fmt(const uint8_t a[16])
{
    char buf[packet::kAddrStrLen];
    const size_t n = packet::format_addr(a, buf, sizeof buf);
    if (n != std::strlen(buf) || n == 0)
        FAIL("format_addr returned " << n << " for \"" << buf << "\"");
    return buf;
}

std::string fmt6(const char* text)
{
    return fmt(ip6(text).data());
}

} // namespace

// The flow table finds a flow from either direction; src_is_lo tells the direction.
TEST_CASE("both directions of a flow give the same key and opposite src_is_lo", "[packet][key]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        auto frame = [&](bool reverse) {
            FrameBuilder b;
            b.vlan(9);
            if (v6)
                b.ipv6({.src = ip6(reverse ? "2001:db8::20" : "2001:db8::10"),
                        .dst = ip6(reverse ? "2001:db8::10" : "2001:db8::20")});
            else
                b.ipv4({.src = ip4(reverse ? "192.0.2.20" : "192.0.2.10"),
                        .dst = ip4(reverse ? "192.0.2.10" : "192.0.2.20")});
            return b.tcp({.sport = uint16_t(reverse ? 80 : 51000), .dport = uint16_t(reverse ? 51000 : 80)}).build();
        };
        const auto fwd = test::parse_bytes(frame(false));
        const auto rev = test::parse_bytes(frame(true));
        REQUIRE(fwd.verdict == Verdict::tcp);
        REQUIRE(rev.verdict == Verdict::tcp);
        CHECK(fwd.key == rev.key);
        CHECK(fwd.src_is_lo != rev.src_is_lo);
        CHECK(fwd.src_is_lo); // .10 < .20
        CHECK(fwd.key.port_lo == 51000);
        CHECK(fwd.key.port_hi == 80);
        CHECK(fwd.sport == 51000); // not canonicalised
        CHECK(rev.sport == 80);
    }
}

// Equal addresses: the port decides; equal endpoints: sender is lo both ways.
TEST_CASE("the port orders endpoints with equal addresses, a self-flow is lo both ways", "[packet][key]")
{
    const auto a = test::parse_bytes(
        FrameBuilder().ipv6({.src = ip6("::1"), .dst = ip6("::1")}).tcp({.sport = 9000, .dport = 80}).build());
    const auto b = test::parse_bytes(
        FrameBuilder().ipv6({.src = ip6("::1"), .dst = ip6("::1")}).tcp({.sport = 80, .dport = 9000}).build());
    CHECK(a.key == b.key);
    CHECK_FALSE(a.src_is_lo);
    CHECK(b.src_is_lo);
    CHECK(a.key.port_lo == 80);

    const auto self = test::parse_bytes(
        FrameBuilder().ipv4({.src = ip4("10.1.1.1"), .dst = ip4("10.1.1.1")}).tcp({.sport = 5, .dport = 5}).build());
    CHECK(self.src_is_lo);
}

// Address comparison is numeric (network byte order), not host-order integer compare.
TEST_CASE("IPv4 endpoints compare numerically in network order", "[packet][key]")
{
    const auto p = test::parse_bytes(
        FrameBuilder().ipv4({.src = ip4("1.0.0.255"), .dst = ip4("0.255.0.0")}).tcp({.sport = 1, .dport = 1}).build());
    CHECK_FALSE(p.src_is_lo);
    const uint8_t mapped_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 255, 0, 0};
    CHECK(std::memcmp(p.key.addr_lo, mapped_lo, 16) == 0);
}

// The smaller address is lo whichever byte decides it, and whatever the ports say (they only break
// ties): one pair of addresses per byte position, each sent both ways, with the ports against it.
TEST_CASE("IPv4 endpoints order on every byte of the address before the ports", "[packet][key]")
{
    for (int byte = 0; byte < 4; ++byte) {
        CAPTURE(byte);
        test::Ipv4Addr lo{10, 20, 30, 40}, hi = lo;
        hi[byte] = uint8_t(hi[byte] + 1);
        for (const bool lo_sends : {true, false}) {
            CAPTURE(lo_sends);
            // The lower address gets the higher port, so a port-first order would flip the key.
            const auto f = lo_sends ? FrameBuilder().ipv4({.src = lo, .dst = hi}).tcp({.sport = 9, .dport = 1}).build()
                                    : FrameBuilder().ipv4({.src = hi, .dst = lo}).tcp({.sport = 1, .dport = 9}).build();
            const auto p = test::parse_bytes(f);
            CHECK(p.src_is_lo == lo_sends);
            CHECK(std::memcmp(p.key.addr_lo + 12, lo.data(), 4) == 0);
            CHECK(std::memcmp(p.key.addr_hi + 12, hi.data(), 4) == 0);
            CHECK(p.key.port_lo == 9);
        }
    }
}

// 10.0.0.1 and ::a00:1 share low bytes; the mapped prefix keeps the keys apart.
TEST_CASE("IPv4 and IPv6 keys differ and key_is_ipv4 tells them apart", "[packet][key]")
{
    const auto v4 =
        test::parse_bytes(FrameBuilder().ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2")}).tcp().build());
    const auto v6 =
        test::parse_bytes(FrameBuilder().ipv6({.src = ip6("::a00:1"), .dst = ip6("::a00:2")}).tcp().build());
    CHECK_FALSE(v4.key == v6.key);
    CHECK(packet::key_is_ipv4(v4.key));
    CHECK_FALSE(packet::key_is_ipv4(v6.key));
    // Only one mapped address: an IPv6 key.
    const auto half = test::parse_bytes(
        FrameBuilder().ipv6({.src = ip6("::ffff:10.0.0.1"), .dst = ip6("2001:db8::1")}).tcp().build());
    CHECK_FALSE(packet::key_is_ipv4(half.key));
    // The documented collision: mapped addresses on the wire in IPv6 look like IPv4.
    const auto both = test::parse_bytes(
        FrameBuilder().ipv6({.src = ip6("::ffff:10.0.0.1"), .dst = ip6("::ffff:10.0.0.2")}).tcp().build());
    CHECK(packet::key_is_ipv4(both.key));
    CHECK(both.key == v4.key);
}

// Events and listings show the originator's view of a key.
TEST_CASE("key_endpoints recovers the packet's source and destination", "[packet][key]")
{
    for (bool reverse : {false, true}) {
        CAPTURE(reverse);
        const auto src = ip6(reverse ? "2001:db8::ff" : "2001:db8::1");
        const auto dst = ip6(reverse ? "2001:db8::1" : "2001:db8::ff");
        const auto p = test::parse_bytes(
            FrameBuilder().ipv6({.src = src, .dst = dst}).tcp({.sport = 1234, .dport = 4321}).build());
        uint8_t s[16], d[16];
        uint16_t sp = 0, dp = 0;
        packet::key_endpoints(p.key, p.src_is_lo, s, sp, d, dp);
        CHECK(std::memcmp(s, src.data(), 16) == 0);
        CHECK(std::memcmp(d, dst.data(), 16) == 0);
        CHECK(sp == 1234);
        CHECK(dp == 4321);
        // The other direction's view is the mirror.
        packet::key_endpoints(p.key, !p.src_is_lo, s, sp, d, dp);
        CHECK(std::memcmp(s, dst.data(), 16) == 0);
        CHECK(sp == 4321);
    }
    const auto p = test::parse_bytes(FrameBuilder()
                                         .ipv4({.src = ip4("203.0.113.9"), .dst = ip4("198.51.100.7")})
                                         .tcp({.sport = 1, .dport = 2})
                                         .build());
    uint8_t s[16], d[16];
    uint16_t sp, dp;
    packet::key_endpoints(p.key, p.src_is_lo, s, sp, d, dp);
    CHECK(fmt(s) == "203.0.113.9");
    CHECK(fmt(d) == "198.51.100.7");
}

// Operators type tuples (flowcopctl -G, /flowcop/kill): the key built from them must be the parser's.
TEST_CASE("make_flow_key builds the key the parser builds, from either direction", "[packet][key]")
{
    std::mt19937 rng(7);
    for (int i = 0; i < 400; ++i) {
        const bool v6 = i % 2 == 1, same_addr = i % 7 == 0;
        const uint16_t sport = uint16_t(rng()), dport = i % 5 == 0 ? sport : uint16_t(rng());
        const uint16_t vlan = uint16_t(rng() % 4096);
        FrameBuilder b;
        if (vlan != 0)
            b.vlan(vlan);
        if (v6) {
            auto src = ip6("2001:db8::1"), dst = ip6("2001:db8::2");
            src[15] = uint8_t(rng()), dst[15] = same_addr ? src[15] : uint8_t(rng());
            b.ipv6({.src = src, .dst = dst});
        } else {
            auto src = ip4("192.0.2.1"), dst = ip4("192.0.2.2");
            src[3] = uint8_t(rng()), dst[3] = same_addr ? src[3] : uint8_t(rng());
            b.ipv4({.src = src, .dst = dst});
        }
        const auto p = test::parse_bytes(b.udp({.sport = sport, .dport = dport}).build());
        REQUIRE(p.verdict == Verdict::udp);
        uint8_t s[16], d[16];
        uint16_t sp = 0, dp = 0;
        packet::key_endpoints(p.key, p.src_is_lo, s, sp, d, dp);
        CAPTURE(i, fmt(s), sp, fmt(d), dp, vlan);
        CHECK(packet::make_flow_key(s, sp, d, dp, 17, vlan, 0, 0) == p.key);
        CHECK(packet::make_flow_key(d, dp, s, sp, 17, vlan, 0, 0) == p.key);
        CHECK(packet::is_ipv4_mapped(s) == !v6);
    }
    const auto a = ip6("::ffff:192.0.2.1"), z = ip6("2001:db8::1");
    packet::FlowKey k = packet::make_flow_key(z.data(), 1, a.data(), 2, 47, 10, 20, 3);
    CHECK(std::memcmp(k.addr_lo, a.data(), 16) == 0); // ::ffff:... sorts before 2001:...
    CHECK((k.port_lo == 2 && k.port_hi == 1 && k.proto == 47 && k.zone == 3));
    CHECK((packet::key_vlan_outer(k) == 10 && packet::key_vlan_inner(k) == 20));
}

TEST_CASE("format_addr prints IPv4-mapped as dotted quad and IPv6 in RFC 5952 form", "[packet][key]")
{
    CHECK(fmt6("::ffff:192.0.2.1") == "192.0.2.1");
    CHECK(fmt6("::ffff:0.0.0.0") == "0.0.0.0");
    CHECK(fmt6("::ffff:255.255.255.255") == "255.255.255.255");
    CHECK(fmt6("::") == "::");
    CHECK(fmt6("::1") == "::1");
    CHECK(fmt6("2001:DB8:0:0:0:0:0:1") == "2001:db8::1");
    CHECK(fmt6("fe80::") == "fe80::");
    CHECK(fmt6("2001:db8:0:1:1:1:1:1") == "2001:db8:0:1:1:1:1:1");                   // a single 0 is not compressed
    CHECK(fmt6("2001:0:0:1:0:0:0:1") == "2001:0:0:1::1");                            // longest run wins
    CHECK(fmt6("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1");                      // first of equal runs
    CHECK(fmt6("2001:0db8:00aa:0000:0000:0000:000b:cdef") == "2001:db8:aa::b:cdef"); // no leading zeros
    CHECK(fmt6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff") == "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    CHECK(fmt6("::ffff:0:1") == "0.0.0.1");            // that is ::ffff:0.0.0.1, mapped
    CHECK(fmt6("::fffe:102:304") == "::fffe:102:304"); // not the mapped prefix
    CHECK(fmt6("0:0:0:0:ffff::") == "::ffff:0:0:0");
}

// Cross-check against glibc's inet_ntop, which follows RFC 5952 except for the
// deprecated IPv4-compatible ::/96 and the mapped ::ffff:0:0/96 (which we print dotted).
TEST_CASE("format_addr agrees with inet_ntop on random IPv6 addresses", "[packet][key]")
{
    std::mt19937 rng(5952);
    int compared = 0;
    for (int i = 0; i < 20000; ++i) {
        uint8_t a[16];
        for (int g = 0; g < 8; ++g) {
            // Mostly zero groups so that runs and ties are common.
            const uint16_t v = (rng() % 3 == 0) ? static_cast<uint16_t>(rng()) : 0;
            a[2 * g] = static_cast<uint8_t>(v >> 8);
            a[2 * g + 1] = static_cast<uint8_t>(v);
        }
        static const uint8_t zero12[12] = {};
        static const uint8_t mapped12[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(a, zero12, 12) == 0 || std::memcmp(a, mapped12, 12) == 0)
            continue;
        char want[INET6_ADDRSTRLEN];
        if (inet_ntop(AF_INET6, a, want, sizeof want) == nullptr)
            FAIL("inet_ntop failed");
        // One assertion per mismatch, not per address: TAP reports every assertion.
        if (fmt(a) != want)
            FAIL_CHECK("format_addr " << fmt(a) << " != inet_ntop " << want);
        ++compared;
    }
    CHECK(compared > 10000);
}

TEST_CASE("format_addr writes nothing but an empty string into a buffer too small", "[packet][key]")
{
    const auto a = ip6("2001:db8::1"); // 11 characters
    char buf[12];
    std::memset(buf, 'x', sizeof buf);
    CHECK(packet::format_addr(a.data(), buf, 12) == 11);
    CHECK(std::string(buf) == "2001:db8::1");
    std::memset(buf, 'x', sizeof buf);
    CHECK(packet::format_addr(a.data(), buf, 11) == 0);
    CHECK(buf[0] == '\0');
    CHECK(buf[1] == 'x');
    CHECK(packet::format_addr(a.data(), buf, 0) == 0);
    CHECK(buf[1] == 'x');
    CHECK(packet::format_addr(a.data(), nullptr, 46) == 0);
    // The longest IPv6 text form fits addr_str_len.
    char big[packet::kAddrStrLen];
    CHECK(packet::format_addr(ip6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe").data(), big, sizeof big) == 39);
}

// Prometheus label values: stable, unique, snake_case; out-of-range is not a crash.
TEST_CASE("every verdict has a unique snake_case name and out-of-range is \"invalid\"", "[packet][verdict]")
{
    std::set<std::string> names;
    for (unsigned i = 0; i < packet::kVerdictCount; ++i) {
        const std::string n = packet::verdict_name(static_cast<Verdict>(i));
        CAPTURE(i, n);
        CHECK_FALSE(n.empty());
        CHECK(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos);
        CHECK(n != "invalid");
        names.insert(n);
    }
    CHECK(names.size() == packet::kVerdictCount);
    CHECK(std::string(packet::verdict_name(Verdict::tcp)) == "tcp");
    CHECK(std::string(packet::verdict_name(Verdict::truncated_l4)) == "truncated_l4");
    CHECK(std::string(packet::verdict_name(Verdict::vlan_too_deep)) == "vlan_too_deep");
    CHECK(std::string(packet::verdict_name(Verdict::count)) == "invalid");
    CHECK(std::string(packet::verdict_name(static_cast<Verdict>(200))) == "invalid");
    CHECK_FALSE(packet::is_malformed(Verdict::fragment));
    CHECK_FALSE(packet::is_malformed(Verdict::non_ip));
    CHECK(packet::is_malformed(Verdict::truncated_l2));
    CHECK(packet::is_malformed(Verdict::vlan_too_deep));
    CHECK_FALSE(packet::is_malformed(Verdict::count));
}

// The flow table compares raw bytes: operator== must be exactly memcmp over all 42 bytes.
TEST_CASE("FlowKey equality is byte equality over all 42 bytes", "[packet][key]")
{
    const auto p = test::parse_bytes(FrameBuilder().vlan(3).vlan(4).ipv4().tcp().build());
    for (size_t i = 0; i < sizeof(packet::FlowKey); ++i) {
        packet::FlowKey k = p.key;
        reinterpret_cast<uint8_t*>(&k)[i] ^= 1;
        CAPTURE(i);
        CHECK_FALSE(k == p.key);
    }
    packet::FlowKey same;
    std::memcpy(&same, &p.key, sizeof same);
    CHECK(same == p.key);
}
