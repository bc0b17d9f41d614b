// SPDX-License-Identifier: BSD-3-Clause
// How the control plane shows one flow: conntrack's flags and the control socket's JSON line.
//
// Flags, as conntrack defines them (include/uapi/linux/netfilter/nf_conntrack_common.h and conntrack -L):
//   SEEN_REPLY  a packet from the reply side was accepted (IPS_SEEN_REPLY);
//   UNREPLIED   the opposite: no reply accepted yet (conntrack -L prints [UNREPLIED] when SEEN_REPLY is
//               clear), so exactly one of the two is always present;
//   ASSURED     the flow completed its handshake (IPS_ASSURED): never early-dropped;
// plus flowcop's RESET (an RST ended it) and KILLED (a control-plane kill): both reaped on the next tick.
// A replied flow that is not (yet) assured is SEEN_REPLY without ASSURED, never UNREPLIED.
//
// The JSON line uses the event stream's field names (lib/events/event.h) and adds what a listing has:
//   {"flow_id":N,"lcore":0,"proto":"tcp","src":"10.0.0.1","sport":1,"dst":"10.0.0.2","dport":2,
//    "vlan":[10,20],"zone":3,"state":"ESTABLISHED","timeout":431999,"flags":["SEEN_REPLY","ASSURED"],
//    "packets_orig":1,"packets_reply":1,"bytes_orig":60,"bytes_reply":60,
//    "first_seen":1.000001,"last_seen":1.000001}\n
// `vlan` only when tagged, `zone` only when not 0; `timeout` is whole seconds left on the lcore's clock
// (0: due). Times are Unix seconds with 6 decimals, truncated, as in events. Pure, any thread.
#pragma once

#include <conntrack/flow_snapshot.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace flowcop::app {

// The flow's flags in the order above, without allocating (one listing formats millions of flows).
struct FlowFlags {
    const char* names[4];
    size_t count = 0;
    const char* const* begin() const noexcept { return names; }
    const char* const* end() const noexcept { return names + count; }
};
FlowFlags flow_flags(const conntrack::FlowSnapshot& f) noexcept;

// Whole seconds from now_ns to the flow's deadline; 0 once due.
uint64_t seconds_left(const conntrack::FlowSnapshot& f, uint64_t now_ns);

// Appends the flow's JSON line (with its newline) to `out`.
void append_flow_json(std::string& out, unsigned lcore, const conntrack::FlowSnapshot& f, uint64_t now_ns);

} // namespace flowcop::app
