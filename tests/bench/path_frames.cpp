// SPDX-License-Identifier: BSD-3-Clause
#include "path_frames.h"

#include <bench_util.h>

#include <packet/packet.h>
#include <packet/packet_mbuf.h>

#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_tcp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flowcop::bench {

namespace {

constexpr uint16_t kDataRoom = 64; // the 60-byte frame, no headroom
constexpr unsigned kPoolCache = 256;
constexpr uint16_t kServerPorts[4] = {443, 80, 8080, 22};
constexpr uint8_t kClientMac[6] = {0x02, 0x66, 0x67, 0x00, 0x00, 0x01};
constexpr uint8_t kServerMac[6] = {0x02, 0x66, 0x67, 0x00, 0x00, 0x02};
constexpr char kPayload[] = "flowcp"; // 6 bytes: 14 + 20 + 20 + 6 = 60

// flows_pcap.py's flow_endpoints(i) and sequence numbers.
struct Endpoints {
    uint32_t client_ip, server_ip, client_seq, server_seq;
    uint16_t client_port, server_port;
};

Endpoints endpoints(uint32_t i)
{
    const uint64_t n = i;
    const uint32_t s = i % 4096;
    return {.client_ip = (10u << 24) | uint32_t((n * 2654435761u) & 0xFFFFFF),
            .server_ip = (172u << 24) | (16u << 16) | s,
            .client_seq = uint32_t((n * 7919 + 1) & 0xFFFFFFFF),
            .server_seq = uint32_t((n * 104729 + 7) & 0xFFFFFFFF),
            .client_port = uint16_t(1024 + (n * 40503) % 64000),
            .server_port = kServerPorts[i % 4]};
}

// flows_pcap.py's frame(): Ethernet + IPv4 (DF, TTL 64) + TCP (PSH|ACK, window 65535) + 6 bytes.
void write_frame(uint8_t* f, const Endpoints& e, bool to_server)
{
    std::memcpy(f, to_server ? kServerMac : kClientMac, 6);
    std::memcpy(f + 6, to_server ? kClientMac : kServerMac, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f + 14);
    ip->version_ihl = 0x45;
    ip->type_of_service = 0;
    ip->total_length = rte_cpu_to_be_16(20 + 20 + 6);
    ip->packet_id = 0;
    ip->fragment_offset = rte_cpu_to_be_16(0x4000);
    ip->time_to_live = 64;
    ip->next_proto_id = 6;
    ip->hdr_checksum = 0;
    ip->src_addr = rte_cpu_to_be_32(to_server ? e.client_ip : e.server_ip);
    ip->dst_addr = rte_cpu_to_be_32(to_server ? e.server_ip : e.client_ip);
    ip->hdr_checksum = rte_ipv4_cksum(ip);
    auto* tcp = reinterpret_cast<rte_tcp_hdr*>(f + 34);
    tcp->src_port = rte_cpu_to_be_16(to_server ? e.client_port : e.server_port);
    tcp->dst_port = rte_cpu_to_be_16(to_server ? e.server_port : e.client_port);
    tcp->sent_seq = rte_cpu_to_be_32(to_server ? e.client_seq : e.server_seq);
    tcp->recv_ack = rte_cpu_to_be_32(to_server ? e.server_seq : e.client_seq);
    tcp->data_off = 5 << 4;
    tcp->tcp_flags = RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG;
    tcp->rx_win = rte_cpu_to_be_16(65535);
    tcp->cksum = 0;
    tcp->tcp_urp = 0;
    std::memcpy(f + 54, kPayload, 6);
    tcp->cksum = rte_ipv4_udptcp_cksum(ip, tcp);
}

// Whole bursts: a stream's tail shorter than a burst is dropped (at most 31 packets).
void to_bursts(std::vector<rte_mbuf*>& v)
{
    v.resize(std::max<size_t>(32, v.size() / 32 * 32));
}

} // namespace

uint64_t PathFrames::pool_bytes(uint32_t flows) noexcept
{
    // Object: header (64, cache-line aligned) + mbuf (128) + data room, not padded to spread objects over
    // memory channels (RTE_MEMPOOL_F_NO_SPREAD: 5 lines instead of 4 would take 1.3 GB more at 10^7);
    // the ring: 8 bytes a slot, a power of two of them.
    const uint64_t n = 2 * uint64_t(flows);
    return n * (64 + sizeof(rte_mbuf) + kDataRoom) + rte_align64pow2(n + 1) * 8 + (64u << 20);
}

