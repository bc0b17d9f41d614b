// SPDX-License-Identifier: BSD-3-Clause
// Per-lcore counters of one flow table.
//
// Written only by the owning lcore with bump() (plain stores), read by the
// exporter and the control plane with load_relaxed() at scrape time. Nothing
// here is a library counter object: a per-packet increment is one add to a
// cache line this lcore already owns. The struct is cache-line aligned and
// never shared with another writer.
//
// Invariant (checked by tests): flows_created == sum(flows_expired) + active
// flows, at every point the owner is between bursts; per family likewise,
// flows_created_by_proto[p] == flows_expired_by_proto[p] + active flows of p.
#pragma once

#include <conntrack/early_drop.h>
#include <conntrack/proto.h>
#include <conntrack/reason.h>
#include <packet/packet.h>
#include <stats/histogram.h>
#include <stats/relaxed.h>
#include <tcpstate/window.h>

#include <array>
#include <cstdint>

namespace flowcop::conntrack {

// The word for a TCP segment not valid for its flow's state (tcp_invalid below): the result label of
// flowcop_packets_total and the "invalid" of its update event, as tcpstate::window_reason_name() is for
// the out-of-window ones.
inline constexpr char kInvalidForStateName[] = "tcp_invalid_for_state";

// The single-writer vocabulary is lib/stats'; the table's sources use it unqualified.
using stats::bump;
using stats::Histogram;
using stats::load_acquire;
using stats::load_relaxed;
using stats::store_relaxed;
using stats::store_release;

struct alignas(64) Counters {
    // Every packet handed to the table, by parser verdict.
    std::array<uint64_t, packet::kVerdictCount> packets_by_verdict{};
    // TCP packets (verdict tcp) by what tracking did with them; these five (the last one summed over its
    // reasons) add up to packets_by_verdict[tcp].
    uint64_t tcp_tracked = 0;    // belonged to (or created) a flow and moved it on
    uint64_t tcp_invalid = 0;    // belonged to a flow but was not valid for its state: state and deadline unchanged
    uint64_t tcp_no_flow = 0;    // unknown flow and the packet may not start one (stray RST, SYN-ACK, ...)
    uint64_t tcp_table_full = 0; // would have started a flow but the table was full: refused
    // Belonged to a flow but was outside its TCP window, by tcpstate::WindowReason ([none] stays 0):
    // counted in the flow's packets, state and deadline unchanged (an out-of-window RST ends nothing).
    std::array<uint64_t, tcpstate::kWindowReasonCount> tcp_out_of_window{};
    // Update events for invalid segments (the two above) that the lcore's EventBudget withheld
    // (--events-invalid-rate) while some subscriber took update events; none are counted otherwise.
    uint64_t events_invalid_suppressed = 0;

    uint64_t flows_created = 0;
    std::array<uint64_t, kReasonCount> flows_expired{};
    uint64_t early_drop_attempts = 0; // table full: sampled for a victim (flow_table.h "Table full")
    // Flows a full table dropped for a new one, by class (early_drop.h; from the capacity sample or the
    // full probe window's home bucket). timed_out ones are in flows_expired under their own reason, the
    // others under evicted.
    std::array<uint64_t, kEarlyDropCount> early_dropped{};
    // New keys whose index probe window was full (keys that collide; flow_table.h): the home bucket's
    // least recently seen unassured flow was evicted for it, or, with none, it was refused (and counted
    // in tcp_table_full too).
    uint64_t probe_window_full = 0;

