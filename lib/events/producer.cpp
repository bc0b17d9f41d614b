// SPDX-License-Identifier: BSD-3-Clause
// The lcore side: ring set-up on our own memory (no EAL, no memzone) and the non-blocking emit().
#include <events/producer.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace flowcop::events {
namespace {

constexpr unsigned kRingFlags = RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ;

uint32_t next_pow2(uint32_t v) noexcept
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

} // namespace

int Producer::init(unsigned index, unsigned ring_events) noexcept
{
    // RING_F_EXACT_SZ makes the ring hold exactly ring_events, but its slot array is the next power of
    // two above ring_events; size the memory for that, as rte_ring_create_elem() does.
    const ssize_t bytes = rte_ring_get_memsize_elem(sizeof(Event), next_pow2(ring_events + 1));
    if (bytes < 0)
        return static_cast<int>(bytes);
    const size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64; // aligned_alloc wants a multiple
    void* mem = std::aligned_alloc(64, rounded);
    if (mem == nullptr)
        return -ENOMEM;
    char name[32];
    std::snprintf(name, sizeof name, "flowcop_events_%u", index);
    auto* ring = static_cast<rte_ring*>(mem);
    const int rc = rte_ring_init(ring, name, ring_events, kRingFlags);
    if (rc < 0) {
        std::free(mem);
        return rc;
    }
    _ring_mem = mem;
    _ring = ring;
    _drained.ring = ring;
    return 0;
}

Producer::~Producer()
{
    std::free(_ring_mem);
}

bool Producer::emit(const Event& e) noexcept
{
    stats::bump(_produced);
    // The ring API takes a non-const pointer but only reads the object on enqueue.
    if (rte_ring_sp_enqueue_elem(_ring, const_cast<Event*>(&e), sizeof(Event)) == 0)
        return true;
    stats::bump(_dropped_full);
    return false;
}

} // namespace flowcop::events
