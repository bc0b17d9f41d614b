// SPDX-License-Identifier: BSD-3-Clause
#include "port_plan.h"

#include <rte_ethdev.h> // RTE_ETH_RSS_* flags only

#include <algorithm>
#include <cstdio>

namespace flowcop::app {

namespace {

constexpr uint64_t kIpv4Tcp = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP;
constexpr uint64_t kIpv6Tcp = RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP;

std::string port_label(const PortCaps& p)
{
    return "port " + std::to_string(p.id) + " (" + p.name + ")";
}

std::string hex(uint64_t v)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// What keeps `p` out of the rss plan, as the middle of a sentence that starts with its label.
std::string blocker_detail(PlanReason r, const PortCaps& p, unsigned workers)
{
    const std::string w = std::to_string(workers);
    switch (r) {
    case PlanReason::no_rss:
        if (p.soft_rss)
            return "has no RSS flowcop can make symmetric (it deals its packets to " + std::to_string(p.own_rx_queues) +
                   " queue(s): --flowgen takes queues=" + w + ")";
        return "has no RSS flowcop can make symmetric (a virtual device: af_packet spreads packets by the kernel's "
               "fanout hash, which keeps a local socket's own hash)";
    case PlanReason::too_few_queues:
        return "has " + std::to_string(p.max_rx_queues) + " RX and " + std::to_string(p.max_tx_queues) +
               " TX queue(s), " + std::to_string(p.own_rx_queues) + " of them its own, not one for each of " + w +
               " workers";
    case PlanReason::key_not_settable:
        return p.hash_key_size == 0 ? "does not say how long its hash key is, so flowcop cannot set the symmetric key"
                                    : "takes a " + std::to_string(p.hash_key_size) +
                                          "-byte hash key, shorter than the symmetric key's 40 bytes";
    case PlanReason::no_reta:
        return "has " + std::to_string(p.reta_size) +
               " redirection table entries flowcop can program, fewer than its " + w + " workers";
    default: return "cannot take the symmetric RSS configuration";
    }
}

PortSetup setup_for(const PortCaps& p, OwnershipPlan kind, unsigned workers, Mode mode)
{
    PortSetup s;
    s.id = p.id;
    const uint16_t w = uint16_t(workers);
    s.tx_queues = mode == Mode::inline_fwd ? w : 1;
    switch (kind) {
    case OwnershipPlan::single_lcore: s.rx_queues = std::max<uint16_t>(1, p.own_rx_queues); break;
    case OwnershipPlan::rss:
        s.rx_queues = w;
        s.symmetric = true;
        s.spread = !p.soft_rss; // a port that deals in software is configured as the plain ring device it is
        s.key_bytes = p.hash_key_size;
        s.reta_size = p.reta_size;
        s.soft_rss = p.soft_rss;
        break;
    case OwnershipPlan::handoff:
        if (p.own_rx_queues > 0) {
            s.rx_queues = p.own_rx_queues;
        } else if ((p.rss_offloads & wanted_rss_fields()) != 0 && p.max_rx_queues > 1) {
            // Any spread helps: the handoff, not the device's hash, decides the owners.
            s.rx_queues = std::min(w, p.max_rx_queues);
            s.spread = true;
        }
        break;
    }
    return s;
}

} // namespace

const char* plan_name(OwnershipPlan p) noexcept
{
    switch (p) {
    case OwnershipPlan::single_lcore: return "single_lcore";
    case OwnershipPlan::rss: return "rss";
    case OwnershipPlan::handoff: return "handoff";
    }
    return "?";
}

const char* reason_name(PlanReason r) noexcept
{
    switch (r) {
    case PlanReason::one_lcore: return "one_lcore";
    case PlanReason::one_tx_queue: return "one_tx_queue";
    case PlanReason::symmetric_rss: return "symmetric_rss";
    case PlanReason::no_rss: return "no_rss";
    case PlanReason::too_few_queues: return "too_few_queues";
    case PlanReason::key_not_settable: return "key_not_settable";
    case PlanReason::no_reta: return "no_reta";
    case PlanReason::reta_sizes_differ: return "reta_sizes_differ";
    case PlanReason::no_common_fields: return "no_common_fields";
    case PlanReason::rss_not_kept: return "rss_not_kept";
    }
    return "?";
}

unsigned PortPlan::rx_queues() const noexcept
{
    unsigned n = 0;
    for (const PortSetup& p : ports)
        n += p.rx_queues;
    return n;
}

uint64_t wanted_rss_fields() noexcept
{
    return RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
           RTE_ETH_RSS_NONFRAG_IPV4_OTHER | RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP |
           RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_NONFRAG_IPV6_OTHER;
}

PlanReason rss_blocker(const PortCaps& p, unsigned workers, Mode mode) noexcept
{
    if ((p.rss_offloads & wanted_rss_fields()) == 0)
        return PlanReason::no_rss;
    if (p.max_rx_queues < workers || (mode == Mode::inline_fwd && p.max_tx_queues < workers) ||
        p.own_rx_queues > workers)
        return PlanReason::too_few_queues;
    if (p.hash_key_size < kMinRssKeyBytes || p.hash_key_size > kMaxRssKeyBytes)
        return PlanReason::key_not_settable;
    if (p.reta_size < workers)
        return PlanReason::no_reta;
    return PlanReason::symmetric_rss;
}

bool plan_ports(const std::vector<PortCaps>& ports, const std::vector<unsigned>& lcores, Mode mode, PortPlan& plan,
                std::string& error)
{
    if (ports.empty()) {
        error = "no ports: give EAL a NIC (-a PCI) or a virtual device, e.g. "
                "--vdev=net_pcap0,rx_pcap=FILE.pcap, or use --flowgen";
        return false;
    }
    if (mode == Mode::inline_fwd && ports.size() % 2 != 0) {
        error = "--mode inline forwards between port pairs (0<->1, 2<->3, ...) but " + std::to_string(ports.size()) +
                " port(s) were found";
        return false;
    }
    if (lcores.empty()) {
        error = "no lcores to poll the ports";
        return false;
    }
    plan = PortPlan{};
    for (size_t i = 0; i < ports.size(); ++i) {
        const uint16_t id = ports[i].id;
        if (plan.port_names.size() <= id) {
            plan.port_names.resize(id + 1u);
            plan.peer.resize(id + 1u, id);
        }
        plan.port_names[id] = ports[i].name;
        plan.peer[id] = mode == Mode::inline_fwd ? ports[i ^ 1].id : id;
    }

    // Inline mode: each worker forwards on a TX queue of its own on every port.
    unsigned workers = unsigned(lcores.size());
    const PortCaps* tx_limit = nullptr;
    if (mode == Mode::inline_fwd)
        for (const PortCaps& p : ports)
            if (p.max_tx_queues < workers) {
                workers = std::max<unsigned>(1, p.max_tx_queues);
                tx_limit = &p;
            }
    if (tx_limit != nullptr) {
        std::string idle;
        for (size_t i = workers; i < lcores.size(); ++i)
            idle += (idle.empty() ? "" : ", ") + std::to_string(lcores[i]);
        plan.warnings.push_back(port_label(*tx_limit) + " has " + std::to_string(tx_limit->max_tx_queues) +
                                " TX queue(s): inline mode runs " + std::to_string(workers) +
                                " worker(s), each forwarding on a TX queue of its own, and lcore(s) " + idle +
                                " stay idle");
    }

    if (workers == 1) {
        plan.kind = OwnershipPlan::single_lcore;
        plan.reason = lcores.size() == 1 ? PlanReason::one_lcore : PlanReason::one_tx_queue;
        plan.why = "lcore " + std::to_string(lcores[0]) + " polls every queue of every port and owns every flow";
    } else {
        plan.kind = OwnershipPlan::rss;
        plan.reason = PlanReason::symmetric_rss;
        for (const PortCaps& p : ports)
            if (const PlanReason r = rss_blocker(p, workers, mode); r != PlanReason::symmetric_rss) {
                plan.kind = OwnershipPlan::handoff;
                plan.reason = r;
                plan.why = port_label(p) + " " + blocker_detail(r, p, workers);
                break;
            }
        if (plan.rss()) {
            plan.rss_hf = wanted_rss_fields();
            plan.reta_period = ports[0].reta_size;
            for (const PortCaps& p : ports) {
                plan.rss_hf &= p.rss_offloads;
                plan.reta_period = std::min(plan.reta_period, p.reta_size);
            }
            if ((plan.rss_hf & kIpv4Tcp) == 0 || (plan.rss_hf & kIpv6Tcp) == 0) {
                plan.kind = OwnershipPlan::handoff;
                plan.reason = PlanReason::no_common_fields;
                plan.why = "the ports share no RSS hash of TCP over both IPv4 and IPv6 (fields in common: " +
                           hex(plan.rss_hf) + ")";
            }
        }
        if (plan.rss())
            for (const PortCaps& p : ports)
                if (p.reta_size % plan.reta_period != 0) {
                    plan.kind = OwnershipPlan::handoff;
                    plan.reason = PlanReason::reta_sizes_differ;
                    plan.why = port_label(p) + " has a " + std::to_string(p.reta_size) +
                               "-entry redirection table, not a multiple of the smallest port's " +
                               std::to_string(plan.reta_period) +
                               ": one table cannot send a flow to one worker "
                               "from every port";
                    break;
                }
        if (plan.rss()) {
            plan.why = "every port hashes flows symmetrically over the " + std::to_string(workers) +
                       " workers: worker i polls queue i of every port";
        } else {
            plan.rss_hf = 0;
            plan.reta_period = 0;
            plan.why += ": each of the " + std::to_string(workers) +
                        " workers polls its share of the queues and hands the packets of flows it does not own "
                        "to their owner";
        }
    }

    for (unsigned w = 0; w < workers; ++w)
        plan.workers.push_back(WorkerPlan{lcores[w], uint16_t(mode == Mode::inline_fwd ? w : 0), {}});
    unsigned next = 0; // handoff: queues are dealt to the workers in turn
    for (const PortCaps& p : ports) {
        const PortSetup s = setup_for(p, plan.kind, workers, mode);
        plan.ports.push_back(s);
        for (uint16_t q = 0; q < s.rx_queues; ++q) {
            const unsigned w = plan.rss() ? q : plan.handoff() ? next++ % workers : 0;
            WorkerPlan& wp = plan.workers[w];
            wp.rx.push_back(RxQueueRef{p.id, q, plan.peer[p.id], wp.tx_queue});
        }
    }
    return true;
}

void fall_back_to_handoff(PortPlan& plan, PlanReason reason, std::string why)
{
    plan.kind = OwnershipPlan::handoff;
    plan.reason = reason;
    plan.why = std::move(why) + ": each of the " + std::to_string(plan.workers.size()) +
               " workers keeps polling queue i of every port and hands the packets of flows it does not own to "
               "their owner";
    plan.rss_hf = 0;
    plan.reta_period = 0;
    for (PortSetup& p : plan.ports)
        p.symmetric = false;
}

void symmetric_key(uint8_t* key, size_t len) noexcept
{
    for (size_t i = 0; i < len; ++i)
        key[i] = (i % 2 == 0) ? 0x6d : 0x5a;
}

std::vector<uint16_t> redirection_table(const PortPlan& plan, uint16_t reta_size)
{
    std::vector<uint16_t> t(reta_size);
    const unsigned workers = unsigned(plan.workers.size());
    for (unsigned j = 0; j < reta_size; ++j)
        t[j] = uint16_t((j % plan.reta_period) % workers);
    return t;
}

} // namespace flowcop::app