std::unique_ptr<PathFrames> PathFrames::create(uint32_t flows, std::string& error)
{
    std::unique_ptr<PathFrames> p(new PathFrames());
    p->_flows = flows;
    const unsigned n = 2 * flows;
    // rte_pktmbuf_pool_create()'s steps, with RTE_MEMPOOL_F_NO_SPREAD.
    p->_pool = rte_mempool_create_empty("bench_path_frames", n, sizeof(rte_mbuf) + kDataRoom, kPoolCache,
                                        sizeof(rte_pktmbuf_pool_private), SOCKET_ID_ANY, RTE_MEMPOOL_F_NO_SPREAD);
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = kDataRoom;
    if (p->_pool != nullptr && (rte_mempool_set_ops_byname(p->_pool, rte_mbuf_best_mempool_ops(), nullptr) != 0 ||
                                (rte_pktmbuf_pool_init(p->_pool, &priv), rte_mempool_populate_default(p->_pool) < 0))) {
        rte_mempool_free(p->_pool);
        p->_pool = nullptr;
    }
    if (p->_pool != nullptr)
        rte_mempool_obj_iter(p->_pool, rte_pktmbuf_init, nullptr);
    if (p->_pool == nullptr) {
        error = "cannot create a pool of " + std::to_string(n) + " mbufs (" + std::to_string(pool_bytes(flows) >> 20) +
                " MiB): " + rte_strerror(rte_errno);
        return nullptr;
    }
    p->_mbufs.resize(n);
    if (rte_pktmbuf_alloc_bulk(p->_pool, p->_mbufs.data(), n) != 0) {
        p->_mbufs.clear();
        error = "cannot take " + std::to_string(n) + " mbufs from their pool";
        return nullptr;
    }
    for (uint32_t i = 0; i < flows; ++i) {
        const Endpoints e = endpoints(i);
        for (int dir = 0; dir < 2; ++dir) {
            rte_mbuf* m = p->_mbufs[2 * size_t(i) + dir];
            m->data_off = 0;
            auto* f = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kFrameLen));
            write_frame(f, e, dir == 0);
        }
    }
    // Every frame a TCP segment, as the pcap's are: checked on both of one flow's (the others differ
    // only in addresses, ports and numbers).
    for (int dir = 0; dir < 2; ++dir) {
        packet::Packet pkt;
        if (packet::parse_mbuf(p->_mbufs[size_t(dir)], pkt) != packet::Verdict::tcp) {
            error = "a built frame does not parse as a TCP segment";
            return nullptr;
        }
    }
    return p;
}

PathFrames::~PathFrames()
{
    if (!_mbufs.empty())
        rte_pktmbuf_free_bulk(_mbufs.data(), unsigned(_mbufs.size()));
    rte_mempool_free(_pool);
}

std::vector<rte_mbuf*> PathFrames::warm_up(uint64_t seed) const
{
    std::vector<rte_mbuf*> v;
    v.reserve(2 * size_t(_flows) + 32);
    for (int dir = 0; dir < 2; ++dir)
        for (uint32_t i : permutation(_flows, seed + dir))
            v.push_back(frame(i, dir == 0));
    // Whole bursts, the last one padded with the first frames again: every flow is in it.
    for (size_t k = 0; v.size() % 32 != 0; ++k)
        v.push_back(v[k]);
    return v;
}

std::vector<rte_mbuf*> PathFrames::uniform(uint64_t seed) const
{
    std::vector<rte_mbuf*> v;
    v.reserve(2 * size_t(_flows));
    for (int dir = 0; dir < 2; ++dir)
        for (uint32_t i : permutation(_flows, seed + 100 + dir))
            v.push_back(frame(i, dir == 0));
    to_bursts(v);
    return v;
}

std::vector<rte_mbuf*> PathFrames::zipf(double s, uint64_t seed) const
{
    // Inverse transform over the cumulative weights 1/r^s, r = 1..N.
    std::vector<double> cdf(_flows);
    double sum = 0;
    for (uint32_t r = 0; r < _flows; ++r)
        cdf[r] = (sum += 1.0 / std::pow(double(r) + 1.0, s));
    const std::vector<uint32_t> flow_of_rank = permutation(_flows, seed + 200);
    std::vector<uint8_t> to_client(_flows, 0); // each flow's next direction: they alternate
    Rng rng(seed + 300);
    std::vector<rte_mbuf*> v(std::max<size_t>(32, 2 * size_t(_flows)));
    for (auto& m : v) {
        const double u = double(rng() >> 11) * (1.0 / 9007199254740992.0) * sum;
        const uint32_t rank =
            uint32_t(std::min<size_t>(_flows - 1, size_t(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin())));
        const uint32_t f = flow_of_rank[rank];
        m = frame(f, to_client[f] == 0);
        to_client[f] ^= 1;
    }
    to_bursts(v);
    return v;
}

} // namespace flowcop::bench
