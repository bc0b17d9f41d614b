// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The per-lcore side of the event log: a single-producer ring the lcore pushes Events into.
//
// Ownership: a Writer creates and owns its Producers and their rings; a Producer lives exactly as long
// as its Writer. Threading: only the owning lcore calls emit() on a given Producer (single producer);
// only the writer thread dequeues (single consumer). produced() and dropped_full() may be read from any
// thread: they are single-writer fields (stats/relaxed.h): the owner bumps them with a relaxed
// load+store (no read-modify-write atomic, no locked instruction on the hot path) and readers do
// relaxed loads.
// Degraded behaviour: emit() never blocks and never allocates; when the ring is full the event is
// dropped and counted. Invariant: produced() == accepted + dropped_full(), and once the Writer has
// flushed, Writer::stats() satisfies written + dropped_full + dropped_write == produced().
#include <cstdint>

#include <events/event.h>
#include <stats/relaxed.h>

struct rte_ring;

namespace flowcop::events {

class Writer;

class alignas(64) Producer {
public:
    Producer(const Producer&) = delete;
    Producer& operator=(const Producer&) = delete;
    ~Producer();

    // Copies `e` into the ring. @return false (and dropped_full() grows) when the ring is full.
    bool emit(const Event& e) noexcept;

    uint64_t produced() const noexcept { return stats::load_relaxed(_produced); }
    uint64_t dropped_full() const noexcept { return stats::load_relaxed(_dropped_full); }

private:
    friend class Writer;
    Producer() noexcept = default;
    // Allocates and initialises the ring (holds exactly `ring_events`). @return 0 or -errno.
    int init(unsigned index, unsigned ring_events) noexcept;

    // Cache line written by the owning lcore.
    rte_ring* _ring = nullptr;
    uint64_t _produced = 0;
    uint64_t _dropped_full = 0;
    void* _ring_mem = nullptr; // owned; freed by ~Producer

    // Cache line written only by the writer thread, kept apart so the lcore's line never bounces.
    struct alignas(64) Drained {
        rte_ring* ring = nullptr; // copy of _ring, read without touching the lcore's line
        uint64_t written = 0;
        uint64_t dropped_write = 0;
        uint64_t write_errors = 0;
    } _drained;
};

} // namespace flowcop::events
