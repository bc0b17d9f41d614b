// SPDX-License-Identifier: BSD-3-Clause
// Generator: Core's frames in mbufs, with the standard Rx timestamp field (EAL needed).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include <flowgen/generator.h>

#include "eal.h"
#include "run.h"

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;

namespace {

struct Reference {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint64_t> ts;
};

Reference reference(const Config& cfg, size_t n)
{
    Core core(cfg);
    std::vector<uint8_t> buf(core.max_frame_len());
    Reference r;
    uint64_t ts = 0;
    for (uint32_t len; r.frames.size() < n && (len = core.next(buf.data(), ts)) != 0;) {
        r.frames.emplace_back(buf.begin(), buf.begin() + len);
        r.ts.push_back(ts);
    }
    return r;
}

struct Pool {
    explicit Pool(const char* name, unsigned n, uint16_t room = RTE_MBUF_DEFAULT_BUF_SIZE)
        : mp(rte_pktmbuf_pool_create(name, n, 0, 0, room, SOCKET_ID_ANY))
    {}
    ~Pool() { rte_mempool_free(mp); }
    rte_mempool* mp;
};

uint64_t timestamp_flag()
{
    const int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
    return bit < 0 ? 0 : uint64_t{1} << bit;
}

// Checks mbufs against the reference from position `at`; returns mismatches.
unsigned compare(rte_mbuf** m, unsigned n, const Reference& ref, size_t at, uint16_t port)
{
    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    const uint64_t flag = timestamp_flag();
    unsigned bad = 0;
    for (unsigned i = 0; i < n; ++i, ++at) {
        const auto& f = ref.frames.at(at);
        bad += m[i]->pkt_len != f.size() || m[i]->data_len != f.size() || m[i]->nb_segs != 1 ||
               std::memcmp(rte_pktmbuf_mtod(m[i], const uint8_t*), f.data(), f.size()) != 0 ||
               (m[i]->ol_flags & flag) == 0 || flag == 0 || off < 0 ||
               *RTE_MBUF_DYNFIELD(m[i], off, rte_mbuf_timestamp_t*) != ref.ts.at(at) || m[i]->port != port;
    }
    return bad;
}

} // namespace

// Same code path as Core: the mbuf stream is Core's stream, plus the timestamp a packet clock reads.
TEST_CASE("Generator fills mbufs with Core's frames and the Rx timestamp in microseconds", "[flowgen][generator]")
{
    REQUIRE(eal_up());
    const Config cfg = config("flows=300,pps=500000,lifetime=0.05,ipv6_pct=30,vlan=3,packets=10000");
    const Reference ref = reference(cfg, 10000);
    Pool pool("fg_t_gen", 1023);
    REQUIRE(pool.mp != nullptr);
    Generator gen(cfg);
    REQUIRE(gen.error() == "");
    gen.set_port(7);
    rte_mbuf* m[32];
    size_t got = 0;
    unsigned bad = 0, n;
    while ((n = gen.next_burst(pool.mp, m, 32)) != 0) {
        bad += compare(m, n, ref, got, 7);
        got += n;
        rte_pktmbuf_free_bulk(m, n);
    }
    CHECK(got == 10000);
    CHECK(bad == 0);
    CHECK(gen.stats().finished);
    CHECK(gen.stats().alloc_failures == 0);
    // Finished: no mbuf is taken (and leaked) for frames that do not exist.
    CHECK(gen.next_burst(pool.mp, m, 32) == 0);
    CHECK(rte_mempool_avail_count(pool.mp) == 1023);
}

// A consumer holding mbufs must slow the stream down, never drop or reorder frames of it.
TEST_CASE("a dry pool gives fewer frames, counts it and loses none of the stream", "[flowgen][generator]")
{
    REQUIRE(eal_up());
    const Config cfg = config("flows=100,pps=100000,lifetime=0.1,packets=3000");
    const Reference ref = reference(cfg, 3000);
    Pool pool("fg_t_dry", 63);
    REQUIRE(pool.mp != nullptr);
    Generator gen(cfg);
    std::vector<rte_mbuf*> held(64);
    size_t got = 0;
    unsigned bad = 0, rounds = 0;
    while (!gen.finished() && rounds++ < 1000) {
        unsigned n = gen.next_burst(pool.mp, held.data(), 40);     // 40 of 63
        unsigned k = gen.next_burst(pool.mp, held.data() + n, 40); // only what is left
        unsigned z = gen.next_burst(pool.mp, held.data() + n + k, 8);
        CHECK(z == 0);
        bad += compare(held.data(), n + k, ref, got, 0);
        got += n + k;
        rte_pktmbuf_free_bulk(held.data(), n + k);
    }
    CHECK(got == 3000);
    CHECK(bad == 0);
    CHECK(gen.stats().alloc_failures > 0);
    CHECK(rte_mempool_avail_count(pool.mp) == 63);
}

TEST_CASE("a pool too small for pkt_size gives no frames and check_pool says why", "[flowgen][generator]")
{
    REQUIRE(eal_up());
    Pool pool("fg_t_small", 255);
    Generator gen(config("pkt_size=9000"));
    const std::string why = gen.check_pool(pool.mp);
    CHECK(why == "flowgen: mempool 'fg_t_small' has 2176-byte mbufs; frames need 9000 bytes after 128 of "
                 "headroom (pkt_size)");
    rte_mbuf* m[4];
    CHECK(gen.next_burst(pool.mp, m, 4) == 0);
    CHECK(gen.next_burst(nullptr, m, 4) == 0);
    CHECK(gen.stats().alloc_failures == 2);
    CHECK(gen.stats().packets == 0);
    CHECK(Generator(config("pkt_size=2048")).check_pool(pool.mp) == "");
}

TEST_CASE("an invalid Config makes a Generator that says why and generates nothing", "[flowgen][generator]")
{
    REQUIRE(eal_up());
    Config bad;
    bad.burst = 0;
    Generator gen(bad);
    CHECK(gen.error() == check_config(bad));
    Pool pool("fg_t_inval", 63);
    rte_mbuf* m[4];
    CHECK(gen.next_burst(pool.mp, m, 4) == 0);
    CHECK(rte_mempool_avail_count(pool.mp) == 63);
}
