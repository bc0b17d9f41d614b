// SPDX-License-Identifier: BSD-3-Clause
// The tracking fuzz target's oracle: after every call the driver makes on a FlowTable, it takes a
// snapshot of every flow and the counters and checks them against the previous ones and against a
// model of deadlines and expiry reasons computed from the flow table's contract (flow_table.h,
// counters.h, reason.h), not from its code.
//
// What it checks (the first broken rule is kept in failure(); the driver stops there):
// - always: flows created == sum of flows expired + flows in the table (walked, not counted);
//   never more than capacity; packets by verdict add up to the frames fed; every flow has
//   first_seen <= last_seen <= now, a real state, and,
//   unless RST- or kill-marked, the deadline min(last_seen + capped_timeout(state, cap), first_seen +
//   active); the five TCP outcomes (out of window summed over its reasons) add up to the TCP verdict.
// - window tracking: a key with a single packet in a burst whose flow was live gets tcpstate::track()'s
//   verdict on a copy of the flow's state; an out-of-window one must leave the flow's state, tracker
//   bits, last_seen, deadline and timeout cap as they were (only its packet count moves), and the
//   table must count at least those as out of window.
//   the cop never counts a lock failure (nothing else holds a shard here).
// - a burst: exact per-verdict counts; no reset/killed/shutdown expiry; a flow whose key got no
//   packet is unchanged, or was early-dropped (an assured one only when closing or past its deadline); flows appear only
//   for keys that got a packet. Expiry on arrival: a flow whose first packet of the burst comes at
//   or after its deadline ends with lag = time - deadline; one whose deadline falls between its
//   packets of the burst may end at the first packet past it (if the ones before were invalid).
//   Without evictions in the burst the lag count, lag sum and inactivity/active counts equal the
//   sure expiries' plus at most the possible ones' (exact when there are none); with evictions
//   (which may take a candidate first) only upper bounds hold.
// - a cop pass: no flow appears or changes; the flows that left are exactly the fired ones; none
//   fired before its deadline (RST/kill-marked flows are due at once); each left with the model's
//   reason, and the lag histogram grew by exactly their count and their summed lag. After a pass
//   that was not stopped by a budget (and no rebase pending), no unmarked flow is left whose
//   deadline is at or before the start of the current tick, and no marked flow that was marked
//   before the wheel drained an earlier tick ("early, never late", one tick of granularity). A
//   deadline that set_timeouts() moved earlier (possibly into the past) gets the same grace: the
//   rebase re-arms the flow for the tick after the last one drained when it completed.
// - kill, set_timeouts, rebase_step, destroy_all: their documented effects, exactly.
// - every protocol (TrackSetup::all_protocols; track_oracle_other.cpp): a UDP, ICMP/ICMPv6 or other
//   flow's deadline is last_seen + its protostate timeout (kProtoTimeouts: unreplied or stream UDP,
//   ICMP, generic), capped by the active timeout, and it ends for inactivity or active, never closed;
//   its family is its protocol's, and only a replied UDP flow is assured. A burst is replayed
//   packet by packet on a model of every key that got no TCP segment: UDP and other packets create
//   or extend a flow, an ICMP query only when it is a request, each one first ending a flow past its
//   deadline; the tracker steps by protostate::step() with the flow's age; an attributed later
//   fragment adds its frame to its flow (or counts no_flow); an ICMP error counts on the flow it
//   quotes (related) or as unknown; the frames the attributor held come back on the first
//   fragment's flow (fragments_late) or count no_flow. When the burst evicted nothing and refused
//   nothing, each such key's flow must equal the model's (present or not, direction, first and last
//   seen, packets and bytes per direction, replied/assured, related), and so must the per-protocol,
//   related and fragment counters; otherwise only their sums (each packet counted once) hold.
//   After every call: later fragments fed == fragments tracked + no_flow + late + the attributor's
//   unattributed + pending.
// - the key (track_oracle_keys.cpp), from what was on the wire, not from the key the table got: a
//   frame's VLAN IDs in its key are the ones --vlan-key keeps of its outer and inner tags (both,
//   the outer only, none) and its zone is its port's (port_zone()); every flow's key obeys the same
//   (no inner ID under outer, no ID under none, a zone of a port); a later fragment that the
//   attributor gave ports got those of a first fragment seen before with the same addresses,
//   protocol, VLAN IDs, zone, direction and IP id (so no datagram is joined across zones or VLANs).
// Single-threaded, like the table's owner; allocates freely (test code).
#pragma once

#include "track_script.h"

#include <conntrack/flow_table.h>
#include <fragattr/fragment_attributor.h>
#include <packet/key_policy.h>
#include <packet/packet.h>
#include <tcpstate/segment.h>
#include <tcpstate/window.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace flowcop::fuzz {

// Any total order will do for lookups. Word compares rather than memcmp: the fuzz build's memcmp
// interceptor would feed every sort comparison to libFuzzer as a comparison of the input.
inline bool key_less(const packet::FlowKey& a, const packet::FlowKey& b)
{
    static_assert(sizeof(packet::FlowKey) == 5 * sizeof(uint64_t) + sizeof(uint16_t));
    uint64_t x[5], y[5];
    std::memcpy(x, &a, sizeof x);
    std::memcpy(y, &b, sizeof y);
    for (unsigned i = 0; i < 5; ++i)
        if (x[i] != y[i])
            return x[i] < y[i];
    return a.zone < b.zone;
}

