// SPDX-License-Identifier: BSD-3-Clause
// The worker's half of the handoff plan (port_plan.h, handoff.h): passing the packets of flows another
// worker owns to it, and tracking the packets other workers passed here.
#include "worker.h"
#include <service/plan/flow_owner.h>

#include <stats/relaxed.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

namespace flowcop::app {

using stats::bump;

uint16_t Worker::hand_off(rte_mbuf** mbufs, packet::Packet** ptrs, uint16_t n, uint16_t rx_port) noexcept
{
    const unsigned me = _place.index;
    const unsigned workers = _place.handoff->workers();
    uint16_t local = 0;
    bool staged = false;
    for (uint16_t i = 0; i < n; ++i) {
        const packet::Packet& p = *ptrs[i];
        // A frame without an IP header has no flow to keep together: it stays where it arrived.
        const unsigned owner = p.ip_version == 0 ? me : flow_owner(p.key, _place.owner_seed, workers);
        if (owner == me) {
            mbufs[local] = mbufs[i];
            ptrs[local] = ptrs[i];
            ++local;
            continue;
        }
        mbufs[i]->port = rx_port; // some PMDs (net_ring) leave it unset; the owner forwards by it
        _outbox[owner * kBurst + _outbox_size[owner]++] = mbufs[i];
        staged = true;
    }
    if (!staged)
        return local;
    // One enqueue per owner per burst. Packets of one flow keep their order: they all go to one ring.
    for (unsigned o = 0; o < workers; ++o) {
        const unsigned k = _outbox_size[o];
        if (k == 0)
            continue;
        _outbox_size[o] = 0;
        rte_mbuf** out = &_outbox[o * kBurst];
        const unsigned put =
            rte_ring_enqueue_burst(_place.handoff->ring(me, o), reinterpret_cast<void* const*>(out), k, nullptr);
        bump(_stats.handed_off, uint64_t(put));
        if (put < k) {
            bump(_stats.handoff_dropped, uint64_t(k - put));
            rte_pktmbuf_free_bulk(out + put, k - put);
        }
    }
    return local;
}

void Worker::take_handoffs(uint64_t tsc) noexcept
{
    const unsigned me = _place.index;
    const unsigned workers = _place.handoff->workers();
    for (unsigned from = 0; from < workers; ++from) {
        if (from == me)
            continue;
        rte_mbuf* mbufs[kBurst];
        const unsigned n =
            rte_ring_dequeue_burst(_place.handoff->ring(from, me), reinterpret_cast<void**>(mbufs), kBurst, nullptr);
        if (n == 0)
            continue;
        bump(_stats.handoff_received, uint64_t(n));
        handle(mbufs, uint16_t(n), tsc, nullptr);
    }
}

void Worker::finish_handoffs() noexcept
{
    // This worker receives nothing more; the others may still be handing packets here until they stop too.
    _place.handoff->rx_stopped();
    const uint64_t give_up = rte_rdtsc() + 2 * _clock.hz();
    while (!_place.handoff->all_rx_stopped() && rte_rdtsc() < give_up)
        take_handoffs(rte_rdtsc());
    // Nobody enqueues any more: empty what is left (a ring holds a bounded number of bursts).
    const unsigned passes = _place.handoff->capacity() / kBurst + 1;
    for (unsigned i = 0; i < passes; ++i)
        take_handoffs(rte_rdtsc());
}

} // namespace flowcop::app
