// SPDX-License-Identifier: BSD-3-Clause
// The ownership plan: how each port is configured, which lcore polls which of its RX queues, and how
// every flow gets exactly one owner lcore. Pure (no EAL, no device calls): ports.cpp reads the
// devices' capabilities, asks for a plan, configures the ports to match it and, under RSS, programs
// and reads back the hash (rss_config.h); the unit tests give capabilities and check the plan.
//
// Why: each lcore owns its flow table, so both directions of a flow must be tracked by one lcore,
// also when they arrive on two ports (inline pairs, tap pairs) or two queues. One of three plans:
//   - single_lcore: one worker polls every queue of every port and owns every flow (one lcore, or
//     inline mode on a port with a single TX queue).
//   - rss: several workers, and EVERY port can give each worker an RX queue (inline: a TX queue too),
//     takes a Toeplitz key of 40 bytes or more, has a redirection table flowcop can program, and the
//     ports share hash fields for TCP over IPv4 and IPv6. One configuration for all ports: the
//     symmetric key (0x6d5a repeated: hash(a->b) == hash(b->a); every port's key starts with the same
//     40 bytes, all that the longest input uses, so every port computes the same hash), the hash
//     fields every port supports (rss_hf), and a redirection table whose entry j names queue
//     (j mod P) mod W on every port (P the smallest port's table, a divisor of every other's; W the
//     workers). Worker i polls queue i of every port, so a flow hashes to one worker from any port in
//     either direction and no packet is handed off. ports.cpp reads the key, fields and table back
//     after start; a port that did not keep them makes the plan handoff (fall_back_to_handoff).
//     flowcop's own ring-backed port (--flowgen queues=N) declares such a NIC's capabilities
//     (PortCaps::soft_rss) and deals its packets in software as the plan's table says, so the rss
//     plan's packet path runs end to end without a NIC. Under rss the few packets whose RX queue is not
//     their flow's owner's (ICMP errors, hashed on their outer addresses; fragments, hashed on
//     addresses only) are handed to the owner through the handoff rings (rss_owner.h).
//   - handoff: several workers, and some port cannot do the above (no RSS: virtual devices such as
//     af_packet, whose kernel fanout keeps a local socket's own hash; too few queues; a key it will
//     not take; no programmable table; hash fields that differ). Every queue each port delivers
//     packets to is polled, the queues dealt to the workers in turn; each worker computes every
//     packet's owner with a software symmetric hash of its canonical flow key (flow_owner.h) and
//     passes the packets it does not own to their owner through a per-pair ring (handoff.h).
// Every plan polls every RX queue a device brings with it (PortCaps::own_rx_queues: af_packet's
// qpairs, one per pcap rx file, a ring vdev's rings): a device that fans packets out over queues of
// its own keeps doing so whatever flowcop configures, and an unpolled queue would lose them unseen.
// Inline mode forwards what port i receives out of port i^1 (ports in id order), on the TX queue of
// the worker that tracked the packet (worker w uses TX queue w of every port), so no TX queue has two
// writers and a flow's packets leave in the order their owner tracked them.
#pragma once

#include <service/options/options.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowcop::app {

// The Toeplitz key length the symmetric key needs at least: the longest input flowcop hashes (IPv6
// addresses and ports, 36 bytes) reads 36 + 4 key bytes.
inline constexpr uint16_t kMinRssKeyBytes = 40;
// Key bytes flowcop can hold (DPDK's drivers report 40 to 52).
inline constexpr uint16_t kMaxRssKeyBytes = 128;

// What the plan needs to know of a port (the fields of rte_eth_dev_info it reads).
struct PortCaps {
    uint16_t id = 0;
    std::string name;
    uint16_t max_rx_queues = 1;
    uint16_t max_tx_queues = 1;
    uint64_t rss_offloads = 0;  // rte_eth_dev_info::flow_type_rss_offloads
    uint16_t hash_key_size = 0; // bytes; 0 = the key cannot be set
    uint16_t reta_size = 0;     // redirection table entries; 0 = none flowcop can program
    uint16_t own_rx_queues = 0; // RX queues the device created itself at probe (nb_rx_queues before configure)
    // flowcop's own port (--flowgen queues=N, drivers/net/flowgen/rss_dealer.h) deals its packets to its
    // queues by a Toeplitz hash in software, as a NIC does: rss_offloads, hash_key_size and reta_size
    // are what it declares (the ring PMD under it reports none), and the rss plan's key, fields and
    // table are given to it rather than through ethdev (ports.h, SoftRssPort). The plan's rules are the
    // same for it as for a NIC.
    bool soft_rss = false;
};

enum class OwnershipPlan : uint8_t { single_lcore, rss, handoff };
inline constexpr unsigned kOwnershipPlanCount = 3;
const char* plan_name(OwnershipPlan p) noexcept;

