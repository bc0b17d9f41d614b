// SPDX-License-Identifier: BSD-3-Clause
// flowcop's data templates and the encoding of one flow record (RFC 7011 section 3.4).
//
// A template is chosen per record from what the Event carries: the address family, whether the flow
// is ICMP (protocol 1 over IPv4, 58 over IPv6), and which optional fields are present
// (Event::present: TCP flags, ingress port, flow id). Each of the 32 combinations is a fixed template
// with its own id (kFirstTemplateId + variant), built once; fields absent from an Event are left out
// of its template rather than sent as a false zero. Every field has a fixed length, so a template's
// records all have record_bytes octets.
//
// ICMP flows: an ICMP query flow's key holds (identifier, query type) where other flows have ports
// (lib/packet/packet.h). Its record carries transport ports 0 and icmpTypeCodeIPv4/IPv6 = the
// originator's type << 8 | code, as collectors expect (nfdump shows it as "type.code" in its
// destination port column). The code is 0: every query type flowcop tracks as a flow has code 0,
// except ICMPv6 node information (RFC 4620), whose code the flow table does not keep. The identifier
// is not exported (no IANA element holds it); flowcopFlowId tells a host pair's pings apart.
//
// Element order: icmpTypeCode follows the transport ports, because nfdump files it in its destination
// port slot and writes fields in template order. The reverse tcpControlBits precedes the forward one because nfdump 1.7 (Debian 12)
// maps every reverse element it has no reverse slot for onto the forward element, and its decoder
// writes fields in template order: placed first, the forward value is the one it keeps.
//
// Byte counts: octetDeltaCount and its reverse are the flow table's counts, IP bytes (RFC 7012: each
// packet's IP length, a fragment's own). layer2OctetDeltaCount (352) and its reverse are derived here,
// not counted: IP bytes + packets x (14 + 4 x the flow's VLAN tags), the tags read from its key
// (vlan_inner set: 2, vlan_outer set: 1). Exact for a flow whose frames all carry the tags its key
// shows (--vlan-key both); an estimate that leaves out Ethernet padding of frames under 60 bytes, a
// third tag, tags whose ID is 0, and tags the key dropped (--vlan-key outer or none). No FCS, as the
// port counts none. The reverse layer-2 count precedes the forward one for nfdump's sake (as
// tcpControlBits below).
//
// Threading: the templates are immutable after first use; encode functions are reentrant.
#pragma once

#include <ipfix/elements.h>

#include <events/event.h>

#include <cstddef>
#include <cstdint>

namespace flowcop::ipfix {

inline constexpr uint16_t kFirstTemplateId = 256;
inline constexpr unsigned kVariants = 32;
inline constexpr unsigned kMaxFields = static_cast<unsigned>(Element::count);

struct Template {
    uint16_t id;
    uint8_t n_fields;
    Element fields[kMaxFields];
    uint16_t record_bytes;   // one data record
    uint16_t template_bytes; // the template record: 4-octet header + field specifiers
};

// Variant bits: kVariantIcmp | kVariantIpv6 | the Event's kHas* bits that shape the template.
inline constexpr unsigned kVariantIpv6 = 0x08;
inline constexpr unsigned kVariantIcmp = 0x10; // ICMP over IPv4 or ICMPv6 over IPv6
unsigned variant_of(const events::Event& e) noexcept;
const Template& template_of(unsigned variant) noexcept;

// The largest record and template of any variant, for sizing messages.
unsigned max_record_bytes() noexcept;
unsigned max_template_bytes() noexcept;

// Writes the template record (header and field specifiers) at `out`, which has room for
// t.template_bytes. @return t.template_bytes.
size_t write_template(const Template& t, uint8_t* out) noexcept;

// layer2OctetDeltaCount of `e` in direction `dir` (0 originator, 1 reply): see "Byte counts" above.
uint64_t layer2_octets(const events::Event& e, unsigned dir) noexcept;

// Writes `e` as a data record of `t` (t must be template_of(variant_of(e))) at `out`, which has room
// for t.record_bytes. @return t.record_bytes.
size_t write_record(const Template& t, const events::Event& e, uint8_t* out) noexcept;

} // namespace flowcop::ipfix
