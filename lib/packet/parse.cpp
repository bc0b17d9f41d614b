// SPDX-License-Identifier: BSD-3-Clause
// The parse core: Ethernet and VLAN, IPv4, then the shared L4 step. IPv6 lives in
// parse_ipv6.cpp. Checks run in wire order so the verdict names the first broken rule.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include <packet/packet.h>

#include "parse_internal.h"

namespace flowcop::packet {
namespace {

using detail::View;
namespace w = wire;

Verdict parse_ipv4(const View& v, uint32_t l3, Packet& out) noexcept
{
    if (!v.readable(l3, w::kIpv4MinHeaderLen))
        return v.unreadable(l3, w::kIpv4MinHeaderLen, Verdict::truncated_l3);
    const uint8_t* ip = v.bytes + l3;
    if ((ip[0] >> 4) != 4)
        return Verdict::ip_bad_version;
    const uint32_t ihl = uint32_t{ip[0] & 0x0fu} * 4;
    const uint32_t avail = v.frame - l3; // l3 < window <= frame
    if (ihl < w::kIpv4MinHeaderLen || ihl > avail)
        return Verdict::ipv4_bad_ihl;

    const uint8_t proto = ip[9];
    const uint16_t frag = w::be16(ip + 6);
    uint32_t total = w::be16(ip + 2);
    bool length_from_frame = false;
    if (total == 0 && proto == w::kProtoTcp && avail > 0xffff && (frag & w::kIpv4MfAndOffset) == 0) {
        total = avail; // BIG TCP (never fragmented): see packet.h
        length_from_frame = true;
    } else if (total < ihl || total > avail) {
        return Verdict::ip_bad_total_length;
    }

    out.ip_version = 4;
    out.ip_len = total;
    out.l4_proto = proto;
    const detail::Endpoints ep{ip + 12, ip + 16, 4};
    if (frag & w::kIpv4MfAndOffset) {
        detail::set_fragment(out, w::be16(ip + 4), (uint32_t{frag} & w::kIpv4FragOffsetMask) * 8,
                             (frag & w::kIpv4MoreFragments) != 0, total - ihl);
        if (frag & w::kIpv4FragOffsetMask) {
            detail::set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return Verdict::fragment;
        }
    }
    return detail::parse_l4(v, l3 + ihl, l3 + total, length_from_frame, ep, out);
}

bool is_vlan_tpid(uint16_t type) noexcept
{
    return type == w::kEthertypeVlan || type == w::kEthertypeQinq || type == w::kEthertypeQinqOld;
}

void set_key_vlan(Packet& out) noexcept
{
    const uint32_t packed = (uint32_t{out.vlan_outer} << 12) | out.vlan_inner;
    out.key.vlan[0] = static_cast<uint8_t>(packed >> 16);
    out.key.vlan[1] = static_cast<uint8_t>(packed >> 8);
    out.key.vlan[2] = static_cast<uint8_t>(packed);
}

static_assert(kKeyVlanTags == 2, "Packet and FlowKey hold an outer and an inner VLAN ID");

Verdict parse_frame(const View& v, Packet& out) noexcept
{
    if (!v.readable(0, w::kEthHeaderLen))
        return v.unreadable(0, w::kEthHeaderLen, Verdict::truncated_l2);
    uint16_t type = w::be16(v.bytes + 12);
    if (type == w::kEthertypeIpv4)
        return parse_ipv4(v, w::kEthHeaderLen, out);

    uint32_t off = w::kEthHeaderLen;
    unsigned tags = 0;
    while (is_vlan_tpid(type)) {
        if (tags == kMaxVlanTags)
            return Verdict::vlan_too_deep;
        // A tag is the 2-byte TCI plus the next ethertype (the TPID was the previous one).
        if (!v.readable(off, w::kVlanTagLen))
            return v.unreadable(off, w::kVlanTagLen, Verdict::truncated_l2);
        const auto vid = static_cast<uint16_t>(w::be16(v.bytes + off) & 0x0fff); // drop PCP and DEI
        if (tags == 0)
            out.vlan_outer = vid;
        else if (tags == 1)
            out.vlan_inner = vid; // tags 3 and 4 are skipped
        type = w::be16(v.bytes + off + 2);
        off += w::kVlanTagLen;
        ++tags;
    }
    set_key_vlan(out);
    out.extra.vlan_tags = static_cast<uint8_t>(tags);
    if (type == w::kEthertypeIpv4)
        return parse_ipv4(v, off, out);
    if (type == w::kEthertypeIpv6)
        return detail::parse_ipv6(v, off, out);
    return Verdict::non_ip;
}

} // namespace

namespace detail {

Verdict parse_general(const uint8_t* hdr, uint32_t window, uint32_t frame_len, Packet& out) noexcept
{
    std::memset(&out, 0, sizeof out);
    const View v{hdr, window, frame_len};
    out.verdict = parse_frame(v, out);
    return out.verdict;
}

} // namespace detail

namespace {

// detail::parse_ipv4_tcp_fast, inline so that parse() holds no call before its tail call to the
// general path: nothing to save and restore on the common frame.
inline bool ipv4_tcp_fast(const uint8_t* b, uint32_t window, uint32_t frame_len, Packet& out) noexcept
{
    constexpr uint32_t kL3 = w::kEthHeaderLen;
    constexpr uint32_t kL4 = kL3 + w::kIpv4MinHeaderLen;
    if (window < kL4 + w::kTcpMinHeaderLen)
        return false;
    // Untagged IPv4, version 4 with IHL 5 (no options), TCP, not a fragment (a first fragment's
    // frag_* fields are the general path's).
    if (w::be16(b + 12) != w::kEthertypeIpv4 || b[kL3] != 0x45 || b[kL3 + 9] != w::kProtoTcp ||
        (w::be16(b + kL3 + 6) & w::kIpv4MfAndOffset) != 0)
        return false;
    // Total length covers both fixed headers and fits the frame (0, BIG TCP, is not taken here).
    const uint32_t total = w::be16(b + kL3 + 2);
    if (total < w::kIpv4MinHeaderLen + w::kTcpMinHeaderLen || total > frame_len - kL3)
        return false;
    const uint8_t* th = b + kL4;
    const uint32_t seg = total - w::kIpv4MinHeaderLen;
    const uint32_t hlen = (uint32_t{th[12]} >> 4) * 4;
    if (hlen < w::kTcpMinHeaderLen || hlen > seg || window < kL4 + hlen)
        return false;

    // Zero everything parse_general's memset would: the fields before the protocol group (padding
    // included), then the group, in stores the compiler keeps inline (packet.h).
    std::memset(&out, 0, offsetof(Packet, extra));
    out.extra = {};
    out.ip_len = total;
    out.ip_version = 4;
    out.l4_proto = w::kProtoTcp;
    detail::read_tcp_fixed_header(th, out);
    out.l4_payload_len = seg - hlen;
    detail::read_tcp_options(th, hlen, out);
    detail::set_key(out, b + kL3 + 12, b + kL3 + 16, 4, out.sport, out.dport);
    out.verdict = Verdict::tcp;
    return true;
}

} // namespace

bool detail::parse_ipv4_tcp_fast(const uint8_t* hdr, uint32_t window, uint32_t frame_len, Packet& out) noexcept
{
    return ipv4_tcp_fast(hdr, window, frame_len, out);
}

Verdict parse(const uint8_t* hdr, uint32_t hdr_len, uint32_t frame_len, Packet& out) noexcept
{
    const uint32_t window = std::min({hdr_len, frame_len, kMaxHeaderBytes});
    if (ipv4_tcp_fast(hdr, window, frame_len, out)) [[likely]]
        return Verdict::tcp;
    return detail::parse_general(hdr, window, frame_len, out);
}

Verdict parse(const uint8_t* frame, uint32_t len, Packet& out) noexcept
{
    return parse(frame, len, len, out);
}

} // namespace flowcop::packet
