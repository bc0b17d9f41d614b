// SPDX-License-Identifier: BSD-3-Clause
// What the handoff plan (app/service/plan/port_plan.h) costs a packet, against the direct path, in the same
// run (tests/benchmarks.md, "Handoff"). Hidden [!benchmark] cases, outside the default run:
//   meson test -C BUILD --benchmark --suite bench -v 'app handoff'
//
// Both paths start from the same burst of 32 mbufs holding TCP frames of 1024 distinct flows and end
// with every packet parsed by the lcore that owns its flow; the flow table's work after that is the
// same on both paths and left out. The direct path (the rss and single_lcore plans) is what worker.cpp
// does per burst: parse_mbuf each packet, then one not-taken branch. The handoff path is what it does
// under the handoff plan for a packet another lcore owns: parse, flow_owner() (flow_owner.h), one SPSC
// rte_ring enqueue per burst, and at the owner a dequeue and a second parse (the ring carries only the
// mbuf). Measured twice:
//   - same core: sender and owner are one thread, so the number is the instructions' cost alone;
//   - cross core: the sender on an EAL worker lcore, the owner on the main lcore, every packet handed
//     off, so the mbufs' and the ring's cache lines move between cores as they do in flowcop. The time
//     is the owner's, from the first packet it took to the last.
// Medians of interleaved runs (direct, handoff, direct, ...); ns per packet and the ratio to direct.
#include <service/plan/flow_owner.h>

#include <frame_builder.h>
#include <packet/packet_mbuf.h>

#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_tcp.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace flowcop;

