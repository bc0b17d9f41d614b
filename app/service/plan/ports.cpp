// SPDX-License-Identifier: BSD-3-Clause
#include "ports.h"

#include "handoff.h"
#include "rss_config.h"
#include <service/options/mbuf_pool.h>

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

bool configure(const PortSetup& ps, const PortPlan& plan, rte_mempool* pool, std::string& error)
{
    const uint16_t port = ps.id;
    rte_eth_conf conf{};
    uint8_t key[kMaxRssKeyBytes];
    if (ps.spread) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        if (ps.symmetric) {
            symmetric_key(key, ps.key_bytes);
            conf.rx_adv_conf.rss_conf.rss_key = key;
            conf.rx_adv_conf.rss_conf.rss_key_len = uint8_t(ps.key_bytes);
            conf.rx_adv_conf.rss_conf.rss_hf = plan.rss_hf;
        } else {
            // Any spread will do: the handoff, not the device's hash, decides the owners.
            rte_eth_dev_info info{};
            rte_eth_dev_info_get(port, &info);
            conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & wanted_rss_fields();
        }
    }
    const std::string name = port_name(port);
    int rc = rte_eth_dev_configure(port, ps.rx_queues, ps.tx_queues, &conf);
    if (rc != 0) {
        error = "port " + std::to_string(port) + " (" + name + "): configure with " + std::to_string(ps.rx_queues) +
                " RX and " + std::to_string(ps.tx_queues) + " TX queue(s) failed: " + rte_strerror(-rc);
        return false;
    }
    uint16_t rxd = kRxDesc, txd = kTxDesc;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(port);
    for (uint16_t q = 0; q < ps.rx_queues; ++q) {
        rc = rte_eth_rx_queue_setup(port, q, rxd, socket < 0 ? SOCKET_ID_ANY : socket, nullptr, pool);
        if (rc != 0) {
            error = "port " + std::to_string(port) + " (" + name + "): RX queue " + std::to_string(q) +
                    " setup failed: " + rte_strerror(-rc) + pool_hint(pool);
            return false;
        }
    }
    for (uint16_t q = 0; q < ps.tx_queues; ++q) {
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

bool read_port_caps(std::vector<PortCaps>& caps, std::string& error, const SoftRssPort* soft)
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
    caps.clear();
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(p, &info) != 0) {
            error = "port " + std::to_string(p) + " (" + port_name(p) + "): cannot read device info";
            return false;
        }
        PortCaps c;
        c.id = p;
        c.name = port_name(p);
        c.max_rx_queues = info.max_rx_queues;
        c.max_tx_queues = info.max_tx_queues;
        c.rss_offloads = info.flow_type_rss_offloads;
        c.hash_key_size = info.hash_key_size;
        c.reta_size = info.reta_size;
        // Queues a device made at probe are queues it delivers to whatever flowcop configures
        // (af_packet's qpairs sockets, one per pcap rx file); a NIC has none before configure.
        c.own_rx_queues = info.nb_rx_queues;
        if (soft != nullptr && soft->caps.id == p) { // the ring PMD under it reports no RSS: its own word
            c.rss_offloads = soft->caps.rss_offloads;
            c.hash_key_size = soft->caps.hash_key_size;
            c.reta_size = soft->caps.reta_size;
            c.soft_rss = true;
        }
        caps.push_back(c);
    }
    return true;
}

std::vector<unsigned> eal_lcores()
{
    std::vector<unsigned> lcores{rte_get_main_lcore()};
    unsigned l;
    RTE_LCORE_FOREACH_WORKER(l)
    lcores.push_back(l);
    return lcores;
}

std::string program_rss(const PortPlan& plan, const PortSetup& ps, const SoftRssPort* soft)
{
    const uint16_t port = ps.id;
    if (ps.soft_rss) {
        if (soft == nullptr || soft->caps.id != port)
            return "deals its packets in software but flowcop cannot reach it";
        uint8_t key[kMaxRssKeyBytes];
        symmetric_key(key, ps.key_bytes);
        if (std::string why = soft->program(key, ps.key_bytes, plan.rss_hf, redirection_table(plan, ps.reta_size));
            !why.empty())
            return "refused the RSS configuration (" + why + ")";
        return rss_mismatch(plan, ps, soft->read_back());
    }
    std::vector<rte_eth_rss_reta_entry64> groups = reta_groups(redirection_table(plan, ps.reta_size));
    int rc = rte_eth_dev_rss_reta_update(port, groups.data(), ps.reta_size);
    if (rc != 0)
        return "refused the redirection table (" + std::string(rte_strerror(-rc)) + ")";
    RssReadback got;
    got.key.assign(ps.key_bytes, 0);
    rte_eth_rss_conf conf{};
    conf.rss_key = got.key.data();
    conf.rss_key_len = uint8_t(ps.key_bytes);
    got.conf_read = rte_eth_dev_rss_hash_conf_get(port, &conf) == 0;
    got.hf = conf.rss_hf;
    groups = reta_query_groups(ps.reta_size);
    got.reta_read = rte_eth_dev_rss_reta_query(port, groups.data(), ps.reta_size) == 0;
    got.table = reta_entries(groups, ps.reta_size);
    return rss_mismatch(plan, ps, got);
}

uint64_t planned_extra_mbufs(const Options& opt, const PortCaps* flowgen, unsigned lcores, std::string& error)
{
    std::vector<PortCaps> caps;
    if (!read_port_caps(caps, error))
        return 0;
    if (flowgen != nullptr) { // flowgen::Port: its own queues, and RSS in software with queues=N (port.h)
        PortCaps fg = *flowgen;
        fg.id = caps.empty() ? 0 : uint16_t(caps.back().id + 1);
        caps.push_back(fg);
    }
    PortPlan plan;
    std::string ignored; // setup_ports() reports it
    if (!plan_ports(caps, eal_lcores(), opt.mode, plan, ignored))
        return 0;
    // The rss plan has the rings too, for the ICMP errors and fragments it hands to their flow's owner.
    uint64_t extra =
        plan.kind != OwnershipPlan::single_lcore ? HandoffRings::mbufs_held(unsigned(plan.workers.size())) : 0;
    for (const PortSetup& p : plan.ports)
        if (p.rx_queues > lcores)
            extra += uint64_t(p.rx_queues - lcores) * kRxDescriptors;
    return extra;
}

bool setup_ports(const Options& opt, rte_mempool* pool, PortPlan& plan, std::string& error, const SoftRssPort* soft)
{
    std::vector<PortCaps> caps;
    if (!read_port_caps(caps, error, soft) || !plan_ports(caps, eal_lcores(), opt.mode, plan, error))
        return false;
    for (const PortSetup& ps : plan.ports)
        if (!configure(ps, plan, pool, error))
            return false;
    if (plan.rss())
        for (const PortSetup& ps : plan.ports)
            if (std::string why = program_rss(plan, ps, soft); !why.empty()) {
                fall_back_to_handoff(plan, PlanReason::rss_not_kept,
                                     "port " + std::to_string(ps.id) + " (" + plan.port_name(ps.id) + ") " + why);
                break;
            }
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
