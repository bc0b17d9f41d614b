// SPDX-License-Identifier: BSD-3-Clause
// Issue 6 ("Performance") part 3, memory per flow of each expiry design, measured: malloc's in-use bytes
// (mallinfo2: small chunks with their headers, plus mmap()ed blocks) and the process RSS, each as a
// delta across building the design and opening 10^6 flows, divided by the flows. malloc_trim() runs
// between designs so the RSS delta of one is not hidden by pages another freed. rte_timer's
// per-lcore subsystem data is a fixed memzone (DPDK heap), reported once, not per flow.
#include "designs.h"

#include <catch2/catch.hpp>

#include <rte_malloc.h>

#include <cstdio>
#include <memory>

using namespace flowcop::bench;
using namespace flowcop::bench::designs;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint64_t kTimeout = 100 * kSec;

size_t rte_heap()
{
    rte_malloc_socket_stats st{};
    return rte_malloc_get_socket_stats(int(rte_socket_id()), &st) == 0 ? st.heap_allocsz_bytes : 0;
}

template <typename D>
void memory_per_flow(double& wheel_b)
{
    malloc_trim(0);
    const uint64_t m0 = malloc_in_use(), r0 = rss_bytes();
    const size_t h0 = rte_heap();
    uint64_t m1 = 0, r1 = 0;
    size_t h1 = 0;
    {
        const uint64_t t0 = start_ns<D>(1'700'000'000ull * kSec);
        auto d = std::make_unique<D>(kFlows, kTimeout, t0);
        uint64_t now = t0;
        for (uint32_t s = 0; s < kFlows; ++s)
            d->open(s, now += 100);
        m1 = malloc_in_use();
        r1 = rss_bytes();
        h1 = rte_heap();
    }
    const double b = double(m1 - m0) / kFlows;
    if (wheel_b == 0)
        wheel_b = b;
    std::printf("  %-26s %10.1f %8.2fx %10.1f %10.1f\n", D::kName, b, b / wheel_b, double(r1 - r0) / kFlows,
                double(h1 - h0) / kFlows);
    std::fflush(stdout);
    CHECK(m1 > m0);
}

} // namespace

TEST_CASE("expiry designs: memory per flow with 10^6 flows open", "[!benchmark][designs-memory]")
{
    provenance("expiry designs: memory per flow, 10^6 open flows, measured (issue 6 part 3)");
    const size_t h0 = rte_heap();
    const int rc = rte_timer_subsystem_init();
    std::printf("  rte_timer_subsystem_init: %zu bytes of DPDK heap once per process (rc %d)\n", rte_heap() - h0, rc);
    std::printf("  bytes per flow: malloc in use (mallinfo2 uordblks + hblkhd), RSS, DPDK heap; payload %zu B in "
                "every design\n",
                sizeof(Meta) + sizeof(Payload));
    std::printf("  %-26s %10s %9s %10s %10s\n", "design", "malloc B", "vs wheel", "RSS B", "rte heap B");
    double wheel_b = 0;
    for_each_design([&]<typename D>() { memory_per_flow<D>(wheel_b); });
}