// Why the plan is what it is: one value per rule, a stable label of flowcop_ownership_plan_info.
enum class PlanReason : uint8_t {
    one_lcore,         // single_lcore: EAL gave one lcore
    one_tx_queue,      // single_lcore: inline mode, and a port has one TX queue
    symmetric_rss,     // rss: every port takes the one configuration
    no_rss,            // a port has no RSS (virtual devices; af_packet's kernel fanout)
    too_few_queues,    // a port cannot give each worker an RX (inline: and a TX) queue, or brings more of its own
    key_not_settable,  // a port's key is shorter than 40 bytes, or cannot be set
    no_reta,           // a port has no redirection table with an entry per worker
    reta_sizes_differ, // the smallest port's table size does not divide another's
    no_common_fields,  // the ports share no hash of TCP over IPv4 and over IPv6
    rss_not_kept,      // a port read back another key, hash fields or table than flowcop programmed
};
inline constexpr unsigned kPlanReasonCount = 10;
const char* reason_name(PlanReason r) noexcept;

struct RxQueueRef {
    uint16_t port;
    uint16_t queue;
    uint16_t tx_port;  // inline mode: where its packets go (the pair's other port)
    uint16_t tx_queue; // the TX queue of tx_port owned by this worker
};

struct WorkerPlan {
    unsigned lcore;
    uint16_t tx_queue = 0;      // this worker's TX queue on every port (its index in inline mode)
    std::vector<RxQueueRef> rx; // may be empty under handoff: the worker then tracks handed-off packets only
};

// How one port is configured.
struct PortSetup {
    uint16_t id = 0;
    uint16_t rx_queues = 1;
    uint16_t tx_queues = 1;
    bool spread = false;    // RX multi-queue mode RSS (the device's own key and table unless symmetric)
    bool symmetric = false; // the rss plan's key, hash fields and redirection table are programmed
    uint16_t key_bytes = 0; // symmetric: the port's key length
    uint16_t reta_size = 0; // symmetric: the port's table size
    bool soft_rss = false;  // PortCaps::soft_rss: programmed through the port itself, not ethdev
};

struct PortPlan {
    OwnershipPlan kind = OwnershipPlan::single_lcore;
    PlanReason reason = PlanReason::one_lcore;
    std::string why;                 // one sentence: what decided the plan (names the port that did)
    std::vector<WorkerPlan> workers; // workers[0] runs on the main lcore
    std::vector<PortSetup> ports;    // in port id order
    uint64_t rss_hf = 0;             // rss: the hash fields every port uses
    uint16_t reta_period = 0;        // rss: P, the smallest port's redirection table
    std::vector<std::string> warnings;
    std::vector<std::string> port_names; // indexed by port id
    std::vector<uint16_t> peer;          // indexed by port id: where inline mode forwards (itself in monitor mode)

    bool rss() const noexcept { return kind == OwnershipPlan::rss; }
    bool handoff() const noexcept { return kind == OwnershipPlan::handoff; }
    std::string port_name(uint16_t port) const
    {
        return port < port_names.size() && !port_names[port].empty() ? port_names[port] : "port" + std::to_string(port);
    }
    // RX queues over all ports.
    unsigned rx_queues() const noexcept;
};

// The hash fields flowcop asks for: every IPv4 and IPv6 type whose fields come in source/destination
// pairs (addresses, then TCP/UDP ports), so the symmetric key makes them direction-free, and hashed on
// what flowcop keys a flow by: not the SCTP types, whose ports flowcop's key leaves out (SCTP is keyed
// by addresses, as other protocols are, lib/packet), so a NIC hashing them would spread one flow's
// associations over several lcores; without them a port hashes SCTP by its addresses. Not the IPv6 *_EX
// types (a home address option is in one direction only), L2 or tunnel fields.
uint64_t wanted_rss_fields() noexcept;

// Why `port` cannot take part in the rss plan over `workers` workers (PlanReason::symmetric_rss if it can).
PlanReason rss_blocker(const PortCaps& port, unsigned workers, Mode mode) noexcept;

// Fills `plan` for these ports (in id order) and lcores (the main lcore first). Returns false with
// one sentence in `error` when no plan is possible: no ports, no lcores, or an odd number of ports in
// inline mode.
bool plan_ports(const std::vector<PortCaps>& ports, const std::vector<unsigned>& lcores, Mode mode, PortPlan& plan,
                std::string& error);

// The rss plan could not be kept (a port read back another configuration): the same queues, each
// worker still polling queue i of every port, and the handoff decides the owners. `why` names the port.
void fall_back_to_handoff(PortPlan& plan, PlanReason reason, std::string why);

// The symmetric Toeplitz key: 0x6d5a repeated over `len` bytes.
void symmetric_key(uint8_t* key, size_t len) noexcept;
// The rss plan's redirection table for a port with `reta_size` entries: entry j -> queue.
std::vector<uint16_t> redirection_table(const PortPlan& plan, uint16_t reta_size);

} // namespace flowcop::app
