// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 4: bytes per tracked flow of the real FlowTable, measured two ways:
// FlowTable::memory_bytes() (a DPDK heap-statistics delta across create(), plus the wheel's bucket
// array) and the process RSS delta across create() and filling the table. Each size runs in its own
// process (its own meson benchmark): pages a previous table touched and freed would stay resident
// and hide the next table's cost from the RSS delta.
#include "flow_feed.h"
#include "table_util.h"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace flowcop;
using namespace flowcop::bench;

namespace {

void measure(uint32_t capacity)
{
    provenance("flow table: memory per tracked flow (issue 6 part 4)");
    Feed feed; // allocates its frame before the first RSS sample
    const uint64_t rss0 = rss_bytes();
    const size_t heap0 = rte_heap_allocated();
    auto table = make_table("bench_memory", capacity);
    const uint64_t rss1 = rss_bytes();
    const size_t heap1 = rte_heap_allocated();
    // Every flow opened: the table fills to capacity, or to the first insert its hash refuses
    // (no extendable buckets; a refused SYN would early-drop another unassured flow, which keeps the
    // count but not the flows, so the fill stops at capacity and reports what it holds).
    feed.open(*table, 0, capacity, [](uint32_t i) { return kT0 + uint64_t(i) * 100; });
    const uint64_t tracked = table->active();
    const uint64_t rss2 = rss_bytes();
    const auto& c = table->counters();
    std::printf("  capacity %u, tracked %llu (%.3f%%), refused %llu, early drops %llu\n", capacity,
                (unsigned long long)tracked, 100.0 * double(tracked) / capacity, (unsigned long long)c.tcp_table_full,
                (unsigned long long)c.early_drop_attempts);
    std::printf("  memory_bytes()      %12zu B  %7.2f B per tracked flow  %7.2f B per capacity\n",
                table->memory_bytes(), double(table->memory_bytes()) / double(tracked),
                double(table->memory_bytes()) / capacity);
    std::printf("  DPDK heap delta     %12zu B  (create only; memory_bytes adds the wheel's %u buckets x %u lane heads "
                "x 4 B)\n",
                heap1 - heap0, timerwheel::kDefaultBuckets, timerwheel::kLanes);
    std::printf("  RSS delta, create   %12llu B  %7.2f B per tracked flow\n", (unsigned long long)(rss1 - rss0),
                double(rss1 - rss0) / double(tracked));
    std::printf("  RSS delta, filled   %12llu B  %7.2f B per tracked flow  (RSS %.0f MiB, THP %llu MiB)\n",
                (unsigned long long)(rss2 - rss0), double(rss2 - rss0) / double(tracked),
                double(rss2) / double(1 << 20), (unsigned long long)thp_mib());
    std::fflush(stdout);
    CHECK(tracked >= uint64_t(capacity) * 95 / 100);
    // The RSS cross-check: the pages a full table touches are what it allocated, within 10%.
    CHECK(double(rss2 - rss0) <= 1.10 * double(table->memory_bytes()));
    CHECK(double(rss2 - rss0) >= 0.90 * double(table->memory_bytes()));
}

} // namespace

TEST_CASE("flow table: memory per tracked flow at 10^6 flows", "[!benchmark][table-memory-1e6]")
{
    measure(1'000'000);
}

TEST_CASE("flow table: memory per tracked flow at 10^7 flows", "[!benchmark][table-memory-1e7]")
{
    measure(10'000'000);
}
