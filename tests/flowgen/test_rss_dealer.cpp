// SPDX-License-Identifier: BSD-3-Clause
// RssDealer (drivers/net/flowgen/rss_dealer.h): the queue a NIC's RSS gives a frame. The hash is DPDK's
// rte_softrss over the tuple this test builds itself from the addresses and ports it put in the frame
// (host order, as rte_thash.h asks), so the dealer's reading of the headers is what is checked: which
// fields it hashes for which frame, through VLAN tags and IPv6 extension headers, with which key and
// table. No EAL.
#include <flowgen/rss_dealer.h>

#include "frame_builder.h"

#include <rte_ethdev.h>
#include <rte_thash.h>

#include <catch2/catch.hpp>

#include <set>

using flowcop::flowgen::RssDealer;
using flowcop::test::FrameBuilder;
using flowcop::test::ip4;
using flowcop::test::ip6;

namespace {

uint32_t word(const uint8_t* p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

const uint8_t* sym_key()
{
    static uint8_t k[40];
    for (unsigned i = 0; i < 40; ++i)
        k[i] = i % 2 == 0 ? 0x6d : 0x5a;
    return k;
}

uint32_t hash4(const char* s, const char* d, int sport = -1, int dport = -1, const uint8_t* key = sym_key())
{
    uint32_t t[3] = {word(ip4(s).data()), word(ip4(d).data()), 0};
    if (sport < 0)
        return rte_softrss(t, 2, key);
    t[2] = uint32_t(sport) << 16 | uint32_t(dport);
    return rte_softrss(t, 3, key);
}

uint32_t hash6(const char* s, const char* d, int sport = -1, int dport = -1)
{
    uint32_t t[9];
    const auto a = ip6(s), b = ip6(d);
    for (unsigned w = 0; w < 4; ++w) {
        t[w] = word(a.data() + 4 * w);
        t[4 + w] = word(b.data() + 4 * w);
    }
    if (sport < 0)
        return rte_softrss(t, 8, sym_key());
    t[8] = uint32_t(sport) << 16 | uint32_t(dport);
    return rte_softrss(t, 9, sym_key());
}

uint32_t h(const RssDealer& d, const std::vector<uint8_t>& f)
{
    return d.hash(f.data(), uint32_t(f.size()));
}

} // namespace

TEST_CASE("unfragmented TCP and UDP hash on addresses and ports, symmetric in both directions", "[flowgen][rss]")
{
    const RssDealer d(4);
    const auto t = FrameBuilder()
                       .ipv4({.src = ip4("10.1.2.3"), .dst = ip4("192.0.2.9")})
                       .tcp({.sport = 40001, .dport = 443})
                       .build();
    const auto r = FrameBuilder()
                       .ipv4({.src = ip4("192.0.2.9"), .dst = ip4("10.1.2.3")})
                       .tcp({.sport = 443, .dport = 40001})
                       .build();
    CHECK(h(d, t) == hash4("10.1.2.3", "192.0.2.9", 40001, 443));
    CHECK(h(d, t) == h(d, r));
    const auto u = FrameBuilder()
                       .ipv4({.src = ip4("10.1.2.3"), .dst = ip4("192.0.2.9")})
                       .udp({.sport = 5000, .dport = 53})
                       .build();
    CHECK(h(d, u) == hash4("10.1.2.3", "192.0.2.9", 5000, 53));
    const auto t6 = FrameBuilder()
                        .ipv6({.src = ip6("2001:db8::1"), .dst = ip6("2001:db8:1::2")})
                        .tcp({.sport = 1234, .dport = 80})
                        .build();
    const auto r6 = FrameBuilder()
                        .ipv6({.src = ip6("2001:db8:1::2"), .dst = ip6("2001:db8::1")})
                        .tcp({.sport = 80, .dport = 1234})
                        .build();
    CHECK(h(d, t6) == hash6("2001:db8::1", "2001:db8:1::2", 1234, 80));
    CHECK(h(d, t6) == h(d, r6));
    // Behind a destination options header, as NICs that parse extension headers read it.
    const auto e6 = FrameBuilder()
                        .ipv6({.src = ip6("2001:db8::1"), .dst = ip6("2001:db8:1::2")})
                        .ipv6_ext(60)
                        .tcp({.sport = 1234, .dport = 80})
                        .build();
    CHECK(h(d, e6) == h(d, t6));
    // Through QinQ.
    const auto q = FrameBuilder()
                       .vlan(5, 0x88a8)
                       .vlan(7)
                       .ipv4({.src = ip4("10.1.2.3"), .dst = ip4("192.0.2.9")})
                       .tcp({.sport = 40001, .dport = 443})
                       .build();
    CHECK(h(d, q) == h(d, t));
}

TEST_CASE("fragments, first or later, ICMP and its errors hash on the outer addresses alone", "[flowgen][rss]")
{
    const RssDealer d(4);
    const uint32_t pair = hash4("10.0.0.1", "10.0.0.2");
    const auto first =
        FrameBuilder().ipv4({.id = 9, .more_fragments = true}).udp({.sport = 7, .dport = 9}).payload(16).build();
    const auto later = FrameBuilder().ipv4({.id = 9, .frag_offset = 3}).next_protocol(17).payload(16).build();
    const auto echo = FrameBuilder().ipv4({}).icmp({}).build();
    const auto error = FrameBuilder()
                           .ipv4({})
                           .icmp({.type = 3, .code = 3, .rest = 0})
                           .quote(FrameBuilder().ipv4({.src = ip4("10.0.0.2"), .dst = ip4("10.9.9.9")}).udp({}), 28)
                           .build();
    const auto gre = FrameBuilder().ipv4({}).next_protocol(47).payload(8).build();
    CHECK(h(d, first) == pair);
    CHECK(h(d, later) == pair);
    CHECK(h(d, echo) == pair);
    CHECK(h(d, error) == pair);
    CHECK(h(d, gre) == pair);
    const auto first6 = FrameBuilder().ipv6({}).ipv6_frag(0, true).udp({}).payload(16).build();
    const auto later6 = FrameBuilder().ipv6({}).ipv6_frag(2, false).next_protocol(17).payload(16).build();
    CHECK(h(d, first6) == hash6("2001:db8::1", "2001:db8::2"));
    CHECK(h(d, later6) == h(d, first6));
}

TEST_CASE("what is not IP, or too short to read, goes to table entry 0", "[flowgen][rss]")
{
    const RssDealer d(4);
    const auto arp = FrameBuilder().ethertype(0x0806).raw(std::vector<uint8_t>(28, 0)).build();
    CHECK(h(d, arp) == 0);
    const auto t = FrameBuilder().ipv4({}).tcp({}).build();
    CHECK(d.hash(t.data(), 20) == 0);
    CHECK(d.queue(arp.data(), uint32_t(arp.size())) == 0);
}

TEST_CASE("the default table deals flows over every queue; a programmed key, fields and table are used",
          "[flowgen][rss]")
{
    RssDealer d(3);
    std::set<uint16_t> seen;
    for (unsigned i = 0; i < 64; ++i) {
        const auto f = FrameBuilder().ipv4({}).tcp({.sport = uint16_t(1000 + i)}).build();
        const uint16_t q = d.queue(f.data(), uint32_t(f.size()));
        CHECK(q == h(d, f) % 128 % 3);
        seen.insert(q);
    }
    CHECK(seen.size() == 3);

    std::vector<uint16_t> table(128, 0);
    table[hash4("10.0.0.1", "10.0.0.2", 40000, 80) % 128] = 2;
    uint8_t key[40];
    for (unsigned i = 0; i < 40; ++i)
        key[i] = uint8_t(i * 7 + 1);
    // Only the IPv4 field: TCP then hashes on the addresses, as a NIC with RTE_ETH_RSS_IPV4 alone does.
    REQUIRE(d.program(key, 40, RTE_ETH_RSS_IPV4, table) == "");
    const auto f = FrameBuilder().ipv4({}).tcp({}).build();
    CHECK(h(d, f) == hash4("10.0.0.1", "10.0.0.2", -1, -1, key));
    REQUIRE(d.program(sym_key(), 40, RssDealer::offloads(), table) == "");
    CHECK(d.queue(f.data(), uint32_t(f.size())) == 2);
    CHECK(d.table() == table);
    CHECK(d.hash_fields() == RssDealer::offloads());

    CHECK(d.program(key, 39, RssDealer::offloads(), table).find("40") != std::string::npos);
    CHECK(d.program(key, 40, RTE_ETH_RSS_L2_PAYLOAD, table) != "");
    CHECK(d.program(key, 40, RssDealer::offloads(), std::vector<uint16_t>(64, 0)) != "");
    CHECK(d.program(key, 40, RssDealer::offloads(), std::vector<uint16_t>(128, 3)).find("queue 3") !=
          std::string::npos);
}
