// SPDX-License-Identifier: BSD-3-Clause
#include "handoff.h"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>

namespace flowcop::app {

unsigned HandoffRings::ring_capacity(unsigned workers) noexcept
{
    return workers < 2 ? 0 : std::max(kMinRingCapacity, kBacklogPerOwner / (workers - 1));
}

uint64_t HandoffRings::mbufs_held(unsigned workers) noexcept
{
    return workers < 2 ? 0 : uint64_t(workers) * (workers - 1) * ring_capacity(workers);
}

std::unique_ptr<HandoffRings> HandoffRings::create(const std::vector<int>& sockets, std::string& error)
{
    std::unique_ptr<HandoffRings> h(new HandoffRings());
    h->_workers = unsigned(sockets.size());
    h->_capacity = ring_capacity(h->_workers);
    h->_rings.assign(size_t(h->_workers) * h->_workers, nullptr);
    for (unsigned from = 0; from < h->_workers; ++from)
        for (unsigned to = 0; to < h->_workers; ++to) {
            if (from == to)
                continue;
            const std::string name = "flowcop_ho" + std::to_string(from) + "_" + std::to_string(to);
            rte_ring* r = rte_ring_create(name.c_str(), h->_capacity, sockets[to],
                                          RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
            if (r == nullptr) {
                error = "cannot create the handoff ring from worker " + std::to_string(from) + " to worker " +
                        std::to_string(to) + " (" + std::to_string(h->_capacity) +
                        " packets): " + rte_strerror(rte_errno);
                return nullptr;
            }
            h->_rings[from * h->_workers + to] = r;
        }
    return h;
}

HandoffRings::~HandoffRings()
{
    for (rte_ring* r : _rings) {
        if (r == nullptr)
            continue;
        void* objs[64];
        unsigned n;
        while ((n = rte_ring_dequeue_burst(r, objs, 64, nullptr)) != 0)
            for (unsigned i = 0; i < n; ++i)
                if (!is_time_mark(objs[i]))
                    rte_pktmbuf_free(static_cast<rte_mbuf*>(objs[i]));
        rte_ring_free(r);
    }
}

} // namespace flowcop::app
