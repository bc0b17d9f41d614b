// SPDX-License-Identifier: BSD-3-Clause
// The rss plan's owner of a flow (app/service/rss_owner.h) against the port that deals packets as a NIC
// does (drivers/net/flowgen/rss_dealer.h), programmed with the plan's key, fields and table: for every
// flow, the worker rss_owner() names from the parsed key is the queue the port delivers the flow's
// unfragmented packets to, in both directions; an ICMP error quoting the flow (delivered by its outer
// addresses) and the flow's fragments (by addresses only) are named the same owner from their keys.
// Two independent computations (one from the wire as a NIC reads it, one from flowcop's canonical
// key) that must agree. No EAL.
#include <service/plan/port_plan.h>
#include <service/plan/rss_owner.h>

#include <flowgen/rss_dealer.h>
#include <packet/packet.h>

#include "frame_builder.h"

#include <catch2/catch.hpp>

#include <set>

using namespace flowcop;
using namespace flowcop::app;
using flowcop::test::FrameBuilder;

namespace {

struct Setup {
    PortPlan plan;
    flowgen::RssDealer dealer;
};

Setup rss_setup(unsigned workers)
{
    PortCaps c;
    c.id = 0;
    c.name = "flowgen";
    c.max_rx_queues = c.max_tx_queues = c.own_rx_queues = uint16_t(workers);
    c.rss_offloads = flowgen::RssDealer::offloads();
    c.hash_key_size = flowgen::RssDealer::kKeyBytes;
    c.reta_size = flowgen::RssDealer::kRetaSize;
    c.soft_rss = true;
    std::vector<unsigned> lcores;
    for (unsigned i = 0; i < workers; ++i)
        lcores.push_back(i);
    Setup s{{}, flowgen::RssDealer(uint16_t(workers))};
    std::string err;
    REQUIRE(plan_ports({c}, lcores, Mode::monitor, s.plan, err));
    REQUIRE(s.plan.rss());
    uint8_t key[flowgen::RssDealer::kKeyBytes];
    symmetric_key(key, sizeof key);
    REQUIRE(s.dealer.program(key, sizeof key, s.plan.rss_hf, redirection_table(s.plan, c.reta_size)) == "");
    return s;
}

unsigned dealt(const Setup& s, const std::vector<uint8_t>& f)
{
    return s.dealer.queue(f.data(), uint32_t(f.size()));
}

unsigned owner_of(const Setup& s, const std::vector<uint8_t>& f, packet::Verdict want)
{
    packet::Packet p{};
    REQUIRE(packet::parse(f.data(), uint32_t(f.size()), p) == want);
    return rss_owner(p.key, rss_owner_conf(s.plan));
}

test::Ipv4Addr v4(unsigned i, unsigned side)
{
    return {uint8_t(side == 0 ? 10 : 192), uint8_t(side == 0 ? 1 : 168), uint8_t(i >> 8), uint8_t(i)};
}

test::Ipv6Addr v6(unsigned i, unsigned side)
{
    test::Ipv6Addr a{0x20, 0x01, 0x0d, 0xb8, uint8_t(side), 0, 0, 0, 0, 0, 0, 0, 0, 0, uint8_t(i >> 8), uint8_t(i)};
    return a;
}

} // namespace

