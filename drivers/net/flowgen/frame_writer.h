// SPDX-License-Identifier: BSD-3-Clause
// Private: writes one Ethernet/[802.1Q]/IPv4-or-IPv6/TCP frame from a Segment into a caller buffer.
//
// Four header templates (IPv4/IPv6 x direction) are built once; a frame is one fixed-size copy of a
// template plus patches of lengths, addresses, ports, seq/ack, flags and checksums. Checksums are
// correct (IPv4 header and TCP): the payload is all zero bytes, which add nothing to a one's-complement
// sum, so the TCP checksum costs only the pseudo-header and the 20 header bytes.
// MACs: client 02:66:67:00:00:01, server 02:66:67:00:00:02 (locally administered, distinct per
// direction). IPv6 addresses are fd66:6c6f:7767:656e::<32 bits> (client) and
// fd66:6c6f:7767:656e:1::<32 bits> (server). Frames shorter than 60 bytes are zero-padded to 60.
#pragma once

#include <cstdint>

#include <flowgen/config.h>

#include <rte_tcp.h>

namespace flowcop::flowgen::detail {

struct Segment {
    uint32_t src_ip, dst_ip; // IPv4 address, or the low 32 bits of the IPv6 address
    uint32_t seq, ack;
    uint16_t sport, dport;
    uint16_t payload; // TCP payload bytes (written as zeros)
    uint16_t window;
    uint8_t flags; // TCP flag byte
    bool ipv6;
    bool from_client;
};

inline constexpr uint8_t kTcpFin = RTE_TCP_FIN_FLAG, kTcpSyn = RTE_TCP_SYN_FLAG, kTcpRst = RTE_TCP_RST_FLAG,
                         kTcpPsh = RTE_TCP_PSH_FLAG, kTcpAck = RTE_TCP_ACK_FLAG;

// Bytes write() may touch even for short frames: it copies whole templates.
inline constexpr uint32_t kTemplateBytes = 80;
inline constexpr uint32_t kMinFrame = 60;

class FrameWriter {
public:
    explicit FrameWriter(const Config& cfg) noexcept;

    // Writes the frame into buf and returns its length. buf must hold max_frame_len() bytes.
    uint32_t write(const Segment& s, uint8_t* buf) noexcept;

    // Payload of a data segment so that its frame is pkt_size bytes (at least 1 byte).
    uint16_t data_payload(bool ipv6) const noexcept { return _data_payload[ipv6 ? 1 : 0]; }

    // The largest frame write() produces, and never less than template_bytes.
    uint32_t max_frame_len() const noexcept { return _max_frame_len; }

private:
    alignas(64) uint8_t _tmpl[4][kTemplateBytes]; // [ipv6 * 2 + from_client]
    uint32_t _l2_len;                             // 14, or 18 with a VLAN tag
    uint32_t _v6_prefix_sum;                      // pseudo-header sum of both address prefixes
    uint16_t _data_payload[2];
    uint16_t _ip_id = 0;
    uint32_t _max_frame_len;
};

} // namespace flowcop::flowgen::detail
