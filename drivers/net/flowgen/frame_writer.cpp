// SPDX-License-Identifier: BSD-3-Clause
#include "frame_writer.h"

#include <algorithm>
#include <cstring>

namespace flowcop::flowgen::detail {
namespace {

constexpr uint8_t kClientMac[6] = {0x02, 0x66, 0x67, 0x00, 0x00, 0x01};
constexpr uint8_t kServerMac[6] = {0x02, 0x66, 0x67, 0x00, 0x00, 0x02};
constexpr uint8_t kV6ClientPrefix[12] = {0xfd, 0x66, 0x6c, 0x6f, 0x77, 0x67, 0x65, 0x6e, 0, 0, 0, 0};
constexpr uint8_t kV6ServerPrefix[12] = {0xfd, 0x66, 0x6c, 0x6f, 0x77, 0x67, 0x65, 0x6e, 0, 1, 0, 0};
constexpr uint32_t kIpv4Hdr = 20, kIpv6Hdr = 40, kTcpHdr = 20;

inline void put16(uint8_t* p, uint32_t v) noexcept
{
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

inline void put32(uint8_t* p, uint32_t v) noexcept
{
    put16(p, v >> 16);
    put16(p + 2, v);
}

inline uint32_t halves(uint32_t v) noexcept
{
    return (v >> 16) + (v & 0xffff);
}

inline uint16_t fold(uint32_t sum) noexcept
{
    sum = (sum >> 16) + (sum & 0xffff);
    sum = (sum >> 16) + (sum & 0xffff);
    return static_cast<uint16_t>(~sum);
}

uint32_t sum_bytes(const uint8_t* p, unsigned n) noexcept
{
    uint32_t s = 0;
    for (unsigned i = 0; i + 1 < n; i += 2)
        s += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    return s;
}

// Ethernet (+ tag) header; returns its length.
uint32_t put_l2(uint8_t* p, bool from_client, const Config& cfg, uint16_t ethertype) noexcept
{
    std::memcpy(p, from_client ? kServerMac : kClientMac, 6);
    std::memcpy(p + 6, from_client ? kClientMac : kServerMac, 6);
    uint32_t off = 12;
    if (cfg.vlan) {
        put16(p + off, 0x8100);
        put16(p + off + 2, *cfg.vlan);
        off += 4;
    }
    put16(p + off, ethertype);
    return off + 2;
}

} // namespace

FrameWriter::FrameWriter(const Config& cfg) noexcept
{
    std::memset(_tmpl, 0, sizeof(_tmpl));
    for (int from_client = 0; from_client < 2; ++from_client) {
        uint8_t* t4 = _tmpl[from_client];
        _l2_len = put_l2(t4, from_client != 0, cfg, 0x0800);
        uint8_t* ip = t4 + _l2_len;
        ip[0] = 0x45;
        put16(ip + 6, 0x4000); // DF
        ip[8] = 64;            // TTL
        ip[9] = 6;             // TCP
        ip[kIpv4Hdr + 12] = 0x50;

        uint8_t* t6 = _tmpl[2 + from_client];
        put_l2(t6, from_client != 0, cfg, 0x86dd);
        ip = t6 + _l2_len;
        ip[0] = 0x60;
        ip[6] = 6;  // next header TCP
        ip[7] = 64; // hop limit
        std::memcpy(ip + 8, from_client ? kV6ClientPrefix : kV6ServerPrefix, 12);
        std::memcpy(ip + 24, from_client ? kV6ServerPrefix : kV6ClientPrefix, 12);
        ip[kIpv6Hdr + 12] = 0x50;
    }
    _v6_prefix_sum = sum_bytes(kV6ClientPrefix, 12) + sum_bytes(kV6ServerPrefix, 12);

    const uint32_t hdr4 = _l2_len + kIpv4Hdr + kTcpHdr, hdr6 = _l2_len + kIpv6Hdr + kTcpHdr;
    _data_payload[0] = static_cast<uint16_t>(cfg.pkt_size > hdr4 ? cfg.pkt_size - hdr4 : 1);
    _data_payload[1] = static_cast<uint16_t>(cfg.pkt_size > hdr6 ? cfg.pkt_size - hdr6 : 1);
    _max_frame_len = std::max({kTemplateBytes, hdr4 + _data_payload[0], hdr6 + _data_payload[1]});
}

uint32_t FrameWriter::write(const Segment& s, uint8_t* buf) noexcept
{
    std::memcpy(buf, _tmpl[(s.ipv6 ? 2 : 0) + (s.from_client ? 1 : 0)], kTemplateBytes);
    uint8_t* ip = buf + _l2_len;
    const uint32_t tcp_len = kTcpHdr + s.payload;
    uint32_t sum = halves(s.src_ip) + halves(s.dst_ip) + 6 + tcp_len; // pseudo-header
    uint8_t* tcp;
    if (!s.ipv6) {
        const uint32_t total = kIpv4Hdr + tcp_len;
        const uint16_t id = _ip_id++;
        put16(ip + 2, total);
        put16(ip + 4, id);
        put32(ip + 12, s.src_ip);
        put32(ip + 16, s.dst_ip);
        const uint32_t ip_sum = 0x4500 + 0x4000 + 0x4006 + total + id + halves(s.src_ip) + halves(s.dst_ip);
        put16(ip + 10, fold(ip_sum));
        tcp = ip + kIpv4Hdr;
    } else {
        put16(ip + 4, tcp_len);
        put32(ip + 20, s.src_ip);
        put32(ip + 36, s.dst_ip);
        sum += _v6_prefix_sum;
        tcp = ip + kIpv6Hdr;
    }
    put16(tcp, s.sport);
    put16(tcp + 2, s.dport);
    put32(tcp + 4, s.seq);
    put32(tcp + 8, s.ack);
    tcp[13] = s.flags;
    put16(tcp + 14, s.window);
    sum += s.sport + s.dport + halves(s.seq) + halves(s.ack) + (0x5000u | s.flags) + s.window;
    put16(tcp + 16, fold(sum));

    const uint32_t hdr = static_cast<uint32_t>(tcp - buf) + kTcpHdr;
    const uint32_t len = std::max(hdr + s.payload, kMinFrame);
    // The template copy already zeroed [hdr, template_bytes).
    if (len > kTemplateBytes)
        std::memset(buf + kTemplateBytes, 0, len - kTemplateBytes);
    return len;
}

} // namespace flowcop::flowgen::detail
