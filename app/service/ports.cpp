// SPDX-License-Identifier: BSD-3-Clause
#include "ports.h"

#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <cstring>

namespace flowcop::app {

namespace {

constexpr uint16_t kRxDesc = 1024;
constexpr uint16_t kTxDesc = 1024;

// The symmetric Toeplitz key: with the 16-bit pattern 0x6d5a repeated, swapping
// source and destination (address and port) leaves the hash unchanged.
void symmetric_key(uint8_t* key, size_t len) noexcept
{
    for (size_t i = 0; i < len; ++i)
        key[i] = (i % 2 == 0) ? 0x6d : 0x5a;
}

std::string port_name(uint16_t port)
{
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    if (rte_eth_dev_get_name_by_port(port, name) != 0)
        return "port " + std::to_string(port);
    return name;
}

bool configure(uint16_t port, uint16_t nq, bool rss, const rte_eth_dev_info& info, rte_mempool* pool,
               std::string& error)
{
    rte_eth_conf conf{};
    uint8_t key[64];
    if (rss) {
        symmetric_key(key, info.hash_key_size);
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_key = key;
        conf.rx_adv_conf.rss_conf.rss_key_len = info.hash_key_size;
        conf.rx_adv_conf.rss_conf.rss_hf =
            info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
    }
    const std::string name = port_name(port);
    int rc = rte_eth_dev_configure(port, nq, nq, &conf);
    if (rc != 0) {
        error = "port " + std::to_string(port) + " (" + name + "): configure failed: " + rte_strerror(-rc);
        return false;
    }
    uint16_t rxd = kRxDesc, txd = kTxDesc;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(port);
    for (uint16_t q = 0; q < nq; ++q) {
        rc = rte_eth_rx_queue_setup(port, q, rxd, socket < 0 ? SOCKET_ID_ANY : socket, nullptr, pool);
        if (rc == 0)
            rc = rte_eth_tx_queue_setup(port, q, txd, socket < 0 ? SOCKET_ID_ANY : socket, nullptr);
        if (rc != 0) {
            error = "port " + std::to_string(port) + " (" + name + "): queue " + std::to_string(q) +
                    " setup failed: " + rte_strerror(-rc);
            return false;
        }
    }
    rc = rte_eth_dev_start(port);
    if (rc != 0) {
        error = "port " + std::to_string(port) + " (" + name + "): start failed: " + rte_strerror(-rc);
        return false;
    }
    // Monitoring a tap or span port needs every frame, not just ours; virtual
    // devices that have no such notion return -ENOTSUP, which is fine.
    rte_eth_promiscuous_enable(port);
    return true;
}

} // namespace

unsigned mbufs_needed(unsigned ports, unsigned lcores) noexcept
{
    const unsigned queues = ports * lcores;
    const unsigned n = queues * (kRxDesc + kTxDesc) + lcores * 1024 + 4096;
    return n < 8191 ? 8191 : n;
}

bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error)
{
    // EAL logs a network vdev that failed to probe (a missing capture file or
    // interface) and carries on without it: refuse to track fewer ports than given.
    const rte_devargs* da;
    RTE_EAL_DEVARGS_FOREACH("vdev", da)
    {
        uint16_t id;
        const bool net = std::strncmp(da->name, "net_", 4) == 0 || std::strncmp(da->name, "eth_", 4) == 0;
        if (net && rte_eth_dev_get_port_by_name(da->name, &id) != 0) {
            error = std::string("--vdev ") + da->name + " did not start (EAL's message above says why)";
            return false;
        }
    }
    std::vector<PortCaps> caps;
    std::vector<rte_eth_dev_info> infos;
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(p, &info) != 0) {
            error = "port " + std::to_string(p) + " (" + port_name(p) + "): cannot read device info";
            return false;
        }
        caps.push_back(PortCaps{p, port_name(p), info.max_rx_queues, info.max_tx_queues,
                                info.flow_type_rss_offloads, info.hash_key_size});
        infos.push_back(info);
    }
    std::vector<unsigned> lcores{rte_get_main_lcore()};
    unsigned l;
    RTE_LCORE_FOREACH_WORKER(l)
    lcores.push_back(l);
    if (!plan_ports(caps, lcores, opt.mode, plan, error))
        return false;
    for (size_t i = 0; i < caps.size(); ++i)
        if (!configure(caps[i].id, plan.queues_per_port, plan.rss, infos[i], pool, error))
            return false;
    return true;
}

void close_ports() noexcept
{
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_dev_stop(p);
        rte_eth_dev_close(p);
    }
}

} // namespace flowcop::app
