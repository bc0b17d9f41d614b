// SPDX-License-Identifier: BSD-3-Clause
// What a reader outside the owner lcore gets of a flow: FlowSnapshot, a copy of one flow taken under its
// shard lock (FlowTable::snapshot(), read_slice(), get()); SnapshotFilter, what snapshot() matches; and
// kNoPosition, the position that names no record (a walk's end, a failed lookup). The control plane
// includes this header, not flow_table.h. Plain values: copyable, no ownership, no threading of their own.
#pragma once

#include <conntrack/flow_record.h>
#include <conntrack/position.h>
#include <conntrack/proto.h>
#include <packet/flow_key.h>
#include <protostate/proto_state.h>
#include <tcpstate/tcp_state.h>
#include <tcpstate/window.h>

#include <cstdint>

namespace flowcop::conntrack {

// A copy of one flow, taken under its shard lock.
struct FlowSnapshot {
    packet::FlowKey key;
    bool orig_is_lo;
    bool assured;
    bool reset;
    bool killed;
    tcpstate::State state;     // TCP flows only (proto == Proto::tcp)
    tcpstate::Tracker tcp;     // the whole tracker (state and its flag bits: seen_reply(), ...); TCP only
    Proto proto;               // the flow's family
    protostate::Tracker other; // every other family's state (UNREPLIED/REPLIED, assured)
    uint32_t related;          // ICMP errors that quoted this flow
    uint8_t tcp_flags_seen[2]; // [orig, reply]
    uint32_t position;
    uint16_t in_port; // the DPDK port of the flow's first packet (IPFIX ingressInterface)
    uint64_t flow_id; // make_flow_id(generation, position) (flow_id.h): the same from creation to destroy
    uint64_t first_seen_ns, last_seen_ns;
    uint64_t packets[2], bytes[2];
    uint64_t deadline_ns; // the true current deadline (deadline.h): kDueNow when RST- or kill-marked
    tcpstate::Cap cap;    // the timeout cap window tracking chose (none for other protocols)
    WindowSpan window;    // TCP window tracking's state (each word loaded relaxed: may be mid-update)
};

// The flow's state as conntrack -L prints it: TCP's state name, or UNREPLIED/REPLIED for the others.
inline const char* state_name(const FlowSnapshot& f) noexcept
{
    return f.proto == Proto::tcp ? tcpstate::state_name(f.state) : protostate::state_name(f.other);
}
// Whether a packet from the reply side was accepted (conntrack's SEEN_REPLY), whatever the protocol.
inline bool seen_reply(const FlowSnapshot& f) noexcept
{
    return f.proto == Proto::tcp ? f.tcp.seen_reply() : f.other.seen_reply();
}

struct SnapshotFilter {
    bool match_addr = false;
    uint8_t addr[16] = {}; // IPv4-mapped for IPv4; matches either endpoint
    bool match_port = false;
    uint16_t port = 0; // matches either endpoint
    bool match_proto = false;
    Proto proto = Proto::tcp;
};

} // namespace flowcop::conntrack
