// SPDX-License-Identifier: BSD-3-Clause
// Pieces shared by the benchmarks that drive the real FlowTable: a table with flowcop's default
// wheel and timeouts, the virtual clock's origin, the timeout a SYN-only flow gets, and a shuffle of
// the record positions a table hands out.
#pragma once

#include "bench_util.h"
#include "flow_feed.h"

#include <conntrack/flow_table.h>

#include <rte_malloc.h>

#include <catch2/catch.hpp>

#include <memory>
#include <string>

namespace flowcop::bench {

// The virtual clock's origin: a whole second, so deadlines land on known ticks.
inline constexpr uint64_t kT0 = 1'700'000'000ull * kSec;
// A SYN-only flow is in SYN_SENT: netfilter's 120 s, which is flowcop's default.
inline constexpr uint64_t kSynTimeout =
    uint64_t(tcpstate::Timeouts::netfilter_defaults().effective(tcpstate::State::syn_sent)) * kSec;
// Budgets large enough never to stop a pass (the expiry-cost rows measure whole passes).
inline constexpr uint64_t kNoBudget = 1ull << 40;

// A table of `capacity` flows with flowcop's defaults (4096 one-second buckets, netfilter timeouts), in
// EAL memory as in the service (hugepages with FLOWCOP_BENCH_HUGE_DIR).
inline std::unique_ptr<conntrack::FlowTable> make_table(const std::string& name, uint32_t capacity)
{
    conntrack::TableConfig cfg;
    cfg.name = name;
    cfg.capacity = capacity;
    cfg.memory = conntrack::eal_memory();
    std::string err;
    auto t = conntrack::FlowTable::create(cfg, err);
    INFO(err);
    REQUIRE(t != nullptr);
    return t;
}

// Bytes allocated from DPDK's heap on this lcore's socket (what FlowTable::memory_bytes() deltas).
inline size_t rte_heap_allocated()
{
    rte_malloc_socket_stats st{};
    return rte_malloc_get_socket_stats(int(rte_socket_id()), &st) == 0 ? st.heap_allocsz_bytes : 0;
}

// Shuffles the order in which the table hands out record positions. A fresh table gives them out in
// creation order, and flows created in order are also linked into their wheel bucket in that order,
// so a pass would walk a bucket's flows in record order (in the expiry-cost benchmark n/1000 records
// apart: 640 B at 10^4 flows, a stride the hardware prefetcher follows, 640 KB at 10^7, where it
// cannot; in the wave, nearly adjacent records). So the table is first filled to capacity with flows that are then killed
// in a random order and reaped (a kill is due on the next tick, and the wheel drains each of a bucket's
// lanes newest first, taking the lanes in turn, so they are freed in random order): later flows get
// positions in that order.
inline void scramble_positions(conntrack::FlowTable& table, Feed& feed, uint32_t capacity, uint64_t now, int rep)
{
    constexpr uint32_t kBase = 20'000'000; // flow numbers no measured flow uses (those stay below 1.1x10^7)
    REQUIRE(feed.open(table, kBase, capacity, [&](uint32_t) { return now; }) == capacity);
    packet::Packet p;
    uint32_t killed = 0;
    for (uint32_t i : permutation(capacity, kSeed + 31 * uint64_t(rep))) {
        feed.syn(kBase + i, p);
        killed += table.kill(p.key) ? 1 : 0;
    }
    REQUIRE(killed == capacity);
    REQUIRE(table.run_cop(now + kSec, kNoBudget, kNoBudget).wheel.fired == capacity);
    REQUIRE(table.active() == 0);
}

} // namespace flowcop::bench
