// SPDX-License-Identifier: BSD-3-Clause
// Port setup: reads each probed port's capabilities, asks port_plan.h for the ownership plan
// (symmetric RSS, handoff or a single lcore), configures and starts every port to match it and,
// under RSS, programs the redirection table and reads the key, hash fields and table back
// (rss_config.h), falling back to the handoff plan when a port did not keep them. Control plane
// only (the main thread, before the workers start).
#pragma once

#include "port_plan.h"
#include "rss_config.h"
#include <service/options/options.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct rte_mempool;

namespace flowcop::app {

// A port of flowcop's own that deals its packets to its RX queues in software (PortCaps::soft_rss:
// --flowgen queues=N, drivers/net/flowgen/rss_dealer.h): the capabilities it declares in place of the
// ring PMD's, and how the rss plan's configuration reaches it and is read back.
struct SoftRssPort {
    PortCaps caps; // id, queues and the RSS it declares; soft_rss set
    std::function<std::string(const uint8_t* key, uint16_t key_len, uint64_t hash_fields,
                              const std::vector<uint16_t>& table)>
        program;
    std::function<RssReadback()> read_back;
};

// The capabilities of every probed port (RTE_ETH_FOREACH_DEV), in id order; `soft`'s port (if any) with
// the capabilities it declares. Returns false with one sentence in `error` if a network --vdev given to
// EAL did not probe, or a port cannot say.
bool read_port_caps(std::vector<PortCaps>& caps, std::string& error, const SoftRssPort* soft = nullptr);
// EAL's lcores, the main lcore first: the lcores the plan is made for.
std::vector<unsigned> eal_lcores();
// The mbufs the plan these ports and lcores will get needs beyond mbufs_minimum() (mbuf_pool.h): the
// handoff rings full (under the handoff and rss plans), and the RX queues a device brings beyond one
// per lcore. `flowgen`: the capabilities of the synthetic port that will be added (its id is the next
// one). Sets `error` only if a port cannot be read.
uint64_t planned_extra_mbufs(const Options& opt, const PortCaps* flowgen, unsigned lcores, std::string& error);
// Configures and starts every probed port for the lcores EAL was given. Returns false with one
// sentence in `error` (naming the port) on failure, and before touching any port if a network
// --vdev given to EAL did not probe.
bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error,
                 const SoftRssPort* soft = nullptr);
// Programs the rss plan's redirection table on a started port (on `soft` when the port deals in
// software) and reads key, hash fields and table back: "" when the port kept them all, otherwise what
// it did not keep (rss_mismatch()).
std::string program_rss(const PortPlan& plan, const PortSetup& port, const SoftRssPort* soft = nullptr);
// Stops and closes every port; safe to call after a partial setup.
void close_ports() noexcept;
// Creates the packet mbuf pool on the calling lcore's socket: `mbufs` mbufs (resolve_mbufs(),
// mbuf_pool.h) of `data_room` bytes each. Returns nullptr with one sentence in `error` on failure;
// when DPDK is out of memory, the sentence says how much the pool needs and names -m, --mbufs and
// --mbuf-data-room.
rte_mempool* create_mbuf_pool(uint64_t mbufs, uint16_t data_room, std::string& error);

} // namespace flowcop::app
