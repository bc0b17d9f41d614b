// SPDX-License-Identifier: BSD-3-Clause
// Port setup: reads each probed port's capabilities, asks port_plan.h for the ownership plan
// (symmetric RSS, handoff or a single lcore), configures and starts every port to match it and,
// under RSS, programs the redirection table and reads the key, hash fields and table back
// (rss_config.h), falling back to the handoff plan when a port did not keep them. Control plane
// only (the main thread, before the workers start).
#pragma once

#include "port_plan.h"
#include <service/options/options.h>

#include <cstdint>
#include <string>
#include <vector>

struct rte_mempool;

namespace flowcop::app {

// The capabilities of every probed port (RTE_ETH_FOREACH_DEV), in id order. Returns false with one
// sentence in `error` if a network --vdev given to EAL did not probe, or a port cannot say.
bool read_port_caps(std::vector<PortCaps>& caps, std::string& error);
// EAL's lcores, the main lcore first: the lcores the plan is made for.
std::vector<unsigned> eal_lcores();
// The mbufs the plan these ports and lcores will get needs beyond mbufs_minimum() (mbuf_pool.h): the
// handoff rings full, and the RX queues a device brings beyond one per lcore. `flowgen`: the
// synthetic port will be added (one queue, no RSS). Sets `error` only if a port cannot be read.
uint64_t planned_extra_mbufs(const Options& opt, bool flowgen, unsigned lcores, std::string& error);
// Configures and starts every probed port for the lcores EAL was given. Returns false with one
// sentence in `error` (naming the port) on failure, and before touching any port if a network
// --vdev given to EAL did not probe.
bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error);
// Programs the rss plan's redirection table on a started port and reads key, hash fields and table
// back: "" when the port kept them all, otherwise what it did not keep (rss_mismatch()).
std::string program_rss(const PortPlan& plan, const PortSetup& port);
// Stops and closes every port; safe to call after a partial setup.
void close_ports() noexcept;
// Creates the packet mbuf pool on the calling lcore's socket: `mbufs` mbufs (resolve_mbufs(),
// mbuf_pool.h) of `data_room` bytes each. Returns nullptr with one sentence in `error` on failure;
// when DPDK is out of memory, the sentence says how much the pool needs and names -m, --mbufs and
// --mbuf-data-room.
rte_mempool* create_mbuf_pool(uint64_t mbufs, uint16_t data_room, std::string& error);

} // namespace flowcop::app
