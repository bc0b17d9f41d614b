// SPDX-License-Identifier: BSD-3-Clause
// The expiry designs compared in issue 6 ("Performance") part 3, in the order the tables print them:
// flowcop's wheel first (every ratio is to it), then the baselines. for_each_design(f) calls
// f.template operator()<Design>() for each, so one driver template measures them all alike.
#pragma once

#include "design_heap.h"
#include "design_linked_hash_map.h"
#include "design_lru.h"
#include "design_rte_timer.h"
#include "design_sweep.h"
#include "design_tree.h"
#include "design_wheel.h"

#include "bench_util.h"

#include <chrono>
#include <thread>

namespace flowcop::bench::designs {

template <typename F>
void for_each_design(F&& f)
{
    f.template operator()<WheelDesign>();
    f.template operator()<SweepDesign>();
    f.template operator()<TreeDesign>();
    f.template operator()<HeapDesign>();
    f.template operator()<RteTimerDesign>();
    f.template operator()<LruDesign>();
    f.template operator()<LinkedHashMapDesign>();
}

// The clock a design runs on: virtual designs start at `virtual_start`, rte_timer at the real clock.
template <typename D>
uint64_t start_ns(uint64_t virtual_start)
{
    if constexpr (D::kRealTime)
        return D::clock_ns();
    else
        return virtual_start;
}

// Virtual designs: time is whatever the driver says. Real-time designs: wait for the real clock,
// asleep until 2 ms before (the machine is shared: no seconds of spinning), then spinning so the pass
// starts on time. Returns how late the real clock already was (0 for virtual designs).
template <typename D>
uint64_t wait_until(uint64_t t_ns)
{
    if constexpr (D::kRealTime) {
        uint64_t now = D::clock_ns();
        const uint64_t late = now > t_ns ? now - t_ns : 0;
        if (t_ns > now + 2 * kMs)
            std::this_thread::sleep_for(std::chrono::nanoseconds(t_ns - now - 2 * kMs));
        while (now < t_ns)
            now = D::clock_ns();
        return late;
    } else {
        (void)t_ns;
        return 0;
    }
}

// Opens every slot at t_open, in a random order of its own, then gives flow order[j] one packet at
// last_packet(j), in j order (non-decreasing times). This is what a design's memory looks like after
// real traffic: records, tree nodes and list nodes were allocated in one order and put into deadline
// order by later packets, so the flows coming due together are scattered through memory. Opening
// them in deadline order would line a tree's or a list's nodes up in allocation order, and opening
// them in slot order would line the wheel's buckets up in record order (its first pass re-links the
// flows in the order its opening bucket holds them); either way a pass would read memory
// sequentially, which no real table does. rte_timer re-arms from the real clock on a packet, so it
// opens each flow with its deadline instead (its timers live in the flow records at the permuted
// slots, scattered either way). The wheel's first pass after this must run untimed: it re-links
// every flow from its opening bucket to its true deadline's (lazy rearm).
template <typename D, typename LastPacket>
void arrange(D& d, const std::vector<uint32_t>& order, uint64_t t_open, LastPacket last_packet)
{
    const uint32_t n = uint32_t(order.size());
    if constexpr (D::kRealTime) {
        (void)t_open;
        for (uint32_t j = 0; j < n; ++j)
            d.open(order[j], last_packet(j));
    } else {
        for (uint32_t s : permutation(n, kSeed ^ 0x6f70656eu))
            d.open(s, t_open);
        for (uint32_t j = 0; j < n; ++j)
            d.touch(order[j], last_packet(j));
    }
}

} // namespace flowcop::bench::designs