namespace {

constexpr unsigned kBurst = 32;
constexpr unsigned kFlows = 1024;
constexpr unsigned kRounds = 2000; // bursts of kFlows packets per measurement
constexpr unsigned kRuns = 9;
constexpr uint64_t kSeed = 0x5eed;

uint64_t now_ns()
{
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Frames {
    rte_mempool* pool = nullptr;
    std::vector<rte_mbuf*> mbufs; // kFlows packets, one per flow
    uint64_t sink = 0;            // defeats dead-code elimination

    Frames()
    {
        pool = rte_pktmbuf_pool_create("bench_handoff", 2 * kFlows, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
        REQUIRE(pool != nullptr);
        for (unsigned i = 0; i < kFlows; ++i) {
            test::Ipv4Spec ip;
            ip.src = {10, 1, uint8_t(i >> 8), uint8_t(i)};
            ip.dst = {10, 2, 0, 1};
            test::TcpSpec tcp;
            tcp.sport = uint16_t(20000 + i);
            tcp.dport = 443;
            tcp.flags = RTE_TCP_ACK_FLAG;
            const std::vector<uint8_t> f = test::FrameBuilder().ipv4(ip).tcp(tcp).payload(64).build();
            rte_mbuf* m = rte_pktmbuf_alloc(pool);
            REQUIRE(m != nullptr);
            char* d = rte_pktmbuf_append(m, uint16_t(f.size()));
            REQUIRE(d != nullptr);
            std::memcpy(d, f.data(), f.size());
            mbufs.push_back(m);
        }
    }
    ~Frames()
    {
        for (rte_mbuf* m : mbufs)
            rte_pktmbuf_free(m);
        rte_mempool_free(pool);
    }
};

// The direct path over one burst.
inline void direct_burst(rte_mbuf* const* mbufs, unsigned n, bool handoff_plan, uint64_t& sink)
{
    packet::Packet pkts[kBurst];
    for (unsigned i = 0; i < n; ++i)
        packet::parse_mbuf(mbufs[i], pkts[i]);
    if (handoff_plan) [[unlikely]] // worker.cpp's one check under the other plans
        sink += 1;
    for (unsigned i = 0; i < n; ++i)
        sink += pkts[i].key.port_lo;
}

// The sender's half of the handoff path over one burst: parse, owner, one enqueue. Returns packets enqueued.
inline unsigned send_burst(rte_mbuf* const* mbufs, unsigned n, rte_ring* ring, uint64_t& sink)
{
    packet::Packet pkts[kBurst];
    rte_mbuf* out[kBurst];
    unsigned k = 0;
    for (unsigned i = 0; i < n; ++i) {
        packet::parse_mbuf(mbufs[i], pkts[i]);
        sink += app::flow_owner(pkts[i].key, kSeed, 2);
        out[k++] = mbufs[i]; // every packet goes to the other lcore: the worst case
    }
    return rte_ring_enqueue_burst(ring, reinterpret_cast<void* const*>(out), k, nullptr);
}

// The owner's half: one dequeue, parse again.
inline unsigned take_burst(rte_ring* ring, uint64_t& sink)
{
    rte_mbuf* in[kBurst];
    const unsigned n = rte_ring_dequeue_burst(ring, reinterpret_cast<void**>(in), kBurst, nullptr);
    packet::Packet pkts[kBurst];
    for (unsigned i = 0; i < n; ++i) {
        packet::parse_mbuf(in[i], pkts[i]);
        sink += pkts[i].key.port_lo;
    }
    return n;
}

double direct_ns(Frames& f)
{
    const uint64_t t0 = now_ns();
    for (unsigned r = 0; r < kRounds; ++r)
        for (unsigned b = 0; b < kFlows; b += kBurst)
            direct_burst(&f.mbufs[b], kBurst, false, f.sink);
    return double(now_ns() - t0) / (double(kRounds) * kFlows);
}

double same_core_ns(Frames& f, rte_ring* ring)
{
    const uint64_t t0 = now_ns();
    for (unsigned r = 0; r < kRounds; ++r)
        for (unsigned b = 0; b < kFlows; b += kBurst) {
            send_burst(&f.mbufs[b], kBurst, ring, f.sink);
            take_burst(ring, f.sink);
        }
    return double(now_ns() - t0) / (double(kRounds) * kFlows);
}

struct CrossCore {
    Frames* frames;
    rte_ring* ring;
    std::atomic<bool> go{false};
    uint64_t sink = 0;
    uint64_t dropped = 0;
};

int sender_main(void* arg)
{
    auto& c = *static_cast<CrossCore*>(arg);
    while (!c.go.load(std::memory_order_acquire))
        rte_pause();
    for (unsigned r = 0; r < kRounds; ++r)
        for (unsigned b = 0; b < kFlows; b += kBurst) {
            unsigned put = 0;
            // A full ring would drop in flowcop; here the sender waits so both sides count every packet.
            while (put < kBurst) {
                put += send_burst(&c.frames->mbufs[b + put], kBurst - put, c.ring, c.sink);
                if (put < kBurst)
                    ++c.dropped;
            }
        }
    return 0;
}

double cross_core_ns(Frames& f, rte_ring* ring, unsigned worker)
{
    CrossCore c{&f, ring};
    REQUIRE(rte_eal_remote_launch(sender_main, &c, worker) == 0);
    c.go.store(true, std::memory_order_release);
    const uint64_t want = uint64_t(kRounds) * kFlows;
    uint64_t got = 0, t0 = 0;
    while (got < want) {
        const unsigned n = take_burst(ring, f.sink);
        if (n != 0 && t0 == 0)
            t0 = now_ns();
        got += n;
    }
    const uint64_t t1 = now_ns();
    rte_eal_wait_lcore(worker);
    f.sink += c.sink;
    return double(t1 - t0) / double(want);
}

} // namespace

TEST_CASE("handoff: cost per packet of the handoff path against the direct path", "[!benchmark][handoff]")
{
    Frames f;
    rte_ring* ring = rte_ring_create("bench_handoff", 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    REQUIRE(ring != nullptr);
    const unsigned worker = rte_get_next_lcore(-1, 1, 0);
    const bool two_lcores = worker < RTE_MAX_LCORE;
    std::vector<double> direct, same, cross;
    for (unsigned run = 0; run < kRuns; ++run) {
        direct.push_back(direct_ns(f));
        same.push_back(same_core_ns(f, ring));
        if (two_lcores)
            cross.push_back(cross_core_ns(f, ring, worker));
    }
    const double d = median(direct), s = median(same);
    std::printf("handoff bench: %u flows, bursts of %u, %u x %u packets per run, median of %u interleaved runs\n",
                kFlows, kBurst, kRounds, kFlows, kRuns);
    std::printf("  direct (parse, one branch)                         %6.2f ns/packet\n", d);
    std::printf("  handoff, same core (parse, owner, ring, parse)      %6.2f ns/packet  %.2fx direct  (+%.2f ns)\n", s,
                s / d, s - d);
    if (two_lcores) {
        const double c = median(cross);
        std::printf("  handoff, cross core (owner's time per packet)       %6.2f ns/packet  %.2fx direct  (+%.2f ns)\n",
                    c, c / d, c - d);
    } else {
        std::printf("  handoff, cross core: skipped (EAL has one lcore)\n");
    }
    std::printf("  (sink %llu)\n", static_cast<unsigned long long>(f.sink));
    rte_ring_free(ring);
    CHECK(d > 0);
}
