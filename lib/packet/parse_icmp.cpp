// SPDX-License-Identifier: BSD-3-Clause
// ICMP and ICMPv6: the query / error / other classes of packet.h, and an error's quoted packet,
// whose flow the error belongs to. Every read is bounded by the ICMP message and the View's window.
#include <packet/packet.h>

#include "parse_internal.h"

namespace flowcop::packet {

namespace detail {
namespace {

namespace w = wire;

enum class IcmpClass : uint8_t { request, reply, error, other };

struct IcmpKind {
    IcmpClass cls;
    uint8_t query; // for a request or reply: the request's type, which names the query in the key
};

// netfilter's valid_new / invmap / icmp_is_err tables, as one switch per family.
IcmpKind classify(uint8_t type, bool v6) noexcept
{
    using enum IcmpClass;
    if (!v6) {
        switch (type) {
        case w::kIcmpEcho:
        case w::kIcmpTimestamp:
        case w::kIcmpInfoRequest:
        case w::kIcmpAddrMask: return {request, type};
        case w::kIcmpEchoReply: return {reply, w::kIcmpEcho};
        case w::kIcmpTimestampReply: return {reply, w::kIcmpTimestamp};
        case w::kIcmpInfoReply: return {reply, w::kIcmpInfoRequest};
        case w::kIcmpAddrMaskReply: return {reply, w::kIcmpAddrMask};
        case w::kIcmpDestUnreach:
        case w::kIcmpSourceQuench:
        case w::kIcmpRedirect:
        case w::kIcmpTimeExceeded:
        case w::kIcmpParamProblem: return {error, 0};
        default: return {other, 0};
        }
    }
    switch (type) {
    case w::kIcmpv6EchoRequest:
    case w::kIcmpv6NiQuery: return {request, type};
    case w::kIcmpv6EchoReply: return {reply, w::kIcmpv6EchoRequest};
    case w::kIcmpv6NiReply: return {reply, w::kIcmpv6NiQuery};
    case w::kIcmpv6DestUnreach:
    case w::kIcmpv6PacketTooBig:
    case w::kIcmpv6TimeExceeded:
    case w::kIcmpv6ParamProblem: return {error, 0};
    default: return {other, 0};
    }
}

// A query's key ports from the packet's side: (identifier, query) for the request, reversed for the
// reply, so both give the same canonical key.
void query_ports(IcmpKind k, uint16_t id, uint16_t& sport, uint16_t& dport) noexcept
{
    const bool request = k.cls == IcmpClass::request;
    sport = request ? id : k.query;
    dport = request ? k.query : id;
}

// [pos, pos + n) lies within [0, limit).
bool fits(uint32_t pos, uint32_t n, uint32_t limit) noexcept
{
    return pos <= limit && n <= limit - pos;
}

// The quoted packet at q, readable up to limit: its flow's key, seen from the direction the error
// travels (back to the quoted packet's sender). Returns icmp_error, or icmp_bad_quote without
// writing anything.
Verdict parse_quote(const View& v, uint32_t q, uint32_t limit, bool v6, Packet& out) noexcept
{
    const uint8_t* b = v.bytes;
    const uint32_t fixed = v6 ? w::kIpv6HeaderLen : w::kIpv4MinHeaderLen;
    if (!fits(q, fixed, limit))
        return Verdict::icmp_bad_quote;
    const uint8_t* ip = b + q;
    if ((ip[0] >> 4) != (v6 ? 6 : 4))
        return Verdict::icmp_bad_quote;
    const uint8_t *src, *dst;
    uint8_t proto;
    uint32_t l4;
    bool non_first = false;
    if (!v6) {
        const uint32_t ihl = uint32_t{ip[0] & 0x0fu} * 4;
        if (ihl < w::kIpv4MinHeaderLen || !fits(q, ihl, limit))
            return Verdict::icmp_bad_quote;
        proto = ip[9];
        non_first = (w::be16(ip + 6) & w::kIpv4FragOffsetMask) != 0;
        src = ip + 12, dst = ip + 16, l4 = q + ihl;
    } else {
        proto = ip[6];
        src = ip + 8, dst = ip + 24, l4 = q + w::kIpv6HeaderLen;
        for (unsigned walked = 0; is_walked_ext(proto) && !non_first; ++walked) {
            if (walked == kMaxIpv6ExtHeaders || !fits(l4, w::kIpv6ExtMinLen, limit))
                return Verdict::icmp_bad_quote;
            const uint8_t* h = b + l4;
            const uint32_t len = proto == w::kProtoFragment ? w::kIpv6ExtMinLen : ext_header_len(proto, h);
            non_first = proto == w::kProtoFragment && (w::be16(h + 2) & w::kIpv6FragOffsetMask) != 0;
            proto = h[0];
            if (!fits(l4, len, limit))
                return Verdict::icmp_bad_quote;
            l4 += len;
        }
    }

    uint16_t sport = 0, dport = 0; // the quoted packet's own
    const bool inner_icmp = proto == (v6 ? w::kProtoIcmpv6 : w::kProtoIcmp);
    if (!non_first && (proto == w::kProtoTcp || proto == w::kProtoUdp || inner_icmp)) {
        if (!fits(l4, w::kQuotedL4Len, limit))
            return Verdict::icmp_bad_quote;
        const uint8_t* h = b + l4;
        if (inner_icmp) {
            const IcmpKind k = classify(h[0], v6);
            if (k.cls == IcmpClass::error)
                return Verdict::icmp_bad_quote; // an error about an error
            if (k.cls != IcmpClass::other)
                query_ports(k, w::be16(h + 4), sport, dport);
        } else {
            sport = w::be16(h);
            dport = w::be16(h + 2);
        }
    }
    const uint32_t alen = v6 ? 16 : 4;
    set_key(out, dst, src, alen, dport, sport); // the same canonical key, the reverse direction
    out.key.proto = proto;
    out.sport = dport;
    out.dport = sport;
    return Verdict::icmp_error;
}

} // namespace

Verdict parse_icmp(const View& v, uint32_t off, uint32_t end, const Endpoints& ep, Packet& out) noexcept
{
    const bool v6 = ep.alen == 16;
    const uint32_t seg = end - off;
    const uint32_t base = v6 ? w::kIcmpv6HeaderLen : w::kIcmpHeaderLen;
    if (seg < base || !v.readable(off, base)) {
        set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
        return seg < base ? Verdict::truncated_l4 : v.unreadable(off, base, Verdict::truncated_l4);
    }
    const uint8_t* h = v.bytes + off;
    out.extra.icmp_type = h[0];
    out.extra.icmp_code = h[1];
    const IcmpKind k = classify(h[0], v6);
    if (k.cls == IcmpClass::other) {
        set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
        return Verdict::icmp_other;
    }
    static_assert(w::kIcmpQueryLen == w::kIcmpErrorLen, "queries and errors share one header length check");
    constexpr uint32_t kNeed = w::kIcmpQueryLen;
    if (seg < kNeed || !v.readable(off, kNeed)) {
        set_key(out, ep.src, ep.dst, ep.alen, 0, 0);
        return seg < kNeed ? Verdict::truncated_l4 : v.unreadable(off, kNeed, Verdict::truncated_l4);
    }
    if (k.cls == IcmpClass::error) {
        const uint32_t limit = end < v.window ? end : v.window;
        const Verdict q = parse_quote(v, off + w::kIcmpErrorLen, limit, v6, out);
        if (q != Verdict::icmp_error)
            set_key(out, ep.src, ep.dst, ep.alen, 0, 0); // the error's own addresses, as for any other verdict
        return q;
    }
    query_ports(k, w::be16(h + 4), out.sport, out.dport);
    set_key(out, ep.src, ep.dst, ep.alen, out.sport, out.dport);
    return Verdict::icmp;
}

} // namespace detail

bool icmp_is_request(const Packet& p) noexcept
{
    return p.verdict == Verdict::icmp &&
           detail::classify(p.extra.icmp_type, p.ip_version == 6).cls == detail::IcmpClass::request;
}

} // namespace flowcop::packet
