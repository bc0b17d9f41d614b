// SPDX-License-Identifier: BSD-3-Clause
#include "ports.h"

#include "mbuf_pool.h"

#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <cstring>

namespace flowcop::app {

namespace {

// What each queue asks for; the mbuf pool is sized for them (mbuf_pool.h).
constexpr uint16_t kRxDesc = kRxDescriptors;
constexpr uint16_t kTxDesc = kTxDescriptors;
static_assert(kMbufHeadroom == RTE_PKTMBUF_HEADROOM, "mbuf_pool.h's headroom is DPDK's");
static_assert(kDefaultMbufDataRoom == RTE_MBUF_DEFAULT_BUF_SIZE, "mbuf_pool.h's default data room is DPDK's");

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

// Why an RX queue setup can fail with the pool: a data room too small for the device's frames
// (af_packet, NICs that cannot scatter; pcap's infinite_rx=1 wants every frame in one mbuf) or too
// few mbufs (infinite_rx=1 copies its whole capture into the pool). Drivers log which at ERR level
// and return a bare errno, so the sentence says where the pool's geometry comes from.
std::string pool_hint(rte_mempool* pool)
{
    std::string hint = " (its pool has ";
    hint += std::to_string(pool->size);
    hint += " mbufs with a ";
    hint += std::to_string(rte_pktmbuf_data_room_size(pool));
    hint += "-byte data room: raise --mbufs or --mbuf-data-room if the driver's message above asks for "
            "more mbufs or larger ones)";
    return hint;
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
        if (rc != 0) {
            error = "port " + std::to_string(port) + " (" + name + "): RX queue " + std::to_string(q) +
                    " setup failed: " + rte_strerror(-rc) + pool_hint(pool);
            return false;
        }
        rc = rte_eth_tx_queue_setup(port, q, txd, socket < 0 ? SOCKET_ID_ANY : socket, nullptr);
        if (rc != 0) {
            error = "port " + std::to_string(port) + " (" + name + "): TX queue " + std::to_string(q) +
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

rte_mempool* create_mbuf_pool(uint64_t mbufs, uint16_t data_room, std::string& error)
{
    rte_mempool* pool =
        rte_pktmbuf_pool_create("flowcop_mbufs", unsigned(mbufs), 256, 0, data_room, int(rte_socket_id()));
    if (pool != nullptr)
        return pool;
    const int err = rte_errno;
    error = std::string("cannot create the mbuf pool: ") + rte_strerror(err);
    if (err != ENOMEM)
        return nullptr;
    // What the pool takes at least: each mbuf with its mempool header and trailer, and the ring of
    // pointers (a power of two above the count). More in 4 KiB pages (--no-huge), where an object
    // may not cross a page: a default mbuf (2368 bytes with its header) then takes a page of its own.
    rte_mempool_objsz sz{};
    const uint64_t obj = rte_mempool_calc_obj_size(uint32_t(sizeof(rte_mbuf)) + data_room, 0, &sz);
    const uint64_t bytes = mbufs * obj + sizeof(void*) * rte_align64pow2(mbufs + 1);
    error += " (";
    error += std::to_string(mbufs);
    error += " mbufs with a ";
    error += std::to_string(data_room);
    error += "-byte data room need at least ";
    error += std::to_string((bytes + (1u << 20) - 1) >> 20);
    error += " MiB: give EAL more memory with -m or hugepages, or lower --mbufs or --mbuf-data-room)";
    return nullptr;
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
        caps.push_back(PortCaps{p, port_name(p), info.max_rx_queues, info.max_tx_queues, info.flow_type_rss_offloads,
                                info.hash_key_size});
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
