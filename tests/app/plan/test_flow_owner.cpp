// SPDX-License-Identifier: BSD-3-Clause
// The handoff plan's owner of a flow (app/service/plan/flow_owner.h): both directions agree, flows spread
// evenly, and a worker's share does not crowd its flow table's buckets. No EAL.
#include <service/plan/flow_owner.h>

#include <frame_builder.h>
#include <packet/packet.h>

#include <conntrack/flow_hash.h>

#include <rte_tcp.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace flowcop;
using namespace flowcop::app;
using test::FrameBuilder;

namespace {

packet::Packet parsed(const std::vector<uint8_t>& frame)
{
    packet::Packet p{};
    packet::parse(frame.data(), uint32_t(frame.size()), p);
    return p;
}

packet::FlowKey random_key(uint64_t& x)
{
    auto next = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    packet::FlowKey k{};
    const uint64_t a = next(), b = next();
    std::memcpy(k.addr_lo + 12, &a, 4); // IPv4-mapped, as the parser stores IPv4
    std::memcpy(k.addr_hi + 12, &b, 4);
    k.addr_lo[10] = k.addr_lo[11] = k.addr_hi[10] = k.addr_hi[11] = 0xff;
    k.port_lo = uint16_t(next());
    k.port_hi = uint16_t(next());
    k.proto = 6;
    return k;
}

} // namespace

// The whole point: the two directions of a connection parse to one key, so one worker owns both.
TEST_CASE("both directions of a flow have the same owner, for TCP and UDP over IPv4 and IPv6", "[flow_owner]")
{
    const uint64_t seed = 0x1234;
    for (unsigned workers : {2u, 3u, 7u}) {
        for (uint16_t port = 1000; port < 1100; ++port) {
            const auto c2s = parsed(FrameBuilder()
                                        .ipv4({.src = test::ip4("10.0.0.1"), .dst = test::ip4("10.9.0.2")})
                                        .tcp({.sport = port, .dport = 443})
                                        .build());
            const auto s2c =
                parsed(FrameBuilder()
                           .ipv4({.src = test::ip4("10.9.0.2"), .dst = test::ip4("10.0.0.1")})
                           .tcp({.sport = 443, .dport = port, .flags = RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG})
                           .build());
            REQUIRE(c2s.src_is_lo != s2c.src_is_lo);
            REQUIRE(flow_owner(c2s.key, seed, workers) == flow_owner(s2c.key, seed, workers));
            const auto u1 = parsed(FrameBuilder().ipv6({}).udp({.sport = port, .dport = 53}).build());
            const auto u2 = parsed(FrameBuilder()
                                       .ipv6({.src = test::ip6("2001:db8::2"), .dst = test::ip6("2001:db8::1")})
                                       .udp({.sport = 53, .dport = port})
                                       .build());
            REQUIRE(flow_owner(u1.key, seed, workers) == flow_owner(u2.key, seed, workers));
            REQUIRE(flow_owner(u1.key, seed, workers) < workers);
        }
    }
}

TEST_CASE("flows spread evenly over the workers, and the seed moves them", "[flow_owner]")
{
    uint64_t x = 88172645463325252ull;
    constexpr unsigned kKeys = 60000;
    for (unsigned workers : {2u, 3u, 4u, 8u}) {
        std::vector<unsigned> count(workers);
        unsigned moved = 0;
        for (unsigned i = 0; i < kKeys; ++i) {
            const packet::FlowKey k = random_key(x);
            const unsigned o = flow_owner(k, 1, workers);
            ++count[o];
            moved += o != flow_owner(k, 2, workers);
        }
        const double expect = double(kKeys) / workers;
        for (unsigned c : count) {
            INFO("workers " << workers << " count " << c);
            CHECK(std::fabs(c - expect) < 6 * std::sqrt(expect)); // six sigma of a binomial share
        }
        CHECK(moved > kKeys * (workers - 1) / workers * 9 / 10); // another seed: another independent split
    }
}

// Why not the table's CRC: with it (or another seed of it), a worker's keys would all share the bits
// its table picks buckets by. The flow table hashes keys with CRC32-C (conntrack/flow_hash.h) and maps
// the hash onto its buckets by multiply-shift (flow_index.h), as this test does.
TEST_CASE("a worker's share of flows fills its table's buckets evenly", "[flow_owner]")
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    constexpr unsigned kBuckets = 64;
    std::vector<unsigned> buckets(kBuckets);
    unsigned mine = 0;
    for (unsigned i = 0; i < 200000; ++i) {
        const packet::FlowKey k = random_key(x);
        if (flow_owner(k, 7, 4) != 1)
            continue;
        ++mine;
        ++buckets[(uint64_t(conntrack::flow_hash(k)) * kBuckets) >> 32];
    }
    const double expect = double(mine) / kBuckets;
    for (unsigned b : buckets)
        CHECK(std::fabs(b - expect) < 6 * std::sqrt(expect));
}
