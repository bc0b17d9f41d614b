// SPDX-License-Identifier: BSD-3-Clause
#include "port_plan.h"

#include <rte_ethdev.h> // RTE_ETH_RSS_* flags only

namespace flowcop::app {

bool can_rss(const PortCaps& port, unsigned lcores) noexcept
{
    const uint64_t want = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP;
    return port.max_rx_queues >= lcores && port.max_tx_queues >= lcores && (port.rss_offloads & want) != 0 &&
           port.hash_key_size >= 40 && port.hash_key_size <= 64;
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
    for (const PortCaps& p : ports) {
        if (plan.port_names.size() <= p.id)
            plan.port_names.resize(p.id + 1u);
        plan.port_names[p.id] = p.name;
    }
    bool rss = lcores.size() > 1;
    for (const PortCaps& p : ports) {
        if (rss && !can_rss(p, unsigned(lcores.size()))) {
            rss = false;
            plan.warnings.push_back("port " + std::to_string(p.id) + " (" + plan.port_name(p.id) +
                                    ") cannot spread flows symmetrically over " + std::to_string(lcores.size()) +
                                    " lcores; every port is polled by lcore " + std::to_string(lcores[0]) +
                                    " so that no flow has two owners (other lcores stay idle)");
        }
    }
    plan.rss = rss;
    plan.queues_per_port = rss ? uint16_t(lcores.size()) : 1;
    for (unsigned w = 0; w < plan.queues_per_port; ++w)
        plan.workers.push_back(WorkerPlan{lcores[w], {}});
    for (size_t i = 0; i < ports.size(); ++i) {
        const uint16_t peer = mode == Mode::inline_fwd ? ports[i ^ 1].id : ports[i].id;
        for (unsigned w = 0; w < plan.queues_per_port; ++w)
            plan.workers[w].rx.push_back(RxQueueRef{ports[i].id, uint16_t(w), peer, uint16_t(w)});
    }
    return true;
}

} // namespace flowcop::app