struct KeyLess {
    bool operator()(const packet::FlowKey& a, const packet::FlowKey& b) const { return key_less(a, b); }
};

// Whether the table steps a flow for this packet (counts it on one, creates one, or ends one past its
// deadline first): every TCP segment; with every protocol tracked, UDP, ICMP queries and other
// protocols, and the later fragments the attributor gave their flow's ports. Not ICMP errors: they
// only count on the flow they quote.
inline bool steps_a_flow(const packet::Packet& p, bool all_protocols)
{
    switch (p.verdict) {
    case packet::Verdict::tcp: return true;
    case packet::Verdict::udp:
    case packet::Verdict::icmp:
    case packet::Verdict::other_l4: return all_protocols;
    case packet::Verdict::fragment: return (p.extra.frag_flags & packet::kFragAttributed) != 0;
    default: return false;
    }
}

class Oracle {
public:
    // fragments: the attributor the driver runs the frames through (all_protocols), else nullptr.
    Oracle(conntrack::FlowTable& table, const TrackSetup& setup, const fragattr::Counters* fragments = nullptr);

    // held[i]: what the attributor returned for pkts[i] (the driver then called
    // FlowTable::count_held_fragments for it); nullptr when no attributor runs.
    void after_burst(const packet::Packet* const* pkts, const uint64_t* times, unsigned n,
                     const fragattr::Held* held = nullptr);
    void after_cop(uint64_t now, uint64_t fire_budget, uint64_t visit_budget, const conntrack::CopResult& r);
    void after_kill(const packet::FlowKey& key, bool found);
    void after_set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_s);
    void after_rebase(uint32_t max_records, uint32_t seen);
    void after_destroy_all(uint64_t now);
    // After a final pass far past every deadline: the table must be empty.
    void expect_empty();

    bool ok() const { return _failure.empty(); }
    const std::string& failure() const { return _failure; }

private:
    // Flows sorted by key, for lookups by key.
    struct Flows {
        std::vector<conntrack::FlowSnapshot> v;
        const conntrack::FlowSnapshot* find(const packet::FlowKey& k) const;
    };
    struct Mark {
        packet::FlowKey key;
        uint64_t first_seen_ns;
        uint64_t drained_tick; // the last tick the wheel had fully drained when the mark was seen
    };

    void fail(const std::string& what);
    Flows take_snapshot();
    // The common checks, then S1 and the counters become the new baseline.
    void commit(Flows&& now_flows);
    uint64_t inactivity_deadline(const conntrack::FlowSnapshot& f) const;
    uint64_t deadline(const conntrack::FlowSnapshot& f) const;
    conntrack::Reason timeout_reason(const conntrack::FlowSnapshot& f, uint64_t t) const;
    uint64_t d_expired(conntrack::Reason r) const;
    bool same_flow(const conntrack::FlowSnapshot& a, const conntrack::FlowSnapshot& b) const;
    static const Mark* find_mark(const std::vector<Mark>& marks, const conntrack::FlowSnapshot& f);
    const Mark* mark_of(const conntrack::FlowSnapshot& f) const { return find_mark(_marks, f); }
    // Every protocol's burst model (track_oracle_other.cpp). exact: the burst evicted and refused
    // nothing, so each modelled flow and the counters must equal the model's.
    void check_other(const packet::Packet* const* pkts, const uint64_t* times, unsigned n, const fragattr::Held* held,
                     const Flows& s1, bool exact);
    // The key rules (track_oracle_keys.cpp): each frame's key against its wire tags and port, in order
    // (first fragments remembered, attributed later fragments checked); every flow's key.
    void check_frame_keys(const packet::Packet* const* pkts, unsigned n);
    void check_flow_keys(const Flows& s1);

    // A datagram as the attributor must tell datagrams apart: its key without ports, IP id, direction.
    struct Datagram {
        packet::FlowKey key; // ports zeroed
        uint32_t id;
        bool src_is_lo;
        bool operator<(const Datagram& o) const
        {
            if (key_less(key, o.key) || key_less(o.key, key))
                return key_less(key, o.key);
            return id != o.id ? id < o.id : src_is_lo < o.src_is_lo;
        }
    };

    conntrack::FlowTable& _table;
    uint32_t _capacity;
    tcpstate::Timeouts _timeouts;
    bool _all_protocols;
    packet::VlanKey _vlan_key;
    // The ports (port_lo, port_hi) of every first fragment seen, by datagram.
    std::map<Datagram, std::set<std::pair<uint16_t, uint16_t>>> _first_fragments;
    protostate::Timeouts _proto_timeouts;
    const fragattr::Counters* _fragments;
    uint64_t _fragment_frames = 0;  // frames with verdict fragment fed (all_protocols)
    tcpstate::WindowPolicy _policy; // the table's (TableConfig's default)
    uint64_t _active_ns;
    uint64_t _now = 0;
    uint64_t _frames = 0;
    bool _clock_started = false;
    uint64_t _drained_tick = 0;
    Flows _flows;
    std::vector<Mark> _marks;
    // Flows whose deadline set_timeouts() moved earlier; drained_tick is kRebasePending until the
    // rebase sweep that re-arms them has completed.
    std::vector<Mark> _lowered;
    static constexpr uint64_t kRebasePending = UINT64_MAX;
    conntrack::Counters _c;  // as of the last commit
    conntrack::Counters _c1; // as read after the current call
    std::vector<conntrack::FlowSnapshot> _buf;
    std::string _failure;
};

} // namespace flowcop::fuzz
