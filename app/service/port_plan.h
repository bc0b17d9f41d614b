// SPDX-License-Identifier: BSD-3-Clause
// The ownership plan: which lcore polls which RX queue of which port. Pure (no EAL,
// no device calls), so the rule is unit tested without a NIC; ports.cpp reads the
// devices' capabilities, asks for a plan and configures the ports to match it.
//
// The rule: both directions of a flow reach the same lcore, because each lcore owns
// its flow table — two owners of one flow would track it twice and expire it wrongly.
//   - RSS, when there is more than one lcore and EVERY port can give each lcore its
//     own RX and TX queue and hash IP/TCP with a 40..64-byte Toeplitz key: lcore i
//     polls queue i of every port, and the symmetric key (0x6d5a repeated, so
//     hash(a->b) == hash(b->a)) sends both directions of a flow to the same i;
//   - single owner otherwise (DPDK's virtual devices — pcap, af_packet, ring, null —
//     and NICs without IP/TCP RSS or with too few queues): every port gets one RX
//     queue and the first lcore polls them all, with a warning naming the port that
//     forced it and saying the other lcores stay idle. Correct first, then fast.
// Inline mode forwards what port i receives out of port i^1 (ports in id order),
// through the TX queue of the receiving lcore, so no TX queue is shared.
#pragma once

#include "options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::app {

// What the plan needs to know of a port (the fields of rte_eth_dev_info it reads).
struct PortCaps {
    uint16_t id = 0;
    std::string name;
    uint16_t max_rx_queues = 1;
    uint16_t max_tx_queues = 1;
    uint64_t rss_offloads = 0; // rte_eth_dev_info::flow_type_rss_offloads
    uint8_t hash_key_size = 0; // bytes; 0 = no RSS key
};

struct RxQueueRef {
    uint16_t port;
    uint16_t queue;
    uint16_t tx_port;  // inline mode: where its packets go (the pair's other port)
    uint16_t tx_queue; // the TX queue of tx_port owned by this lcore
};

struct WorkerPlan {
    unsigned lcore;
    std::vector<RxQueueRef> rx;
};

struct PortPlan {
    std::vector<WorkerPlan> workers; // workers[0] runs on the main lcore
    bool rss = false;
    uint16_t queues_per_port = 1; // RX and TX queues each port is configured with
    std::vector<std::string> warnings;
    std::vector<std::string> port_names; // indexed by port id
    std::string port_name(uint16_t port) const
    {
        return port < port_names.size() && !port_names[port].empty() ? port_names[port] : "port" + std::to_string(port);
    }
};

// True if the port can give each of `lcores` lcores a queue and hash flows symmetrically.
bool can_rss(const PortCaps& port, unsigned lcores) noexcept;

// Fills `plan` for these ports (in id order) and lcores (the main lcore first). Returns
// false with one sentence in `error` when no plan is possible: no ports, or an odd
// number of ports in inline mode.
bool plan_ports(const std::vector<PortCaps>& ports, const std::vector<unsigned>& lcores, Mode mode, PortPlan& plan,
                std::string& error);

} // namespace flowcop::app
