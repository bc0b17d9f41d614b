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
//   packet is unchanged, or was evicted, and only unassured flows are evicted; flows appear only
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
// Single-threaded, like the table's owner; allocates freely (test code).
#pragma once

#include "track_script.h"

#include <conntrack/flow_table.h>
#include <packet/packet.h>
#include <tcpstate/segment.h>
#include <tcpstate/window.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::fuzz {

class Oracle {
public:
    Oracle(conntrack::FlowTable& table, const TrackSetup& setup);

    void after_burst(const packet::Packet* const* pkts, const uint64_t* times, unsigned n);
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
    uint64_t deadline(const conntrack::FlowSnapshot& f) const;
    conntrack::Reason timeout_reason(const conntrack::FlowSnapshot& f, uint64_t t) const;
    uint64_t d_expired(conntrack::Reason r) const;
    bool same_flow(const conntrack::FlowSnapshot& a, const conntrack::FlowSnapshot& b) const;
    static const Mark* find_mark(const std::vector<Mark>& marks, const conntrack::FlowSnapshot& f);
    const Mark* mark_of(const conntrack::FlowSnapshot& f) const { return find_mark(_marks, f); }

    conntrack::FlowTable& _table;
    uint32_t _capacity;
    tcpstate::Timeouts _timeouts;
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
