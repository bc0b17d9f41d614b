// SPDX-License-Identifier: BSD-3-Clause
// The handoff rings of the handoff plan (port_plan.h): one rte_ring per ordered pair of workers
// (from -> to), single producer and single consumer, carrying mbuf pointers of packets whose flow the
// receiving worker does not own (flow_owner.h). VPP's worker handoff queues are the model: a packet
// changes core once, in bursts, and the owner tracks it as if it had received it.
//
// Ownership and threading: the service creates the rings before the workers and destroys them after
// every worker has returned. Worker `from` alone enqueues on ring(from, to) and worker `to` alone
// dequeues it (the SP/SC ring flags make both lock-free and free of atomics the two share beyond the
// ring's own head and tail). A full ring drops the packets that do not fit: the producer frees and
// counts them (WorkerStats::handoff_dropped) rather than wait for a busy owner, so one slow worker
// cannot stall the others' RX (a NIC cannot wait) -- except a replay from a file, which waits (below).
//
// Time marks (--clock packet): besides mbufs a ring carries the sender's packet time, as a tagged
// entry (time_mark(): the time shifted left, low bit set; an mbuf pointer is never odd), placed in order
// between the packets, so the receiving worker sees the replay's timeline as the sender read it and its
// cop runs where that timeline crosses a check instant, even for packets another worker tracked
// (dataplane/clock.h, worker.h). A mark goes to a worker once per distinct time the sender read that it
// has not told it yet; marks are not packets and are never counted as such.
//
// Waiting (--clock packet, a port that reads a file): a full ring holds the sender back rather than
// dropping; while it waits it keeps taking from the rings that feed it, so two workers each waiting on
// the other cannot deadlock, and it stops waiting (drops and counts) once the service is stopping.
//
// Capacity: each worker can have kBacklogPerOwner packets waiting for it in all, split over the rings
// that feed it (never fewer than kMinRingCapacity per ring); the mbuf pool is made bigger by
// mbufs_held() so that packets waiting here never starve RX of mbufs (mbuf_pool.h).
//
// Stopping without loss: each worker calls rx_stopped() after its last RX burst and keeps taking from
// its rings until all_rx_stopped(); nobody enqueues after that, so one more pass empties the rings and
// every packet received was tracked. The destructor frees whatever is still in a ring (only after a
// worker failed to stop in time).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rte_ring;

namespace flowcop::app {

// A ring entry carrying a packet time instead of an mbuf (see the contract).
inline void* time_mark(uint64_t ns) noexcept
{
    return reinterpret_cast<void*>((uintptr_t(ns) << 1) | 1u);
}
inline bool is_time_mark(const void* entry) noexcept
{
    return (reinterpret_cast<uintptr_t>(entry) & 1u) != 0;
}
inline uint64_t time_of_mark(const void* entry) noexcept
{
    return uint64_t(reinterpret_cast<uintptr_t>(entry) >> 1);
}

class HandoffRings {
public:
    static constexpr unsigned kBacklogPerOwner = 2048;
    static constexpr unsigned kMinRingCapacity = 256;

    // Packets one ring holds with `workers` workers.
    static unsigned ring_capacity(unsigned workers) noexcept;
    // Mbufs the rings of `workers` workers can hold at once (0 for one worker).
    static uint64_t mbufs_held(unsigned workers) noexcept;

    // Creates workers x (workers - 1) rings; ring(from, to) on the NUMA socket of `sockets[to]`.
    // Returns nullptr with one sentence in `error` on failure.
    static std::unique_ptr<HandoffRings> create(const std::vector<int>& sockets, std::string& error);
    ~HandoffRings();
    HandoffRings(const HandoffRings&) = delete;
    HandoffRings& operator=(const HandoffRings&) = delete;

    unsigned workers() const noexcept { return _workers; }
    unsigned capacity() const noexcept { return _capacity; }
    rte_ring* ring(unsigned from, unsigned to) const noexcept { return _rings[from * _workers + to]; }

    // Shutdown (see above); any thread, called once per worker.
    void rx_stopped() noexcept { _stopped.fetch_add(1, std::memory_order_acq_rel); }
    bool all_rx_stopped() const noexcept { return _stopped.load(std::memory_order_acquire) >= _workers; }

private:
    HandoffRings() = default;
    unsigned _workers = 0;
    unsigned _capacity = 0;
    std::vector<rte_ring*> _rings; // [from * workers + to]; nullptr on the diagonal
    alignas(64) std::atomic<unsigned> _stopped{0};
};

} // namespace flowcop::app
