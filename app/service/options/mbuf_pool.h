// SPDX-License-Identifier: BSD-3-Clause
// The mbuf pool's size and data room: the rules behind --mbufs and --mbuf-data-room, as plain
// arithmetic (no EAL), so the option table, the service (service.cpp creates the pool, ports.cpp
// fills the rings from it) and the tests share one definition. Safe on any thread.
//
// What the pool must hold. flowcop creates one pool at start and never grows it. Each port gets
// one RX and one TX queue per lcore at most, or the RX queues its device made itself (port_plan.h;
// ports.h's planned_extra_mbufs() adds those and the handoff rings' mbufs to the `extra` the
// service passes); every RX descriptor holds an mbuf while the port runs and every TX descriptor
// may hold one until it is sent (inline mode). Each lcore
// keeps up to 1.5 x its mempool cache (256) plus the bursts it is working on. Beyond that a spare
// keeps a pool at its minimum from running dry the moment every ring and cache is full (which
// flowcop_port_rx_nombuf_total would count). A device may need more: DPDK's pcap vdev with
// infinite_rx=1 copies its whole capture into the pool at queue setup, one mbuf per packet, and
// refuses the setup if the pool cannot hold it; --mbufs is how an operator gives it room.
//
// The data room (RTE_MBUF_DEFAULT_BUF_SIZE by default: a 1518-byte frame fits one mbuf) may be as
// small as the headroom plus a minimum Ethernet frame (64 bytes with its FCS): a minimum frame then
// still fits one segment, PMDs that chain mbufs (the pcap PMD does) carry longer frames in several,
// and the parser reads headers with rte_pktmbuf_read(), which spans segments (packet_mbuf.h).
// Drivers that cannot chain a frame refuse RX queue setup when the room is smaller than their frames
// (af_packet does, and pcap's infinite_rx refuses multi-segment frames); flowcop's setup error then
// names the options. flowcop does not request RX scatter, so whether a NIC's driver chains long
// frames without it or refuses them is the driver's choice: on NICs keep the default.
#pragma once

#include <cstdint>
#include <string>

namespace flowcop::app {

inline constexpr unsigned kRxDescriptors = 1024; // per RX queue, before the driver adjusts it
inline constexpr unsigned kTxDescriptors = 1024; // per TX queue, likewise
inline constexpr unsigned kLcoreMbufs = 1024;    // an lcore's mempool cache (<= 384) and bursts
inline constexpr unsigned kSpareMbufs = 4096;
// The smallest default pool: 2^13 - 1, the size DPDK recommends (a pool of 2^q - 1 fills its ring,
// whose size is the next power of two above the count, exactly). It only matters for one port on one
// lcore, whose minimum is 7168.
inline constexpr unsigned kDefaultMbufsFloor = 8191;
// The largest pool DPDK 22.11 can make: its ring holds count + 1 rounded up to a power of two,
// at most 2^30 entries (RTE_RING_SZ_MASK). At that size the mbufs alone take 300 GiB or more.
inline constexpr uint32_t kMaxMbufs = (1u << 30) - 1;

inline constexpr unsigned kMbufHeadroom = 128; // RTE_PKTMBUF_HEADROOM (static_assert in ports.cpp)
inline constexpr unsigned kMinFrameBytes = 64; // a minimum Ethernet frame with its FCS
inline constexpr uint16_t kMinMbufDataRoom = kMbufHeadroom + kMinFrameBytes;
// RTE_MBUF_DEFAULT_BUF_SIZE (static_assert in ports.cpp): DPDK's 2048-byte data room + headroom.
inline constexpr uint16_t kDefaultMbufDataRoom = 2048 + kMbufHeadroom;

// The fewest mbufs these ports and lcores can run on: 2048 per RX and TX queue pair (the plan
// gives each port at most one queue pair per lcore), 1024 per lcore, and the spare. `extra` is
// what other users of the pool hold on top: the flowgen port's rings and bursts, the handoff rings
// and the RX queues a device made itself beyond one per lcore (ports.h, planned_extra_mbufs()).
constexpr uint64_t mbufs_minimum(unsigned ports, unsigned lcores, uint64_t extra = 0) noexcept
{
    const uint64_t queues = uint64_t(ports) * lcores;
    return queues * (kRxDescriptors + kTxDescriptors) + uint64_t(lcores) * kLcoreMbufs + kSpareMbufs + extra;
}

// The pool --mbufs auto creates: the minimum, and never fewer than kDefaultMbufsFloor before `extra`.
constexpr uint64_t mbufs_default(unsigned ports, unsigned lcores, uint64_t extra = 0) noexcept
{
    const uint64_t n = mbufs_minimum(ports, lcores);
    return (n < kDefaultMbufsFloor ? kDefaultMbufsFloor : n) + extra;
}

// The pool to create for --mbufs `requested` (0 = auto) on `ports` ports and `lcores` lcores, with
// `extra` mbufs held elsewhere (above): sets `n` and returns "", or returns the --mbufs error
// detail (one sentence, without the flag: the count, the minimum and how it is made up) and
// leaves `n` untouched. `ports` 0 is counted as 1, as a pool for no port is never created.
std::string resolve_mbufs(uint32_t requested, unsigned ports, unsigned lcores, uint64_t extra, uint64_t& n);

} // namespace flowcop::app
