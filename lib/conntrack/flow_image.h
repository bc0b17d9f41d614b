// SPDX-License-Identifier: BSD-3-Clause
// FlowImage: one flow as it survives a restart (issue 32), in named fields that say what they mean and
// nothing about where the table keeps them. The table converts to and from it in one place
// (flow_image.cpp: FlowTable::export_slice / restore_flow); lib/statefile encodes it into the state
// file's fixed little-endian entries. Neither side knows the other's layout: the record (flow_record.h)
// may change its bytes freely (issue 29 packs them) as long as flow_image.cpp still fills these fields,
// and the file format changes only with its version (lib/statefile/statefile.h).
//
// Times are in the file's time base (wall-clock Unix ns for --clock tsc, the replay's ns for
// --clock packet): the conversion adds or subtracts the difference between that base and the table's
// clock, which the caller measures (RestoreClock, ExportClock below).
//
// Flow ids and restarts. An id is (generation << 32) | slot of one lcore's table (flow_id.h). restore_flow
// puts a flow back into its old slot with its old generation when that slot is free and below the new
// capacity, so its id is unchanged whatever lcore it lands on. Two flows can claim one slot only when
// they come from different old lcores (a restart with fewer lcores, or another ownership plan); the
// second one, and a flow whose slot is beyond a smaller capacity, is *renumbered*: it gets a free slot
// with a generation above every generation the file holds, so its new id names no flow of the file and no
// other flow of the table, and the renumbering is counted (RestoreOutcome::renumbered; the service's
// flowcop_state_restore_renumbered_flows). Why not a global id space: ids are per lcore today
// (events and IPFIX name the lcore beside them), and a flow that moves lcore across a restart changes
// its (lcore, id) pair in any design; keeping the 64-bit id itself stable wherever possible is what
// `flowcopctl -L` users and event consumers key on.
#pragma once

#include <packet/flow_key.h>

#include <cstdint>

namespace flowcop::conntrack {

// One direction's share of a flow (index 0: the originator's, 1: the reply side's).
struct FlowImageDir {
    uint64_t packets = 0;
    uint64_t bytes = 0; // IP bytes
    uint8_t tcp_flags_seen = 0;
    // TCP window tracking, netfilter's names (lib/tcpstate/window.h); zero for other protocols.
    uint32_t end = 0;    // td_end
    uint32_t maxend = 0; // td_maxend
    uint32_t maxwin = 0; // td_maxwin (0: nothing seen from this side yet)
    uint32_t maxack = 0; // td_maxack (valid with maxack_set)
    uint8_t scale = 0;   // window scale shift, 0..14
    bool sack_perm = false;
    bool wscale_offered = false;
    bool unacked = false;
    bool maxack_set = false;
};

struct FlowImage {
    // The key (packet/flow_key.h), field by field: canonical order, IPv4 stored IPv4-mapped.
    uint8_t addr_lo[16] = {};
    uint8_t addr_hi[16] = {};
    uint16_t port_lo = 0, port_hi = 0;
    uint8_t proto = 0;
    uint16_t vlan_outer = 0, vlan_inner = 0; // 12-bit VLAN IDs
    uint16_t zone = 0;
    bool orig_is_lo = false; // the originator is the lower endpoint

    // Protocol state. TCP: tcpstate::State and the Tracker's flag bits; every other protocol: state 0
    // and protostate::Tracker's bits (family, replied, assured).
    uint8_t state = 0;
    uint8_t state_bits = 0;
    bool reset_pending = false;  // an RST ended it: it ends (reason reset) at the first cop pass
    bool killed_pending = false; // a kill marked it: it ends (reason killed) at the first cop pass
    uint8_t timeout_cap = 0;     // tcpstate::Cap the deadline uses
    // A timeout an operator set (flowcopctl -U): its absolute deadline, file time base; 0 = none.
    uint64_t timeout_override_ns = 0;

    // TCP window tracking's per-flow bookkeeping (WindowMeta); zero for other protocols.
    uint8_t retrans = 0;       // identical ACK-class segments in a row
    bool last_ignored = false; // `last` holds the end of an ignored packet, not a fingerprint
    bool liberal = false;      // picked up mid-stream
    uint8_t last_dir = 0;
    uint8_t last_class = 0;
    bool last_win_zero = false;
    uint8_t window_cap = 0; // WindowMeta::cap
    uint32_t last = 0;

    FlowImageDir dir[2];

    uint64_t flow_id = 0;       // flow_id.h: (generation << 32) | slot, as the old lcore numbered it
    uint64_t first_seen_ns = 0; // file time base
    uint64_t last_seen_ns = 0;
    uint32_t related = 0;  // ICMP errors that quoted the flow
    uint16_t in_port = 0;  // the DPDK port of its first packet
    uint16_t interims = 0; // interim report boundaries passed (FlowCold::exports)
    // What the flow's IPFIX records reported so far (lib/ipfix/deltas.h), so its next record after the
    // restart is a delta from them: not the table's (export_slice leaves them 0, restore_flow ignores
    // them); the service fills them from the IPFIX exporter at stop and hands them to the next one.
    uint64_t reported_packets[2] = {0, 0};
    uint64_t reported_bytes[2] = {0, 0};
    uint64_t reported_end_ns = 0; // file time base; 0: nothing reported (no interim record yet)
};

// The difference between the file's time base and the table's clock: file_ns = table_ns + offset_ns.
struct TimeBase {
    int64_t offset_ns = 0;
    uint64_t to_file(uint64_t table_ns) const noexcept { return table_ns == 0 ? 0 : table_ns + uint64_t(offset_ns); }
    uint64_t to_table(uint64_t file_ns) const noexcept { return file_ns == 0 ? 0 : file_ns - uint64_t(offset_ns); }
};

struct FlowImage;
// The table key an image restores to (the VLAN IDs packed as flow_key.h packs them): what the caller
// hashes to find the flow's owner lcore, and checks against the running key policy.
packet::FlowKey image_key(const FlowImage& image) noexcept;

enum class RestoreOutcome : uint8_t {
    restored,    // in its old slot, its id unchanged
    renumbered,  // in another slot, with a new id (see above)
    slot_taken,  // own-slot pass only: the slot holds a restored flow already; retry with renumber
    no_room,     // the table (or the key's probe window) is full
    invalid,     // a field out of range (a state, a cap, a window scale): never restored
    not_tracked, // its protocol family is not tracked under the new --track
};

} // namespace flowcop::conntrack
