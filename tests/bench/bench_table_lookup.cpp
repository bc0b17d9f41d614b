// SPDX-License-Identifier: BSD-3-Clause
// Issue 19: the table's packet path against the rte_hash design it replaced, same process, same
// packets. N established flows (picked up from ACKs in both directions, so every measured packet takes
// the steady path); then 2^20 PSH-ACK packets of random flows in random directions, in bursts of 32:
//   flowcop   FlowTable::submit() (the pipeline: hash + bucket prefetch, bucket scan + record
//             prefetch, track), drain() at the end;
//   rte_hash  rte_hash_lookup_with_hash_bulk + record prefetch + the same update (rte_hash_table.h).
// Repeats alternate between the two (interleaved), caches are not flushed (steady state: the packet
// path runs back to back); medians of kRepeats. No I/O: this is the table step alone, which
// deploy/bench/packet_rate.py measures inside the whole program.
#include "rte_hash_table.h"
#include "table_util.h"

#include <conntrack/table_inspector.h>
#include <conntrack/table_memory.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

using namespace flowcop;
using namespace flowcop::bench;

namespace {

constexpr unsigned kBurst = 32;
constexpr size_t kPackets = size_t(1) << 20;
constexpr int kRepeats = 7;

// Flow i's packet: client 10.h.h.h:port (the key's lower endpoint) <-> 172.16.0.1:80, as Feed numbers them.
packet::Packet flow_packet(const packet::Packet& tmpl, uint32_t i, bool from_client, uint8_t flags)
{
    packet::Packet p = tmpl;
    const uint32_t host = i / 50000 + 1;
    p.key.addr_lo[13] = uint8_t(host >> 16);
    p.key.addr_lo[14] = uint8_t(host >> 8);
    p.key.addr_lo[15] = uint8_t(host);
    p.key.port_lo = uint16_t(1024 + i % 50000);
    p.src_is_lo = from_client;
    p.tcp_flags = flags;
    return p;
}

template <typename Process>
void run_packets(const std::vector<packet::Packet>& pkts, Process&& process)
{
    const packet::Packet* ptrs[kBurst];
    for (size_t k = 0; k < pkts.size(); k += kBurst) {
        const unsigned n = unsigned(std::min<size_t>(kBurst, pkts.size() - k));
        for (unsigned j = 0; j < n; ++j)
            ptrs[j] = &pkts[k + j];
        process(ptrs, n);
    }
}

void measure(uint32_t n)
{
    Feed feed;
    packet::Packet tmpl;
    feed.syn(0, tmpl);
    conntrack::TableConfig cfg;
    cfg.name = "bench_lookup";
    cfg.capacity = n;
    cfg.memory = conntrack::eal_memory();
    std::string err;
    auto table = conntrack::FlowTable::create(cfg, err);
    INFO(err);
    REQUIRE(table);
    // rte_hash needs headroom: without extendable buckets it refuses inserts near capacity.
    const size_t heap0 = rte_heap_allocated();
    RteHashTable old("bench_lookup_rte_hash", n + n / 4);
    const size_t old_bytes = rte_heap_allocated() - heap0;

    // Warm-up: every flow picked up from the client's ACK, then the server's and the client's again
    // (loose pickup, assured, and the tracker's bits all set: the steady path from then on).
    const uint64_t t = kT0;
    for (const auto& [client, flags] : {std::pair{true, packet::kTcpAck}, std::pair{false, packet::kTcpAck},
                                        std::pair{true, uint8_t(packet::kTcpAck | packet::kTcpPsh)}}) {
        std::vector<packet::Packet> round;
        round.reserve(std::min<size_t>(n, kPackets));
        for (uint32_t base = 0; base < n; base += uint32_t(kPackets)) {
            round.clear();
            for (uint32_t i = base; i < n && i < base + kPackets; ++i)
                round.push_back(flow_packet(tmpl, i, client, flags));
            run_packets(round, [&](const packet::Packet* const* p, unsigned k) { table->process_burst(p, k, t); });
            run_packets(round, [&](const packet::Packet* const* p, unsigned k) { old.process_burst(p, k, t); });
        }
    }
    REQUIRE(table->active() == n);
    REQUIRE(old.active() == n);

    // The measured packets: random flows, random directions.
    Rng rng(kSeed + n);
    std::vector<packet::Packet> pkts(kPackets);
    for (auto& p : pkts)
        p = flow_packet(tmpl, uint32_t(rng.below(n)), rng() % 2 == 0, packet::kTcpAck | packet::kTcpPsh);

    std::vector<double> ns_new, ns_old;
    const uint64_t tracked0 = table->counters().tcp_tracked;
    for (int r = 0; r < kRepeats; ++r) {
        ns_new.push_back(timed([&] {
                             run_packets(pkts, [&](const packet::Packet* const* p, unsigned k) {
                                 conntrack::TableInspector::submit(*table, p, k, t + 1);
                             });
                             conntrack::TableInspector::drain(*table);
                         }).cpu_ns /
                         double(kPackets));
        ns_old.push_back(
            timed([&] {
                run_packets(pkts, [&](const packet::Packet* const* p, unsigned k) { old.process_burst(p, k, t + 1); });
            }).cpu_ns /
            double(kPackets));
    }
    // Every measured packet took the steady path of an existing flow.
    CHECK(table->counters().tcp_tracked - tracked0 == uint64_t(kRepeats) * kPackets);
    CHECK(table->active() == n);
    const double a = median(ns_new), b = median(ns_old);
    std::printf("  %10u %10.1f %10.1f %8.2fx   %6.1f-%-6.1f %6.1f-%-6.1f   %8.1f %8.1f\n", n, a, b, b / a,
                quantile(ns_new, 0), quantile(ns_new, 1), quantile(ns_old, 0), quantile(ns_old, 1),
                double(table->memory_bytes()) / n, double(old_bytes) / n);
    std::fflush(stdout);
}

void header()
{
    provenance("flow table against rte_hash: the steady established packet, table step only (issue 19)");
    std::printf("  %10s %10s %10s %9s   %-13s %-13s   %8s %8s\n", "flows", "flowcop ns", "rte_hash", "speedup",
                "flowcop range", "rte_hash rng", "B/flow", "rte B/f");
    std::printf("  (CPU ns per packet, medians of %d interleaved repeats of 2^20 packets in bursts of %u; B/flow: the "
                "table's memory_bytes() per flow; rte B/f: the rte_hash design's DPDK heap per flow, at 1.25x "
                "capacity, without its wheel)\n",
                kRepeats, kBurst);
}

} // namespace

TEST_CASE("flow table against rte_hash, 10^4 to 10^6 flows", "[!benchmark][table-lookup]")
{
    header();
    for (const uint32_t n : {10'000u, 100'000u, 1'000'000u})
        measure(n);
}

TEST_CASE("flow table against rte_hash, 10^7 flows", "[!benchmark][table-lookup-1e7]")
{
    header();
    measure(10'000'000u);
}
