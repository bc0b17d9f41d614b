// SPDX-License-Identifier: BSD-3-Clause
// The parser fuzz target's body: one frame through packet::parse, checked against packet.h's and
// flow_key.h's contracts:
// - return value == out.verdict, a Verdict below count; ip_len within it, set exactly when ip_version is;
//   l4_payload_len never exceeds the frame;
// - a tcp verdict has IP version 4 or 6 and proto 6;
// - TCP options (tcp_options.h): the window scale is at most 14; without option bytes tcp_opt is 0 and
//   sack == ack; a verdict other than tcp has neither;
// - once the IP header parsed (ip_version != 0, whatever the verdict): the key is canonical (lo
//   endpoint <= hi endpoint), key_endpoints(key, src_is_lo) gives back the packet's own ports,
//   key.vlan packs vlan_outer/vlan_inner, and an IPv4 key is IPv4-mapped;
// - the protocol fields: ICMP verdicts carry ICMP of their IP version, a query's ports hold its
//   query type on the request's side, ICMP without a flow has no key ports; frag_* fields only on
//   fragments (a fragment verdict exactly for a non-zero offset); vlan_tags within the limit;
// - a second parse gives identical bytes (deterministic, out fully written);
// - parse(front, min(len, max_header_bytes), len) on a copy of only the capped front gives
//   identical bytes (parse_mbuf's contract), and the core given even fewer header bytes than its
//   precondition asks (a third of them) still returns a valid verdict without reading past them.
// Every copy is an exact-size heap allocation, so under ASan a read past the bytes given is
// reported. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flowcop::fuzz {

// nullptr when every rule held, else the first rule broken (a static string).
const char* check_parse(const uint8_t* data, size_t size);

} // namespace flowcop::fuzz
