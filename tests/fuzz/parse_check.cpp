// SPDX-License-Identifier: BSD-3-Clause
// check_parse(): the parser's contract on one arbitrary frame (see parse_check.h).
#include "parse_check.h"

#include <packet/flow_key.h>
#include <packet/packet.h>

#include <cstring>
#include <memory>

namespace flowcop::fuzz {

namespace {

using packet::Packet;
using packet::Verdict;

std::unique_ptr<uint8_t[]> copy_of(const uint8_t* data, uint32_t n)
{
    std::unique_ptr<uint8_t[]> p(new uint8_t[n ? n : 1]);
    if (n)
        std::memcpy(p.get(), data, n);
    return p;
}

const char* check_key(const Packet& p)
{
    const packet::FlowKey& k = p.key;
    const int c = std::memcmp(k.addr_lo, k.addr_hi, 16);
    if (c > 0 || (c == 0 && k.port_lo > k.port_hi))
        return "key endpoints not in canonical order";
    uint8_t src[16], dst[16];
    uint16_t sport = 0, dport = 0;
    packet::key_endpoints(k, p.src_is_lo, src, sport, dst, dport);
    if (sport != p.sport || dport != p.dport)
        return "key_endpoints(key, src_is_lo) does not give the packet's ports back";
    if (packet::key_vlan_outer(k) != p.vlan_outer || packet::key_vlan_inner(k) != p.vlan_inner)
        return "key.vlan does not pack vlan_outer/vlan_inner";
    if (p.ip_version == 4 && !packet::key_is_ipv4(k))
        return "an IPv4 key is not IPv4-mapped";
    return nullptr;
}

// The ICMP classes, fragments and VLAN count (packet.h).
const char* check_protocol_fields(const Packet& p)
{
    const Verdict v = p.verdict;
    if (p.extra.vlan_tags > packet::kMaxVlanTags)
        return "vlan_tags beyond the tag limit";
    const bool icmp_class =
        v == Verdict::icmp || v == Verdict::icmp_error || v == Verdict::icmp_other || v == Verdict::icmp_bad_quote;
    if (icmp_class && p.l4_proto != (p.ip_version == 6 ? 58 : 1))
        return "an ICMP verdict whose protocol is not ICMP of its IP version";
    if (v == Verdict::icmp && p.key.proto != p.l4_proto)
        return "an ICMP query keyed under another protocol";
    // A request's side sees (identifier, its own type); a reply's (the request type, identifier).
    if (v == Verdict::icmp && packet::icmp_is_request(p) != (p.dport == p.extra.icmp_type))
        return "an ICMP query's ports do not hold its query type on the request's side";
    if ((v == Verdict::icmp_other || v == Verdict::icmp_bad_quote) && (p.key.port_lo | p.key.port_hi) != 0)
        return "an ICMP message without a flow has key ports";
    if (v == Verdict::fragment && (!(p.extra.frag_flags & packet::kFragmented) || p.extra.frag_offset == 0))
        return "a fragment verdict without a non-zero fragment offset";
    if (p.extra.frag_flags != 0 && (p.ip_version == 0 || !(p.extra.frag_flags & packet::kFragmented) ||
                                    (p.extra.frag_flags & ~(packet::kFragmented | packet::kFragMore)) ||
                                    (p.extra.frag_offset == 0 && !(p.extra.frag_flags & packet::kFragMore))))
        return "frag_flags set on something that is not one fragment of a larger IP datagram";
    if (p.extra.frag_flags == 0 && (p.extra.frag_offset | p.extra.frag_id | p.extra.frag_data_len) != 0)
        return "fragment fields on a whole datagram";
    if (p.extra.frag_offset != 0 && v != Verdict::fragment)
        return "a non-first fragment not classified fragment";
    return nullptr;
}

} // namespace

const char* check_parse(const uint8_t* data, size_t size)
{
    // A frame has at most 2^32 - 1 bytes (the length type); libFuzzer never gets close.
    const uint32_t len = size > UINT32_MAX ? UINT32_MAX : uint32_t(size);
    Packet p;
    const Verdict v = packet::parse(len ? data : nullptr, len, p);
    if (v != p.verdict)
        return "return value != out.verdict";
    if (static_cast<unsigned>(v) >= packet::kVerdictCount)
        return "verdict out of range";
    if (p.ip_len > len)
        return "ip_len > the length given";
    if ((p.ip_len != 0) != (p.ip_version != 0))
        return "ip_len without an IP header, or an IP header without ip_len";
    if (p.l4_payload_len > len)
        return "l4_payload_len exceeds the frame";
    if (v == Verdict::tcp && ((p.ip_version != 4 && p.ip_version != 6) || p.key.proto != 6 || p.l4_proto != 6))
        return "a tcp verdict without IP version 4/6 and protocol 6";
    if ((p.tcp_opt & packet::kTcpOptScaleMask) > packet::kTcpMaxWscale)
        return "a window scale above 14";
    if (v == Verdict::tcp && (p.tcp_opt & packet::kTcpOptPresent) == 0 && (p.tcp_opt != 0 || p.sack != p.ack))
        return "TCP option results without option bytes";
    if (v != Verdict::tcp && (p.tcp_opt != 0 || p.sack != 0))
        return "TCP option results on a packet that is not tcp";
    if (p.ip_version != 0)
        if (const char* e = check_key(p))
            return e;
    if (const char* e = check_protocol_fields(p))
        return e;

    Packet again;
    packet::parse(len ? data : nullptr, len, again);
    if (std::memcmp(&again, &p, sizeof p) != 0)
        return "two parses of the same frame differ";

    const uint32_t cap = len < packet::kMaxHeaderBytes ? len : packet::kMaxHeaderBytes;
    const std::unique_ptr<uint8_t[]> front = copy_of(data, cap);
    Packet q;
    packet::parse(front.get(), cap, len, q);
    if (std::memcmp(&q, &p, sizeof p) != 0)
        return "parse(front, min(len, cap), len) differs from parse(frame, len)";

    const uint32_t short_len = cap / 3;
    const std::unique_ptr<uint8_t[]> shorter = copy_of(data, short_len);
    Packet s;
    const Verdict sv = packet::parse(shorter.get(), short_len, len, s);
    if (sv != s.verdict || static_cast<unsigned>(sv) >= packet::kVerdictCount || s.ip_len > len)
        return "the core given fewer header bytes than its precondition broke its output contract";
    return nullptr;
}

} // namespace flowcop::fuzz
