// SPDX-License-Identifier: BSD-3-Clause
// Contract: parse_mbuf() is the data-path entry to the one parser in packet.h: it
// hands parse() the front of an mbuf and the true frame length, nothing more.
// - Header bytes: the first min(pkt_len, max_header_bytes) bytes of the packet. When
//   the first segment holds them (the common case) they are read in place, zero copy;
//   otherwise (headers split across segments) they are copied with rte_pktmbuf_read()
//   into a max_header_bytes stack buffer. Either way parse() sees the same bytes, so
//   the verdict does not depend on segmentation.
// - frame_len = m->pkt_len in all cases: a multi-segment jumbo or GSO frame (e.g.
//   an 80 kB BIG TCP frame) is sized by its full length, so its ip_len is whole.
// - Precondition: m is a valid, consistent mbuf chain (pkt_len == sum of data_len),
//   as a PMD delivers it. The mbuf is only read; ownership stays with the caller.
// - Hot-path safe like parse(): no allocation, no exceptions, no logging.
// Header-only so lib/packet itself builds and tests without DPDK; depend on
// packet_mbuf_dep (packet_dep + dpdk_dep) to use it.
#pragma once

#include <rte_mbuf.h>

#include <packet/packet.h>
#include <packet/tcp_lite.h>

namespace flowcop::packet {

inline Verdict parse_mbuf(const rte_mbuf* m, Packet& out) noexcept
{
    uint8_t copy[kMaxHeaderBytes];
    const uint32_t frame_len = rte_pktmbuf_pkt_len(m);
    const uint32_t want = frame_len < kMaxHeaderBytes ? frame_len : kMaxHeaderBytes;
    // In place if the first segment holds `want` bytes, else copied across segments.
    const void* hdr = rte_pktmbuf_read(m, 0, want, copy);
    if (hdr == nullptr) // only for an inconsistent chain; classify, never read past it
        return parse(nullptr, 0, frame_len, out);
    return parse(static_cast<const uint8_t*>(hdr), want, frame_len, out);
}

// The steady lane's entry (tcp_lite.h): the first segment's bytes, zero copy; a frame whose headers do
// not all sit in it is not taken (parse_mbuf() reads it).
inline bool parse_mbuf_lite(const rte_mbuf* m, TcpLite& out) noexcept
{
    return parse_tcp_lite(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m), out);
}

} // namespace flowcop::packet
