// SPDX-License-Identifier: BSD-3-Clause
// LD_PRELOAD shim for the packet-rate benchmark (deploy/bench/packet_rate.py), never for production.
//
// Why it exists: DPDK's pcap vdev with infinite_rx=1 copies the whole capture into mbufs of the
// application's pool at RX queue setup, and fails the setup if the pool holds fewer mbufs than the
// capture has packets. flowcop sizes its pool from ports and lcores only (app/service/ports.cpp,
// mbufs_needed(): 8191 mbufs for one port on one lcore) and has no option to change it, so it cannot
// replay a capture of more than ~7900 packets in a loop. testpmd can (--total-num-mbufs).
//
// What it does: interposes rte_pktmbuf_pool_create() and, when FLOWCOP_BENCH_EXTRA_MBUFS is set,
// adds that many mbufs to the pool the application asked for; when FLOWCOP_BENCH_DATA_ROOM is set, it
// replaces the data room size, so flowcop's mbufs have the same geometry as testpmd's --mbuf-size.
// Nothing else changes: the call goes on to DPDK's own function, and nothing on the per-packet path
// is touched. It prints one line on stderr saying what it changed, so a run log shows the shim was
// active. Unset variables leave the call unchanged.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct rte_mempool;

namespace {

using PoolCreate = rte_mempool* (*)(const char*, unsigned, unsigned, uint16_t, uint16_t, int);

unsigned long env_number(const char* name, unsigned long fallback)
{
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
        return fallback;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (end == nullptr || *end != '\0') {
        std::fprintf(stderr, "mbuf_pool_shim: %s=%s is not a decimal number; ignored\n", name, v);
        return fallback;
    }
    return n;
}

} // namespace

extern "C" rte_mempool* rte_pktmbuf_pool_create(const char* name, unsigned n, unsigned cache_size,
                                                uint16_t priv_size, uint16_t data_room_size, int socket_id)
{
    static const auto real = reinterpret_cast<PoolCreate>(dlsym(RTLD_NEXT, "rte_pktmbuf_pool_create"));
    if (real == nullptr) {
        std::fprintf(stderr, "mbuf_pool_shim: cannot find DPDK's rte_pktmbuf_pool_create\n");
        std::abort();
    }
    const unsigned long extra = env_number("FLOWCOP_BENCH_EXTRA_MBUFS", 0);
    const unsigned long room = env_number("FLOWCOP_BENCH_DATA_ROOM", data_room_size);
    const unsigned n2 = static_cast<unsigned>(n + extra);
    const uint16_t room2 = room > 0 && room <= UINT16_MAX ? static_cast<uint16_t>(room) : data_room_size;
    std::fprintf(stderr, "mbuf_pool_shim: pool '%s': %u -> %u mbufs, data room %u -> %u bytes\n", name, n, n2,
                 unsigned(data_room_size), unsigned(room2));
    return real(name, n2, cache_size, priv_size, room2, socket_id);
}
