// SPDX-License-Identifier: BSD-3-Clause
// Parsing of control-plane parameters, shared by the telemetry handlers and
// their tests: pure functions, no EAL, no service, any thread.
//
// Every parser takes the raw parameter text DPDK telemetry hands over (at most
// about 1000 bytes: the rest of an oversized request is cut by the socket read)
// and returns "" on success or ONE sentence saying what is wrong, quoting the bad
// part through reply_text() so the sentence is safe to put in a telemetry reply.
// On error the output argument may be partly written; callers discard it.
#pragma once

#include <service/options/options.h>

#include <conntrack/flow_snapshot.h>
#include <packet/flow_key.h>

#include <string>
#include <string_view>
#include <vector>

namespace flowcop::app {

// "[PROTO,]IP,PORT,IP,PORT[,VLAN[,VLAN]]" (IPv4 or IPv6, either direction) -> the canonical key.
// PROTO is a name parse_proto() knows (tcp, the default, udp, icmp, icmpv6, gre, ...) or a number;
// the ports are the key's as /flowcop/flows shows them: an ICMP query's are its identifier and
// query type (8 for echo), other protocols' 0. The key's zone is 0; each worker also tries its ports' --port-zone zones.
// Returns "" or one sentence saying what is wrong.
std::string parse_flow_tuple(const std::string& params, packet::FlowKey& key);

// "" for commands that take no parameters (/flowcop/stats, /flowcop/config), else the error.
std::string parse_no_params(const std::string& params);

// Makes `text` safe for a telemetry string value: DPDK 22.11's JSON writer drops
// control characters and emits an invalid escape for any byte >= 0x80 (it reads
// it as a negative char), so every byte outside printable ASCII becomes "\xNN".
// The result is cut to at most max_len bytes (RTE_TEL_MAX_STRING_LEN - 1 for a
// value) without splitting an escape, so an oversized value is shortened, never
// rejected by DPDK.
std::string reply_text(std::string_view text, size_t max_len = 127);

// A user-supplied part of an error sentence: reply_text() in single quotes, cut after 40 bytes with
// "..." so that what the sentence says about it still fits in one telemetry string.
std::string quoted(const std::string& s);

// An IPv4 (dotted quad) or IPv6 address as a key stores it: 16 bytes, IPv4 IPv4-mapped. `typed_ipv4`,
// when given, tells whether the text was a dotted quad (an IPv6 text may also be IPv4-mapped).
// False, with out zeroed or partly written, for anything else (an embedded NUL included).
bool parse_addr(const std::string& s, uint8_t out[16], bool* typed_ipv4 = nullptr);

struct FlowQuery {
    conntrack::SnapshotFilter filter;
    bool match_lcore = false;
    unsigned lcore = 0;
    unsigned limit = 20;
    static constexpr unsigned kMaxLimit = 32; // one telemetry reply holds about this many flows
};
// "" | "addr=IP,port=N,proto=tcp|udp|icmp|other,lcore=N,limit=N" in any order.
std::string parse_flow_query(const std::string& params, FlowQuery& q);

// "NAME,VALUE": applies the change to `opt` using the command line's own parser and
// ranges (so a value is valid at run time exactly when it is valid as a flag).
// Returns "" or the error sentence.
std::string apply_setting(const std::string& params, Options& opt);
// The names /flowcop/set accepts, in help order (telemetry lists them in its error reply).
std::vector<std::string> settable_names();

} // namespace flowcop::app
