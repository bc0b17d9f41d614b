// SPDX-License-Identifier: BSD-3-Clause
// Port setup: reads each probed port's capabilities, asks port_plan.h for the
// ownership plan (RSS over one queue per lcore, or a single owner lcore) and
// configures and starts every port to match it.
#pragma once

#include "options.h"
#include "port_plan.h"

#include <cstdint>
#include <string>

struct rte_mempool;

namespace flowcop::app {

// Configures and starts every probed port (RTE_ETH_FOREACH_DEV) for the lcores EAL
// was given. Returns false with one sentence in `error` (naming the port) on failure,
// and before touching any port if a network --vdev given to EAL did not probe.
bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error);
// Stops and closes every port; safe to call after a partial setup.
void close_ports() noexcept;
// Creates the packet mbuf pool on the calling lcore's socket: `mbufs` mbufs (resolve_mbufs(),
// mbuf_pool.h) of `data_room` bytes each. Returns nullptr with one sentence in `error` on failure;
// when DPDK is out of memory, the sentence says how much the pool needs and names -m, --mbufs and
// --mbuf-data-room.
rte_mempool* create_mbuf_pool(uint64_t mbufs, uint16_t data_room, std::string& error);

} // namespace flowcop::app
