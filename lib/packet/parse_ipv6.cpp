// SPDX-License-Identifier: BSD-3-Clause
// IPv6: fixed header, then a bounded walk over the extension-header chain to the
// upper-layer header (RFC 8200 4). Limits and policy are documented in packet.h.
#include <packet/packet.h>

#include "parse_internal.h"

namespace flowcop::packet::detail {

namespace w = wire;

Verdict parse_ipv6(const View& v, uint32_t l3, Packet& out) noexcept
{
    if (!v.readable(l3, w::kIpv6HeaderLen))
        return v.unreadable(l3, w::kIpv6HeaderLen, Verdict::truncated_l3);
    const uint8_t* ip = v.bytes + l3;
    if ((ip[0] >> 4) != 6)
        return Verdict::ip_bad_version;
    const uint32_t avail = v.frame - l3 - w::kIpv6HeaderLen;
    uint32_t payload = w::be16(ip + 4);
    bool length_from_frame = false;
    if (payload == 0 && avail > 0xffff) {
        payload = avail; // BIG TCP (with or without an RFC 2675 jumbo option); TCP-only, checked in parse_l4
        length_from_frame = true;
    } else if (payload > avail) {
        return Verdict::ip_bad_total_length;
    }

    out.ip_version = 6;
    out.ip_len = w::kIpv6HeaderLen + payload;
    uint8_t nh = ip[6];
    out.l4_proto = nh;
    const Endpoints ep{ip + 8, ip + 24, 16};
    const uint32_t end = l3 + w::kIpv6HeaderLen + payload;
    uint32_t off = l3 + w::kIpv6HeaderLen;

    for (unsigned walked = 0; is_walked_ext(nh); ++walked) {
        if (walked == kMaxIpv6ExtHeaders) {
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return Verdict::ipv6_ext_too_long;
        }
        // Every walked header starts with next-header and a length byte and is at least
        // 8 bytes; the fragment header is exactly 8.
        if (end - off < w::kIpv6ExtMinLen || !v.readable(off, w::kIpv6ExtMinLen)) {
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return end - off < w::kIpv6ExtMinLen ? Verdict::ipv6_ext_truncated
                                                 : v.unreadable(off, w::kIpv6ExtMinLen, Verdict::ipv6_ext_truncated);
        }
        const uint8_t* h = v.bytes + off;
        uint32_t len;
        if (nh == w::kProtoFragment) {
            len = w::kIpv6ExtMinLen;
            if (length_from_frame)
                return Verdict::ip_bad_total_length; // a GSO super-packet is never fragmented
            const uint16_t offset_m = w::be16(h + 2);
            const uint32_t offset = offset_m & w::kIpv6FragOffsetMask; // 8-byte units << 3: bytes
            const bool more = (offset_m & w::kIpv6FragMore) != 0;
            if (offset != 0 || more) // an atomic fragment (RFC 6946) is a whole datagram
                set_fragment(out, w::be32(h + 4), offset, more, end - off - w::kIpv6ExtMinLen);
            if (offset != 0) {
                out.l4_proto = h[0];
                set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
                return Verdict::fragment;
            }
        } else {
            len = ext_header_len(nh, h);
        }
        nh = h[0];
        out.l4_proto = nh;
        if (len > end - off) {
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
            return Verdict::ipv6_ext_truncated;
        }
        off += len;
    }
    return parse_l4(v, off, end, length_from_frame, ep, out);
}

} // namespace flowcop::packet::detail
