// SPDX-License-Identifier: BSD-3-Clause
// The packet-path benchmark's input (bench_packet_path.cpp), built once, up front, as mbufs: the frames
// deploy/bench/flows_pcap.py writes for N established TCP flows, byte for byte (60-byte PSH|ACK
// Ethernet + IPv4 + TCP segments with 6 bytes of payload and correct checksums, the same addresses,
// ports and sequence numbers), one mbuf per flow and direction, and the orders to replay them in.
//
// Memory: a pktmbuf pool of 2N mbufs with a 64-byte data room and no headroom (the frame starts at the
// buffer; data_off 0), 256 bytes an mbuf with the mempool's object header: ~5.1 GB at 10^7 flows. The
// pool comes from EAL memory (the caller's -m must hold it). The mbufs are never freed while the
// Frames live: each holds one reference (refcnt 1) for the Frames, and a replay adds one per copy in
// flight (rte_mbuf_refcnt_update), which the consumer's free takes back.
//
// Streams (each an array of mbuf pointers, a multiple of the 32-packet burst long):
//   warm_up  every flow client->server in a random order, then every flow server->client in another:
//            flowcop picks each flow up mid-stream (loose pickup) and then sees its reply;
//   uniform  flows_pcap.py's two passes: each flow once per pass, in an order drawn afresh, client->server
//            in the first and server->client in the second (so in a repeated stream each flow's packets
//            alternate direction, as in the pcap replayed with infinite_rx);
//   zipf     2N packets whose flows are drawn with probability ~ 1/rank^s (rank r is flow perm[r], a fixed
//            random permutation, so the popular flows are scattered through the table as on a real link,
//            not its first positions), each flow's packets alternating direction.
// Fixed seeds: the same frames and streams on every run.
//
// Threading: built and read by one thread; the mbufs are then shared as the caller arranges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rte_mbuf;
struct rte_mempool;

namespace flowcop::bench {

class PathFrames {
public:
    static constexpr uint16_t kFrameLen = 60;
    // EAL memory the pool of `flows` takes, in bytes (its objects and ring).
    static uint64_t pool_bytes(uint32_t flows) noexcept;
    // nullptr and one sentence in `error` if the pool cannot be made (EAL memory too small) or a frame
    // does not parse as a TCP segment.
    static std::unique_ptr<PathFrames> create(uint32_t flows, std::string& error);
    ~PathFrames();
    PathFrames(const PathFrames&) = delete;
    PathFrames& operator=(const PathFrames&) = delete;

    uint32_t flows() const noexcept { return _flows; }
    rte_mempool* pool() const noexcept { return _pool; }
    rte_mbuf* frame(uint32_t flow, bool to_server) const noexcept { return _mbufs[2 * size_t(flow) + !to_server]; }

    std::vector<rte_mbuf*> warm_up(uint64_t seed) const;
    std::vector<rte_mbuf*> uniform(uint64_t seed) const;
    std::vector<rte_mbuf*> zipf(double s, uint64_t seed) const;

private:
    PathFrames() = default;
    uint32_t _flows = 0;
    rte_mempool* _pool = nullptr;
    std::vector<rte_mbuf*> _mbufs; // 2 * flow: client->server, 2 * flow + 1: server->client
};

} // namespace flowcop::bench