TEST_CASE("the owner flowcop computes from a flow's key is the queue the port deals the flow to", "[rss_owner]")
{
    for (unsigned workers : {2u, 3u, 4u}) {
        const Setup s = rss_setup(workers);
        std::set<unsigned> seen;
        for (unsigned i = 0; i < 200; ++i) {
            INFO("workers " << workers << " flow " << i);
            const uint16_t sport = uint16_t(30000 + i * 7), dport = uint16_t(i % 3 == 0 ? 443 : 53);
            // TCP over IPv4 and IPv6, UDP over IPv4, both directions.
            const auto t4 =
                FrameBuilder().ipv4({.src = v4(i, 0), .dst = v4(i, 1)}).tcp({.sport = sport, .dport = dport}).build();
            const auto t4r =
                FrameBuilder().ipv4({.src = v4(i, 1), .dst = v4(i, 0)}).tcp({.sport = dport, .dport = sport}).build();
            const auto t6 =
                FrameBuilder().ipv6({.src = v6(i, 0), .dst = v6(i, 1)}).tcp({.sport = sport, .dport = dport}).build();
            const auto u4 =
                FrameBuilder().ipv4({.src = v4(i, 0), .dst = v4(i, 1)}).udp({.sport = sport, .dport = dport}).build();
            const auto e4 = FrameBuilder().ipv4({.src = v4(i, 0), .dst = v4(i, 1)}).icmp({.id = uint16_t(i)}).build();
            CHECK(dealt(s, t4) == dealt(s, t4r));
            CHECK(owner_of(s, t4, packet::Verdict::tcp) == dealt(s, t4));
            CHECK(owner_of(s, t4r, packet::Verdict::tcp) == dealt(s, t4));
            CHECK(owner_of(s, t6, packet::Verdict::tcp) == dealt(s, t6));
            CHECK(owner_of(s, u4, packet::Verdict::udp) == dealt(s, u4));
            CHECK(owner_of(s, e4, packet::Verdict::icmp) == dealt(s, e4));
            seen.insert(dealt(s, t4));

            // An ICMP error from a router (another outer source) quoting the TCP flow's packet: the port
            // deals it by its outer addresses, flowcop names the quoted flow's owner.
            test::Ipv4Addr router{172, 16, uint8_t(i), 1};
            const auto err4 =
                FrameBuilder()
                    .ipv4({.src = router, .dst = v4(i, 0)})
                    .icmp({.type = 3, .code = 1, .rest = 0})
                    .quote(
                        FrameBuilder().ipv4({.src = v4(i, 0), .dst = v4(i, 1)}).tcp({.sport = sport, .dport = dport}),
                        28)
                    .build();
            CHECK(owner_of(s, err4, packet::Verdict::icmp_error) == dealt(s, t4));
            const auto err6 =
                FrameBuilder()
                    .ipv6({.src = v6(i, 7), .dst = v6(i, 0)})
                    .icmp({.type = 1, .code = 0, .rest = 0})
                    .quote(
                        FrameBuilder().ipv6({.src = v6(i, 0), .dst = v6(i, 1)}).tcp({.sport = sport, .dport = dport}),
                        48)
                    .build();
            CHECK(owner_of(s, err6, packet::Verdict::icmp_error) == dealt(s, t6));

            // The fragments of a UDP datagram of the flow: dealt together by addresses (first and later
            // alike, as an ICMP packet between them is), while the first fragment's key names the flow's owner.
            const auto first = FrameBuilder()
                                   .ipv4({.src = v4(i, 0), .dst = v4(i, 1), .id = 77, .more_fragments = true})
                                   .udp({.sport = sport, .dport = dport})
                                   .payload(16)
                                   .build();
            const auto later = FrameBuilder()
                                   .ipv4({.src = v4(i, 0), .dst = v4(i, 1), .id = 77, .frag_offset = 3})
                                   .next_protocol(17)
                                   .payload(16)
                                   .build();
            CHECK(dealt(s, first) == dealt(s, later));
            CHECK(dealt(s, first) == dealt(s, e4));
            CHECK(owner_of(s, first, packet::Verdict::udp) == dealt(s, u4));
            const auto first6 = FrameBuilder()
                                    .ipv6({.src = v6(i, 0), .dst = v6(i, 1)})
                                    .ipv6_frag(0, true, 9)
                                    .udp({.sport = sport, .dport = dport})
                                    .payload(16)
                                    .build();
            const auto later6 = FrameBuilder()
                                    .ipv6({.src = v6(i, 0), .dst = v6(i, 1)})
                                    .ipv6_frag(3, false, 9)
                                    .next_protocol(17)
                                    .payload(16)
                                    .build();
            CHECK(dealt(s, first6) == dealt(s, later6));
        }
        CHECK(seen.size() == workers); // every worker owns flows
    }
}

TEST_CASE("VLAN tags do not change the queue or the owner: neither a NIC nor flowcop's owner hashes them",
          "[rss_owner]")
{
    const Setup s = rss_setup(4);
    for (unsigned i = 0; i < 50; ++i) {
        const auto plain =
            FrameBuilder().ipv4({.src = v4(i, 0), .dst = v4(i, 1)}).tcp({.sport = uint16_t(1000 + i)}).build();
        const auto tagged = FrameBuilder()
                                .vlan(10, 0x88a8)
                                .vlan(20)
                                .ipv4({.src = v4(i, 0), .dst = v4(i, 1)})
                                .tcp({.sport = uint16_t(1000 + i)})
                                .build();
        CHECK(dealt(s, plain) == dealt(s, tagged));
        CHECK(owner_of(s, tagged, packet::Verdict::tcp) == dealt(s, plain));
    }
}
