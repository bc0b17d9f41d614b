// SPDX-License-Identifier: BSD-3-Clause
// The lcore side: the non-blocking fan-out of one Event to its subscribers' rings.
#include <events/producer.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

namespace flowcop::events {

bool Producer::emit(const Event& e) noexcept
{
    const KindMask bit = kind_bit(e.kind);
    bool accepted = true;
    for (unsigned i = 0; i < _n_slots; ++i) {
        Slot& s = _slots[i];
        if ((stats::load_relaxed(s.kinds) & bit) == 0 || !s.protos.has(e.proto))
            continue;
        stats::bump(s.offered);
        // The ring API takes a non-const pointer but only reads the object on enqueue.
        if (rte_ring_sp_enqueue_elem(s.ring, const_cast<Event*>(&e), sizeof(Event)) != 0) {
            stats::bump(s.dropped_full);
            accepted = false;
        }
    }
    return accepted;
}

} // namespace flowcop::events
