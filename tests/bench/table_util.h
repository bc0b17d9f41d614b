// SPDX-License-Identifier: BSD-3-Clause
// Pieces shared by the benchmarks that drive the real FlowTable: a table with flowcop's default
// wheel and timeouts, the virtual clock's origin, and the timeout a SYN-only flow gets.
#pragma once

#include "bench_util.h"

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

// A table of `capacity` flows with flowcop's defaults (4096 one-second buckets, netfilter timeouts).
inline std::unique_ptr<conntrack::FlowTable> make_table(const std::string& name, uint32_t capacity)
{
    conntrack::TableConfig cfg;
    cfg.name = name;
    cfg.capacity = capacity;
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

} // namespace flowcop::bench
