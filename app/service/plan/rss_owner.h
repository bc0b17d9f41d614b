// SPDX-License-Identifier: BSD-3-Clause
// Which worker owns a flow under the rss plan (port_plan.h): the worker whose queue the ports deliver
// the flow's packets to. Used only for the packets whose own RX queue is not their flow's (ICMP errors,
// which a NIC hashes on their outer addresses, and fragments, which it hashes on addresses only), to
// hand them to that worker (worker_related.cpp). Pure, inline, allocation-free; any thread.
//
// It computes what the NIC computed for the flow's unfragmented packets: DPDK's software Toeplitz
// (rte_softrss, <rte_thash.h>) with the plan's symmetric key over the key's addresses, and its ports
// when the protocol is TCP, UDP or SCTP and the plan's hash fields (PortPlan::rss_hf) hash that
// protocol with ports (every other protocol, ICMP included, on the addresses alone, as the NIC did);
// then the plan's redirection table: entry j names (j mod P) mod W, and a NIC indexes it by the hash's
// low bits (hash mod its table size, a multiple of P), so the queue is (hash mod P) mod W. The
// symmetric key makes the canonical key's order (lo endpoint first) give the hash of either direction.
// VLAN IDs and the zone are not hashed: a NIC does not hash them.
//
// Cost: rte_softrss walks the tuple bit by bit (96 bits for IPv4 with ports, 288 for IPv6): ~1 us on the
// rare packets that need it, never on the common path.
#pragma once

#include "port_plan.h"

#include <packet/flow_key.h>

#include <rte_ethdev.h> // RTE_ETH_RSS_* flags only
#include <rte_thash.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace flowcop::app {

// The inputs the owner computation needs, fixed at start from the plan.
struct RssOwnerConf {
    std::array<uint8_t, kMinRssKeyBytes> key{}; // the symmetric key (the first 40 bytes are all it reads)
    uint64_t hash_fields = 0;                   // PortPlan::rss_hf
    uint16_t reta_period = 1;                   // PortPlan::reta_period
    uint16_t workers = 1;
};

inline RssOwnerConf rss_owner_conf(const PortPlan& plan) noexcept
{
    RssOwnerConf c;
    symmetric_key(c.key.data(), c.key.size());
    c.hash_fields = plan.rss_hf;
    c.reta_period = plan.reta_period == 0 ? 1 : plan.reta_period;
    c.workers = uint16_t(plan.workers.empty() ? 1 : plan.workers.size());
    return c;
}

// The Toeplitz hash the ports computed for the flow's unfragmented packets.
inline uint32_t rss_flow_hash(const packet::FlowKey& k, const RssOwnerConf& c) noexcept
{
    const bool v4 = packet::key_is_ipv4(k);
    uint64_t l4_field = 0;
    switch (k.proto) {
    case 6: l4_field = v4 ? RTE_ETH_RSS_NONFRAG_IPV4_TCP : RTE_ETH_RSS_NONFRAG_IPV6_TCP; break;
    case 17: l4_field = v4 ? RTE_ETH_RSS_NONFRAG_IPV4_UDP : RTE_ETH_RSS_NONFRAG_IPV6_UDP; break;
    case 132: l4_field = v4 ? RTE_ETH_RSS_NONFRAG_IPV4_SCTP : RTE_ETH_RSS_NONFRAG_IPV6_SCTP; break;
    default: break;
    }
    const bool ports = (c.hash_fields & l4_field) != 0;
    union rte_thash_tuple t;
    std::memset(&t, 0, sizeof t);
    auto word = [](const uint8_t* p) {
        return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
    };
    if (v4) {
        t.v4.src_addr = word(k.addr_lo + 12);
        t.v4.dst_addr = word(k.addr_hi + 12);
        t.v4.sport = k.port_lo;
        t.v4.dport = k.port_hi;
        return rte_softrss(reinterpret_cast<uint32_t*>(&t), ports ? RTE_THASH_V4_L4_LEN : RTE_THASH_V4_L3_LEN,
                           c.key.data());
    }
    for (unsigned w = 0; w < 4; ++w) { // host-order words, as rte_thash_load_v6_addrs leaves them
        const uint32_t s = word(k.addr_lo + 4 * w), d = word(k.addr_hi + 4 * w);
        std::memcpy(t.v6.src_addr + 4 * w, &s, 4);
        std::memcpy(t.v6.dst_addr + 4 * w, &d, 4);
    }
    t.v6.sport = k.port_lo;
    t.v6.dport = k.port_hi;
    return rte_softrss(reinterpret_cast<uint32_t*>(&t), ports ? RTE_THASH_V6_L4_LEN : RTE_THASH_V6_L3_LEN,
                       c.key.data());
}

inline unsigned rss_owner(const packet::FlowKey& k, const RssOwnerConf& c) noexcept
{
    return (rss_flow_hash(k, c) % c.reta_period) % c.workers;
}

} // namespace flowcop::app