    // Every protocol but TCP (issue 15), by family (Proto; the tcp entries stay 0: TCP has its own above).
    // Packets of a tracked family with verdict udp, icmp or other_l4 end in exactly one of these three.
    std::array<uint64_t, kProtoCount> proto_tracked{};    // belonged to (or created) a flow
    std::array<uint64_t, kProtoCount> proto_no_flow{};    // unknown flow and may not start one (an ICMP reply)
    std::array<uint64_t, kProtoCount> proto_table_full{}; // would have started a flow: table full, refused
    // ICMP/ICMPv6 errors (verdict icmp_error, --track icmp): the quoted flow is here (counted on it too,
    // FlowCold::related) or not.
    uint64_t icmp_related = 0;
    uint64_t icmp_related_unknown = 0;
    // --policy enforced (inline, ct_judge.h): what a drop kept out of the table. [0] packets that would
    // have created a flow (counted in tcp_no_flow / proto_no_flow too: they could not start one);
    // [1] refused TCP segments (counted in tcp_invalid / tcp_out_of_window too, but not on their flow).
    std::array<uint64_t, 2> policy_untraced{};
    // Later fragments the caller attributed (packet::kFragAttributed): counted on their flow, or their
    // flow is not here (its first fragment was refused, or it ended). fragments_late: later fragments
    // that came before their first, counted on its flow when it came (FlowTable::count_held_fragments;
    // with no flow there they count in fragments_no_flow).
    uint64_t fragments_tracked = 0;
    uint64_t fragments_no_flow = 0;
    uint64_t fragments_late = 0;
    // Flows by family: created, and ended for any reason. active by family = created - expired.
    std::array<uint64_t, kProtoCount> flows_created_by_proto{};
    std::array<uint64_t, kProtoCount> flows_expired_by_proto{};
    // End-of-run tallies for flowcop's summary (app/service/control/status.cpp), not metrics: the packets and
    // bytes (both directions) of each flow that ended, by family, added when it ends (never per packet), so
    // once the table is shut down they hold every packet counted on a flow; and the flows still open when
    // destroy_all() ran, by the state conntrack -L names: tcpstate::State's values, then UNREPLIED and
    // REPLIED for the other protocols (kOpenUnreplied, kOpenReplied).
    std::array<uint64_t, kProtoCount> ended_packets{};
    std::array<uint64_t, kProtoCount> ended_bytes{};
    static constexpr size_t kOpenUnreplied = tcpstate::kStateCount, kOpenReplied = tcpstate::kStateCount + 1;
    std::array<uint64_t, tcpstate::kStateCount + 2> open_at_stop{};

    // The inactivity cop.
    uint64_t cop_passes = 0;
    uint64_t cop_visited = 0; // flows examined: fired, re-linked, or deferred
    uint64_t cop_fired = 0;
    uint64_t cop_budget_exhausted = 0; // passes stopped by the fire or visit budget with work left
    uint64_t cop_lock_failures = 0;    // due flows whose shard lock was held: deferred to the next pass
    uint64_t rebase_visited = 0;       // flows re-armed after a runtime timeout change
    uint64_t rebase_moved = 0;         // of those, flows moved to an earlier wheel bucket (a shortened timeout)
    // Interim reports of long flows (TableConfig::interim_s; flow_table.h): interim events emitted by
    // the cop. Not in cop_fired, which counts ends.
    uint64_t interim_reports = 0;
    // Report boundaries the cop met for a flow that saw no packet since its previous one: no event, but
    // the flow was re-armed and, like a report, took one fire from the pass's budget. Per pass, the
    // wheel's fires == cop_fired + interim_reports + interim_idle added.
    uint64_t interim_idle = 0;

    // Nanoseconds. Pass duration: 1 us .. 10 ms; lag (fire time - true deadline): 1 ms .. 60 s.
    Histogram cop_pass_ns{1'000,   2'000,   5'000,     10'000,    20'000,    50'000,    100'000,
                          200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000};
    Histogram timeout_lag_ns{1'000'000,     10'000'000,     50'000'000,     100'000'000,
                             250'000'000,   500'000'000,    1'000'000'000,  2'000'000'000,
                             5'000'000'000, 10'000'000'000, 30'000'000'000, 60'000'000'000};

    uint64_t out_of_window_total() const noexcept
    {
        uint64_t t = 0;
        for (const auto& v : tcp_out_of_window)
            t += load_relaxed(v);
        return t;
    }
    uint64_t active_of(Proto p) const noexcept
    {
        const auto i = static_cast<size_t>(p);
        const uint64_t expired = load_relaxed(flows_expired_by_proto[i]);
        const uint64_t created = load_relaxed(flows_created_by_proto[i]);
        return created > expired ? created - expired : 0;
    }
    uint64_t expired_total() const noexcept
    {
        uint64_t t = 0;
        for (const auto& v : flows_expired)
            t += load_relaxed(v);
        return t;
    }
    // A concurrent reader may see an expiry before the creation it pairs with
    // (relaxed loads of different fields); clamp instead of wrapping the gauge.
    uint64_t active() const noexcept
    {
        const uint64_t expired = expired_total();
        const uint64_t created = load_relaxed(flows_created);
        return created > expired ? created - expired : 0;
    }
};

} // namespace flowcop::conntrack
