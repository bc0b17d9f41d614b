// SPDX-License-Identifier: BSD-3-Clause
// Port setup and the ownership plan: which lcore polls which RX queue.
//
// The rule that matters: both directions of a flow must reach the same lcore,
// because each lcore owns its flow table — two owners of one flow would track
// it twice and expire it wrongly. Two layouts satisfy it:
//   - RSS: every port can spread RX over one queue per lcore with a symmetric
//     Toeplitz key (0x6d5a repeated: hash(a->b) == hash(b->a)), so lcore i
//     polls queue i of every port and a flow's both directions hash to i;
//   - single owner: if any port cannot (DPDK virtual devices — pcap, af_packet,
//     ring, null — and NICs without IP/TCP RSS or with too few queues), every
//     port gets one RX queue and ONE lcore polls them all. Other lcores stay
//     idle; a warning says so. Correct first, then fast.
// Inline mode forwards what the i-th port receives out of the (i^1)-th, through the TX
// queue reserved for the receiving lcore on that port (no TX queue is shared).
#pragma once

#include "options.h"

#include <cstdint>
#include <string>
#include <vector>

struct rte_mempool;

namespace flowcop::app {

struct RxQueueRef {
    uint16_t port;
    uint16_t queue;
    uint16_t tx_port;   // inline mode: where its packets go (the pair's other port)
    uint16_t tx_queue;  // the TX queue of tx_port owned by this lcore
};

struct WorkerPlan {
    unsigned lcore;
    std::vector<RxQueueRef> rx;
};

struct PortPlan {
    std::vector<WorkerPlan> workers;  // workers[0] runs on the main lcore
    bool rss = false;
    std::vector<std::string> warnings;
    std::vector<std::string> port_names; // indexed by port id
    std::string port_name(uint16_t port) const
    {
        return port < port_names.size() && !port_names[port].empty() ? port_names[port] : "port" + std::to_string(port);
    }
};

// Configures and starts every probed port (RTE_ETH_FOREACH_DEV) for the lcores EAL
// was given. Returns false with one sentence in `error` (naming the port) on failure.
bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error);
// Stops and closes every port; safe to call after a partial setup.
void close_ports() noexcept;
// How many mbufs the pool needs for this many ports and lcores.
unsigned mbufs_needed(unsigned ports, unsigned lcores) noexcept;

} // namespace flowcop::app
