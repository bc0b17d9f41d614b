// SPDX-License-Identifier: BSD-3-Clause
// The information elements flowcop exports (RFC 7011 / 7012 / 5103), and flowcop's own.
//
// Contract: one table, kElements, indexed by Element, gives each element's IANA id, encoded length
// and enterprise number (0 = IANA). Templates (template.h) are ordered lists of Elements; nothing else
// knows element numbers. Lengths are fixed (no variable-length elements), so every record of a
// template has the same size. Reduced-size encoding (RFC 7011 6.2) is used where flowcop's values
// are narrower than the abstract type: tcpControlBits in 1 octet, ingressInterface in 4.
//
// Enterprise numbers:
// - 29305 is the reverse-element number RFC 5103 assigns: an element under it is the reverse
//   direction's (responder to originator) value of the IANA element with the same id.
// - flowcop has no Private Enterprise Number of its own. Its elements use 32473, the number IANA
//   reserves for documentation and examples (RFC 5612), so they cannot collide with any vendor's
//   registered elements; a collector must not assume 32473 identifies flowcop alone. Change
//   kFlowcopPen (one place) if flowcop registers a PEN. Its element ids are:
//     1 flowcopState      unsigned8  the flow's protocol state when the record was made (for TCP,
//                                    the tcpstate::State value: 0 none, 1 SYN_SENT, ... see ipfix.md)
//     2 flowcopEndReason  unsigned8  flowcop's own end reason (conntrack::Reason value), finer than
//                                    flowEndReason (reset and closed are both "end of flow detected")
//     3 flowcopFlowId     unsigned64 the flow's id, stable from its first to its last record
#pragma once

#include <cstdint>

namespace flowcop::ipfix {

inline constexpr uint32_t kReversePen = 29305; // RFC 5103
inline constexpr uint32_t kFlowcopPen = 32473; // RFC 5612 documentation number: see above

enum class Element : uint8_t {
    flow_start_ms, // flowStartMilliseconds: the first packet
    flow_end_ms,   // flowEndMilliseconds: the last packet
    src_ipv4,      // sourceIPv4Address: the originator
    dst_ipv4,      // destinationIPv4Address
    src_ipv6,      // sourceIPv6Address
    dst_ipv6,      // destinationIPv6Address
    src_port,      // sourceTransportPort (0 for ICMP)
    dst_port,      // destinationTransportPort (0 for ICMP)
    icmp_v4,       // icmpTypeCodeIPv4: type << 8 | code of an ICMP flow's originator (IPv4 only)
    icmp_v6,       // icmpTypeCodeIPv6: the same for an ICMPv6 flow
    protocol,      // protocolIdentifier
    octets,        // octetDeltaCount, originator -> responder: IP bytes (RFC 7012: from the IP header)
    packets,       // packetDeltaCount, originator -> responder
    rev_octets,    // reverse octetDeltaCount (RFC 5103): responder -> originator
    rev_packets,   // reverse packetDeltaCount
    rev_l2_octets, // reverse layer2OctetDeltaCount (before the forward one: template.h)
    l2_octets,     // layer2OctetDeltaCount: frame bytes, derived (template.h)
    rev_tcp_flags, // reverse tcpControlBits (placed before tcpControlBits: see template.cpp)
    tcp_flags,     // tcpControlBits: OR of the flags the originator sent
    end_reason,    // flowEndReason (end_reason.h)
    vlan,          // vlanId: the outer (or only) 802.1Q tag
    post_vlan,     // postVlanId: flowcop never rewrites tags, so the same VLAN
    customer_vlan, // dot1qCustomerVlanId: the inner tag of a QinQ frame
    ingress_if,    // ingressInterface: the DPDK port id
    fc_state,      // flowcopState (kFlowcopPen)
    fc_end_reason, // flowcopEndReason (kFlowcopPen)
    fc_flow_id,    // flowcopFlowId (kFlowcopPen)
    count
};

struct ElementSpec {
    uint16_t id;         // without the enterprise bit
    uint16_t length;     // octets in a data record
    uint32_t enterprise; // 0 = IANA
    const char* name;
};

inline constexpr ElementSpec kElements[] = {
    {152, 8, 0, "flowStartMilliseconds"},
    {153, 8, 0, "flowEndMilliseconds"},
    {8, 4, 0, "sourceIPv4Address"},
    {12, 4, 0, "destinationIPv4Address"},
    {27, 16, 0, "sourceIPv6Address"},
    {28, 16, 0, "destinationIPv6Address"},
    {7, 2, 0, "sourceTransportPort"},
    {11, 2, 0, "destinationTransportPort"},
    {32, 2, 0, "icmpTypeCodeIPv4"},
    {139, 2, 0, "icmpTypeCodeIPv6"},
    {4, 1, 0, "protocolIdentifier"},
    {1, 8, 0, "octetDeltaCount"},
    {2, 8, 0, "packetDeltaCount"},
    {1, 8, kReversePen, "reverseOctetDeltaCount"},
    {2, 8, kReversePen, "reversePacketDeltaCount"},
    {352, 8, kReversePen, "reverseLayer2OctetDeltaCount"},
    {352, 8, 0, "layer2OctetDeltaCount"},
    {6, 1, kReversePen, "reverseTcpControlBits"},
    {6, 1, 0, "tcpControlBits"},
    {136, 1, 0, "flowEndReason"},
    {58, 2, 0, "vlanId"},
    {59, 2, 0, "postVlanId"},
    {245, 2, 0, "dot1qCustomerVlanId"},
    {10, 4, 0, "ingressInterface"},
    {1, 1, kFlowcopPen, "flowcopState"},
    {2, 1, kFlowcopPen, "flowcopEndReason"},
    {3, 8, kFlowcopPen, "flowcopFlowId"},
};
static_assert(sizeof(kElements) / sizeof(kElements[0]) == static_cast<unsigned>(Element::count));

constexpr const ElementSpec& spec(Element e) noexcept
{
    return kElements[static_cast<unsigned>(e)];
}

// RFC 7011 numbers.
inline constexpr uint16_t kVersion = 10;
inline constexpr uint16_t kTemplateSetId = 2;
inline constexpr uint16_t kMinDataSetId = 256;
inline constexpr uint16_t kEnterpriseBit = 0x8000;
inline constexpr unsigned kMessageHeaderBytes = 16;
inline constexpr unsigned kSetHeaderBytes = 4;

} // namespace flowcop::ipfix
