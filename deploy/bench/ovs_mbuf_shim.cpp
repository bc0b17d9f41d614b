// SPDX-License-Identifier: BSD-3-Clause
// LD_PRELOAD shim for the Open vSwitch peer of the packet-rate benchmark (deploy/bench/ovs_peer.py),
// never for production and never for flowcop.
//
// Why it exists: DPDK's pcap vdev with infinite_rx=1 copies the whole capture into mbufs of the rx
// queue's pool at queue setup and refuses the queue when the pool is smaller than the capture.
// flowcop (--mbufs, --mbuf-data-room) and dpdk-testpmd (--total-num-mbufs, --mbuf-size) size their
// pool for it; ovs-vswitchd has no such setting: its shared pool is 262,144 mbufs (halved until it
// fits in EAL memory) of a data room made for a 1500-byte MTU, which cannot hold a capture of 10^5
// flows x 2 rounds in the memory the other programs use, nor one of 10^6 flows at all.
//
// What it does: interposes rte_pktmbuf_pool_create() for pools whose name starts with "ovs" (the
// only pools ovs-vswitchd creates) and, from the environment,
//   FLOWCOP_OVS_MBUFS       raises the pool's mbuf count to this number (never lowers it);
//   FLOWCOP_OVS_DATA_ROOM   sets the data room to this many bytes, the geometry the other programs
//                           get, but only when it differs from OVS's request by a whole number of
//                           64-byte lines: OVS pads its per-mbuf private area so that private area
//                           plus data room is a multiple of the cache line, and that stays true.
// The call goes on to DPDK's own function; nothing on the per-packet path changes. One line on
// stderr (ovs-vswitchd's log of the run) says what was changed, or why a setting was not applied.
#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct rte_mempool;

namespace {

using PoolCreate = rte_mempool* (*)(const char*, unsigned, unsigned, uint16_t, uint16_t, int);

constexpr unsigned kCacheLine = 64;
constexpr unsigned kMinDataRoom = 128 + 64; // RTE_PKTMBUF_HEADROOM and a 60-byte frame

// The variable's decimal value, or `fallback` when it is unset; a malformed value is reported and ignored.
unsigned long env_number(const char* name, unsigned long fallback)
{
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0')
        return fallback;
    char* end = nullptr;
    errno = 0;
    const unsigned long value = std::strtoul(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        std::fprintf(stderr, "ovs_mbuf_shim: %s=%s is not a decimal number; ignored\n", name, text);
        return fallback;
    }
    return value;
}

} // namespace

extern "C" rte_mempool* rte_pktmbuf_pool_create(const char* name, unsigned n, unsigned cache_size, uint16_t priv_size,
                                                uint16_t data_room_size, int socket_id)
{
    static const auto real = reinterpret_cast<PoolCreate>(dlsym(RTLD_NEXT, "rte_pktmbuf_pool_create"));
    if (real == nullptr) {
        std::fprintf(stderr, "ovs_mbuf_shim: DPDK's rte_pktmbuf_pool_create is not loaded\n");
        std::abort();
    }
    if (name == nullptr || std::strncmp(name, "ovs", 3) != 0)
        return real(name, n, cache_size, priv_size, data_room_size, socket_id);

    const unsigned long want_mbufs = env_number("FLOWCOP_OVS_MBUFS", n);
    const unsigned mbufs = want_mbufs > n && want_mbufs <= 0xffffffffUL ? static_cast<unsigned>(want_mbufs) : n;
    const unsigned long want_room = env_number("FLOWCOP_OVS_DATA_ROOM", data_room_size);
    uint16_t room = data_room_size;
    if (want_room != data_room_size) {
        if (want_room < kMinDataRoom || want_room > data_room_size || (data_room_size - want_room) % kCacheLine != 0)
            std::fprintf(stderr,
                         "ovs_mbuf_shim: data room %lu not applied to '%s': it must be %u..%u bytes and differ from "
                         "%u by a multiple of %u\n",
                         want_room, name, kMinDataRoom, unsigned(data_room_size), unsigned(data_room_size), kCacheLine);
        else
            room = static_cast<uint16_t>(want_room);
    }
    std::fprintf(stderr, "ovs_mbuf_shim: pool '%s': %u -> %u mbufs, data room %u -> %u bytes\n", name, n, mbufs,
                 unsigned(data_room_size), unsigned(room));
    return real(name, mbufs, cache_size, priv_size, room, socket_id);
}
