// SPDX-License-Identifier: BSD-3-Clause
// The rows. Order is /metrics order; each read() is one relaxed load (or a sum of a few).
#include "stats_rows.h"

#include <conntrack/reason.h>
#include <packet/verdict.h>
#include <stats/relaxed.h>
#include <tcpstate/window.h>

namespace flowcop::app {
namespace {

using stats::Family;
using stats::Index;
using stats::Kind;
using stats::Label;
using stats::load_relaxed;

using Lcore = Family<LcoreView>;
using Port = Family<PortSample>;
using Sink = Family<CollectorView>;
using Ctl = Family<CtlView>;
using State = Family<StateView>;

// flowcop_packets_total's result label: the five outcomes of tracking a TCP packet, then every
// other parser verdict (tcp itself is the sum of the five).
constexpr unsigned kTcpResults = 5;
constexpr const char* kTcpResultNames[kTcpResults] = {"tracked", conntrack::kInvalidForStateName, "tcp_no_flow",
                                                      "tcp_table_full", "tcp_out_of_window"};
constexpr unsigned kResultCount = kTcpResults + packet::kVerdictCount - 1;

packet::Verdict untracked_verdict(unsigned i) noexcept
{
    const unsigned v = i - kTcpResults; // the verdicts other than tcp, in enum order
    return static_cast<packet::Verdict>(v >= unsigned(packet::Verdict::tcp) ? v + 1 : v);
}

const char* result_name(unsigned i) noexcept
{
    return i < kTcpResults ? kTcpResultNames[i] : packet::verdict_name(untracked_verdict(i));
}

uint64_t read_result(const LcoreView& v, Index idx) noexcept
{
    const conntrack::Counters& c = *v.table;
    switch (idx[0]) {
    case 0: return load_relaxed(c.tcp_tracked);
    case 1: return load_relaxed(c.tcp_invalid);
    case 2: return load_relaxed(c.tcp_no_flow);
    case 3: return load_relaxed(c.tcp_table_full);
    case 4: return c.out_of_window_total();
    default: return load_relaxed(c.packets_by_verdict[unsigned(untracked_verdict(idx[0]))]);
    }
}

constexpr Label kReason{"reason", conntrack::kReasonCount,
                        [](unsigned i) noexcept { return conntrack::reason_name(conntrack::Reason(i)); }};
constexpr Label kResult{"result", kResultCount, result_name};
constexpr Label kVerdict{"verdict", packet::kVerdictCount,
                         [](unsigned i) noexcept { return packet::verdict_name(packet::Verdict(i)); }};
// WindowReason without `none` (in the window is not a reason to count).
constexpr Label kWindowReason{"reason", tcpstate::kWindowReasonCount - 1, [](unsigned i) noexcept {
                                  return tcpstate::window_reason_name(tcpstate::WindowReason(i + 1));
                              }};
constexpr Label kEarlyDropClass{"reason", conntrack::kEarlyDropCount, [](unsigned i) noexcept {
                                    return conntrack::early_drop_name(static_cast<conntrack::EarlyDrop>(i));
                                }};
constexpr Label kTableFull{"reason", 1, [](unsigned) noexcept { return "table_full"; }};
constexpr const char* kEventDropReasons[] = {"ring_full", "write_error"};
constexpr Label kEventDropReason{"reason", 2, [](unsigned i) noexcept { return kEventDropReasons[i]; }};
constexpr const char* kIpfixDropReasons[] = {"queue_full", "tracker_full"};
constexpr Label kIpfixDropReason{"reason", 2, [](unsigned i) noexcept { return kIpfixDropReasons[i]; }};

// --- Every protocol (issue 15) ---
constexpr Label kProto{"proto", conntrack::kProtoCount,
                       [](unsigned i) noexcept { return conntrack::proto_name(conntrack::Proto(i)); }};
// The non-TCP families (TCP's packets are flowcop_packets_total's tcp results).
constexpr Label kOtherProto{"proto", conntrack::kProtoCount - 1,
                            [](unsigned i) noexcept { return conntrack::proto_name(conntrack::Proto(i + 1)); }};
constexpr const char* kProtoResults[] = {"tracked", "no_flow", "table_full"};
constexpr Label kProtoResult{"result", 3, [](unsigned i) noexcept { return kProtoResults[i]; }};
constexpr const char* kKnownUnknown[] = {"known_flow", "unknown_flow"};
constexpr Label kRelatedResult{"result", 2, [](unsigned i) noexcept { return kKnownUnknown[i]; }};
// Where every later fragment of a tracked family ends (bar the ones still pending).
constexpr const char* kFragmentResults[] = {"tracked", "no_flow", "attributed_late", "unattributed"};
constexpr Label kCtState{"state", conntrack::kCtStateCount, [](unsigned i) noexcept {
                             return conntrack::ct_state_name(static_cast<conntrack::CtState>(i));
                         }};
constexpr const char* kPolicyActions[] = {"accept", "drop"};
constexpr Label kPolicyAction{"action", 2, [](unsigned i) noexcept { return kPolicyActions[i]; }};
constexpr const char* kUntracedKinds[] = {"new", "refused"};
constexpr Label kUntracedKind{"kind", 2, [](unsigned i) noexcept { return kUntracedKinds[i]; }};
constexpr Label kFragmentResult{"result", 4, [](unsigned i) noexcept { return kFragmentResults[i]; }};

uint64_t read_proto_packets(const LcoreView& v, Index i) noexcept
{
    const conntrack::Counters& c = *v.table;
    const unsigned p = i[0] + 1;
    return load_relaxed(i[1] == 0 ? c.proto_tracked[p] : i[1] == 1 ? c.proto_no_flow[p] : c.proto_table_full[p]);
}

uint64_t read_fragments(const LcoreView& v, Index i) noexcept
{
    // tracked, no_flow and attributed_late are where the table counted them (on a flow or not);
    // unattributed never reached the table.
    if (i[0] < 3)
        return load_relaxed(i[0] == 0   ? v.table->fragments_tracked
                            : i[0] == 1 ? v.table->fragments_no_flow
                                        : v.table->fragments_late);
    return v.fragments == nullptr ? 0 : load_relaxed(v.fragments->unattributed);
}

const Lcore kLcoreRows[] = {
    {.prometheus = "flowcop_inactivity_cop_visited_total",
     .telemetry = "inactivity_cop_visited",
     .help = "Flows the inactivity cop examined (fired, re-linked or deferred); tracks flows coming due, not flows "
             "open",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->cop_visited); },
     .per_source = true},
    {.prometheus = "flowcop_inactivity_cop_fired_total",
     .telemetry = "inactivity_cop_fired",
     .help = "Flows the inactivity cop expired",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->cop_fired); }},
    {.prometheus = "flowcop_inactivity_cop_interim_reports_total",
     .telemetry = "inactivity_cop_interim_reports",
     .help = "Interim reports of long flows the cop made (--ipfix-active-timeout); the flows go on, not in fired",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->interim_reports); }},
    {.prometheus = "flowcop_inactivity_cop_interim_idle_total",
     .telemetry = "inactivity_cop_interim_idle",
     .help = "Interim report boundaries of long flows that saw no packet in their interval: no report, but each "
             "took one fire from the cop's budget",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->interim_idle); }},
    {.prometheus = "flowcop_inactivity_cop_budget_exhausted_total",
     .telemetry = "inactivity_cop_budget_exhausted",
     .help = "Cop passes stopped by the fire or visit budget with due work left (timeouts firing late)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->cop_budget_exhausted); },
     .per_source = true},
    {.prometheus = "flowcop_inactivity_cop_lock_acquire_failure_total",
     .telemetry = "inactivity_cop_lock_acquire_failure",
     .help = "Due flows the cop could not lock (a control-plane reader held the shard); retried next tick",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->cop_lock_failures); },
     .per_source = true},
    {.prometheus = "flowcop_inactivity_cop_passes_total",
     .telemetry = "inactivity_cop_passes",
     .help = "Inactivity cop passes",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->cop_passes); }},
    {.prometheus = "flowcop_inactivity_cop_pass_duration_seconds",
     .telemetry = "inactivity_cop_pass_duration",
     .help = "Duration of one inactivity cop pass",
     .kind = Kind::histogram,
     .histogram = [](const LcoreView& v) noexcept -> const stats::Histogram& { return v.table->cop_pass_ns; }},
    {.prometheus = "flowcop_timeout_lag_seconds",
     .telemetry = "timeout_lag",
     .help = "Expiry time minus the flow's true deadline",
     .kind = Kind::histogram,
     .histogram = [](const LcoreView& v) noexcept -> const stats::Histogram& { return v.table->timeout_lag_ns; }},
    {.prometheus = "flowcop_flows_active",
     .telemetry = "flows_active",
     .help = "Flows in the table",
     .kind = Kind::gauge,
     .read = [](const LcoreView& v, Index) noexcept { return v.table->active(); },
     .per_source = true},
    {.prometheus = "flowcop_flows_capacity",
     .telemetry = "flows_capacity",
     .help = "Flows the table can hold (--flows-per-lcore)",
     .kind = Kind::gauge,
     .read = [](const LcoreView& v, Index) noexcept { return v.capacity; }},
    {.prometheus = "flowcop_flows_created_total",
     .telemetry = "flows_created",
     .help = "Flows created",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->flows_created); }},
    {.prometheus = "flowcop_flows_expired_total",
     .telemetry = "flows_expired",
     .help = "Flows ended, by reason",
     .labels = {kReason},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->flows_expired[i[0]]); }},
    {.prometheus = "flowcop_flows_dropped_total",
     .telemetry = "flows_dropped",
     .help = "New flows refused, by reason",
     .labels = {kTableFull},
     .read =
         [](const LcoreView& v, Index) noexcept {
             uint64_t refused = load_relaxed(v.table->tcp_table_full);
             for (const uint64_t& n : v.table->proto_table_full)
                 refused += load_relaxed(n);
             return refused;
         }},
    {.prometheus = "flowcop_flows_early_drop_attempts_total",
     .telemetry = "flows_early_drop_attempts",
     .help = "Times a full table looked for a flow to drop for a new one (timed out, closing or unassured)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->early_drop_attempts); }},
    {.prometheus = "flowcop_flows_early_dropped_total",
     .telemetry = "flows_early_dropped",
     .help = "Flows a full table dropped to admit a new one, by class: timed_out (past its deadline, ends with "
             "its own reason), closing (TCP FIN_WAIT to CLOSE), unassured (both end evicted)",
     .labels = {kEarlyDropClass},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->early_dropped[i[0]]); }},
    {.prometheus = "flowcop_flows_probe_window_full_total",
     .telemetry = "flows_probe_window_full",
     .help = "New flows whose keys collided with a full probe window of the table's index (evicted in the home "
             "bucket or refused)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->probe_window_full); }},
    {.prometheus = "flowcop_tcp_out_of_window_total",
     .telemetry = "tcp_out_of_window",
     .help = "TCP segments outside their flow's window, by reason: counted in the flow's packets, state and "
             "deadline unchanged",
     .labels = {kWindowReason},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->tcp_out_of_window[i[0] + 1]); }},
    {.prometheus = "flowcop_packets_total",
     .telemetry = "packets",
     .help = "Packets by what the tracker did with them (tracked, tcp_* outcomes, not tracked protocols, each "
             "malformed class)",
     .labels = {kResult},
     .read = read_result},
    {.prometheus = "flowcop_flow_table_memory_bytes",
     .telemetry = "flow_table_memory_bytes",
     .help = "Memory the flow table allocated (records, index, locks, wheel)",
     .kind = Kind::gauge,
     .read = [](const LcoreView& v, Index) noexcept { return v.memory_bytes; }},
    {.prometheus = "flowcop_flows_rebased_total",
     .telemetry = "flows_rebased",
     .help = "Flows re-armed after a runtime timeout change",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->rebase_visited); }},
    {.prometheus = "flowcop_flows_rebase_moved_total",
     .telemetry = "flows_rebase_moved",
     .help = "Flows a rebase sweep moved to an earlier wheel bucket (their timeout was shortened)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->rebase_moved); }},
    {.prometheus = "flowcop_events_written_total",
     .telemetry = "events_written",
     .help = "Flow events written to --events",
     .read = [](const LcoreView& v, Index) noexcept { return v.event_stats().written; }},
    {.prometheus = "flowcop_events_dropped_total",
     .telemetry = "events_dropped",
     .help = "Flow events lost: ring_full (the writer fell behind) or write_error (the output failed)",
     .labels = {kEventDropReason},
     .read =
         [](const LcoreView& v, Index i) noexcept {
             const events::WriterStats s = v.event_stats();
             return i[0] == 0 ? s.dropped_full : s.dropped_write;
         }},
    {.prometheus = "flowcop_events_write_errors_total",
     .telemetry = "events_write_errors",
     .help = "Failed writes of the event log",
     .read = [](const LcoreView& v, Index) noexcept { return v.event_stats().write_errors; }},
    {.prometheus = "flowcop_events_invalid_suppressed_total",
     .telemetry = "events_invalid_suppressed",
     .help = "Update events for invalid TCP segments not made: over --events-invalid-rate while some consumer took "
             "updates",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.table->events_invalid_suppressed); }},
    {.prometheus = "flowcop_ipfix_records_total",
     .telemetry = "ipfix_records",
     .help = "Records encoded into IPFIX messages for --ipfix: ended flows and interim reports",
     .read = [](const LcoreView& v, Index) noexcept { return v.ipfix_stats().records; }},
    {.prometheus = "flowcop_ipfix_interim_records_total",
     .telemetry = "ipfix_interim_records",
     .help = "Of the IPFIX records, interim reports of long flows (--ipfix-active-timeout)",
     .read = [](const LcoreView& v, Index) noexcept { return v.ipfix_stats().interim; }},
    {.prometheus = "flowcop_ipfix_dropped_total",
     .telemetry = "ipfix_dropped",
     .help = "Ended flows and interim reports not exported: queue_full (the IPFIX export thread fell behind), "
             "tracker_full (an interim report the delta tracker had no room for; the flow's next record carries "
             "its counts)",
     .labels = {kIpfixDropReason},
     .read =
         [](const LcoreView& v, Index i) noexcept {
             const ipfix::ExporterStats s = v.ipfix_stats();
             return i[0] == 0 ? s.dropped_full : s.dropped_untracked;
         }},
    // Every protocol (issue 15): one row per family, labelled by protocol.
    {.prometheus = "flowcop_proto_flows_created_total",
     .telemetry = "proto_flows_created",
     .help = "Flows created, by protocol family",
     .labels = {kProto},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->flows_created_by_proto[i[0]]); }},
    {.prometheus = "flowcop_proto_flows_expired_total",
     .telemetry = "proto_flows_expired",
     .help = "Flows ended for any reason, by protocol family",
     .labels = {kProto},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->flows_expired_by_proto[i[0]]); }},
    {.prometheus = "flowcop_proto_flows_active",
     .telemetry = "proto_flows_active",
     .help = "Flows in the table, by protocol family",
     .kind = Kind::gauge,
     .labels = {kProto},
     .read = [](const LcoreView& v, Index i) noexcept { return v.table->active_of(conntrack::Proto(i[0])); }},
    {.prometheus = "flowcop_proto_packets_total",
     .telemetry = "proto_packets",
     .help = "UDP, ICMP and other-protocol packets of tracked families by what tracking did with them",
     .labels = {kOtherProto, kProtoResult},
     .read = read_proto_packets},
    {.prometheus = "flowcop_icmp_related_total",
     .telemetry = "icmp_related",
     .help = "ICMP/ICMPv6 errors by whether the flow they quote is in the table (counted on it) or not",
     .labels = {kRelatedResult},
     .read =
         [](const LcoreView& v, Index i) noexcept {
             return load_relaxed(i[0] == 0 ? v.table->icmp_related : v.table->icmp_related_unknown);
         }},
    {.prometheus = "flowcop_fragments_total",
     .telemetry = "fragments",
     .help = "Later IP fragments: counted on their flow (tracked), attributed but their flow is not in the table "
             "(no_flow), held until their first fragment came and then counted on its flow (attributed_late), or "
             "never attributed",
     .labels = {kFragmentResult},
     .read = read_fragments},
    {.prometheus = "flowcop_fragments_pending",
     .telemetry = "fragments_pending",
     .help = "Later IP fragments waiting for their first fragment now",
     .kind = Kind::gauge,
     .read = [](const LcoreView& v,
                Index) noexcept { return v.fragments == nullptr ? 0 : load_relaxed(v.fragments->pending); }},
    {.prometheus = "flowcop_fragment_datagrams_evicted_total",
     .telemetry = "fragment_datagrams_evicted",
     .help = "Datagrams the fragment attributor forgot while live to make room for a newer one",
     .read = [](const LcoreView& v,
                Index) noexcept { return v.fragments == nullptr ? 0 : load_relaxed(v.fragments->evicted); }},
    {.prometheus = "flowcop_steady_lane_packets_total",
     .telemetry = "steady_lane_packets",
     .help = "Packets read through the steady lane (the established TCP segment's fast way, taken while most of a "
             "burst is steady; 0 under --policy, --clock packet, the handoff plan or --port-zone)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->steady_lane); }},
    {.prometheus = "flowcop_policy_dropped_total",
     .telemetry = "policy_dropped",
     .help = "Packets --policy dropped in inline mode (freed, not forwarded); 0 in monitor mode, the dry run",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->policy_dropped); }},
    {.prometheus = "flowcop_policy_untraced_total",
     .telemetry = "policy_untraced",
     .help = "Packets --policy dropped (inline) before they touched the table: new ones that would have created a "
             "flow (also in the no_flow results) and refused TCP segments not counted on their flow (also in the "
             "invalid and out-of-window results)",
     .labels = {kUntracedKind},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->policy_untraced[i[0]]); }},
    {.prometheus = "flowcop_policy_verdicts_total",
     .telemetry = "policy_verdicts",
     .help = "Packets --policy judged, by conntrack state and action (in monitor mode: what inline mode would do)",
     .labels = {kCtState, kPolicyAction},
     .read = [](const LcoreView& v,
                Index i) noexcept { return v.policy == nullptr ? 0 : load_relaxed(v.policy->packets[i[0]][i[1]]); }},
    // Telemetry and the terminal only: the ports' own counters are the Prometheus view of these.
    {.telemetry = "rx_packets",
     .help = "Packets the lcore received from its RX queues",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->rx_packets); }},
    {.telemetry = "tx_packets",
     .help = "Packets the lcore forwarded (--mode inline)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->tx_packets); }},
    {.telemetry = "tx_dropped",
     .help = "Packets inline mode could not forward: the peer port's TX queue was full (freed)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->tx_dropped); }},
    {.prometheus = "flowcop_handoff_sent_total",
     .telemetry = "handoff_sent",
     .help =
         "Packets this lcore received and passed to the lcore that owns their flow (handoff plan: any; rss plan: ICMP "
         "errors and fragments)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->handed_off); }},
    {.prometheus = "flowcop_handoff_received_total",
     .telemetry = "handoff_received",
     .help =
         "Packets other lcores passed to this one, the owner of their flow (handoff plan: any; rss plan: ICMP errors "
         "and fragments)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->handoff_received); }},
    {.prometheus = "flowcop_handoff_dropped_total",
     .telemetry = "handoff_dropped",
     .help = "Packets dropped (freed) because the handoff ring to their flow's owner was full",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->handoff_dropped); }},
    {.telemetry = "packets_without_timestamp",
     .help = "Packets that carried no RX timestamp under --clock packet (time did not move for them)",
     .read = [](const LcoreView& v, Index) noexcept { return load_relaxed(v.worker->no_timestamp); }},
    {.telemetry = "verdict",
     .help = "Packets by the parser's verdict (tcp is the sum of the four tcp results of packets)",
     .labels = {kVerdict},
     .read = [](const LcoreView& v, Index i) noexcept { return load_relaxed(v.table->packets_by_verdict[i[0]]); }},
};

template <uint64_t rte_eth_stats::*Field>
uint64_t port_field(const PortSample& p, Index) noexcept
{
    return p.counters.*Field;
}

const Port kPortRows[] = {
    {.prometheus = "flowcop_port_rx_packets_total",
     .telemetry = "port_rx_packets",
     .help = "Packets received by the port",
     .read = port_field<&rte_eth_stats::ipackets>,
     .per_source = true},
    {.prometheus = "flowcop_port_tx_packets_total",
     .telemetry = "port_tx_packets",
     .help = "Packets sent by the port",
     .read = port_field<&rte_eth_stats::opackets>,
     .per_source = true},
    {.prometheus = "flowcop_port_rx_bytes_total",
     .telemetry = "port_rx_bytes",
     .help = "Bytes received by the port",
     .read = port_field<&rte_eth_stats::ibytes>,
     .per_source = true},
    {.prometheus = "flowcop_port_tx_bytes_total",
     .telemetry = "port_tx_bytes",
     .help = "Bytes sent by the port",
     .read = port_field<&rte_eth_stats::obytes>,
     .per_source = true},
    {.prometheus = "flowcop_port_rx_missed_total",
     .telemetry = "port_rx_missed",
     .help = "Packets the port dropped because RX was not polled fast enough",
     .read = port_field<&rte_eth_stats::imissed>,
     .per_source = true},
    {.prometheus = "flowcop_port_rx_errors_total",
     .telemetry = "port_rx_errors",
     .help = "Erroneous packets received by the port",
     .read = port_field<&rte_eth_stats::ierrors>,
     .per_source = true},
    {.prometheus = "flowcop_port_rx_nombuf_total",
     .telemetry = "port_rx_nombuf",
     .help = "RX mbuf allocation failures",
     .read = port_field<&rte_eth_stats::rx_nombuf>,
     .per_source = true},
    {.prometheus = "flowcop_port_tx_errors_total",
     .telemetry = "port_tx_errors",
     .help = "Failed transmissions",
     .read = port_field<&rte_eth_stats::oerrors>,
     .per_source = true},
};

const Sink kCollectorRows[] = {
    {.prometheus = "flowcop_ipfix_messages_total",
     .help = "IPFIX messages sent to the collector",
     .read = [](const CollectorView& c, Index) noexcept { return c.collector->stats().messages; }},
    {.prometheus = "flowcop_ipfix_bytes_total",
     .help = "IPFIX message bytes sent to the collector (without IP/UDP headers)",
     .read = [](const CollectorView& c, Index) noexcept { return c.collector->stats().bytes; }},
    {.prometheus = "flowcop_ipfix_send_errors_total",
     .help = "IPFIX messages lost because sending to the collector failed (down, unreachable, buffer full)",
     .read = [](const CollectorView& c, Index) noexcept { return c.collector->stats().send_errors; }},
};

// --- The control socket (ctl_stats.h): one source, the server's counters ---
template <uint64_t CtlServerStats::*Field>
uint64_t ctl_field(const CtlView& v, Index) noexcept
{
    return v.stats != nullptr ? load_relaxed(v.stats->*Field) : 0;
}

constexpr const char* kCtlRefusals[] = {"busy", "bad", "timeout", "slow"};
constexpr Label kCtlRefusal{"reason", 4, [](unsigned i) noexcept { return kCtlRefusals[i]; }};
constexpr const char* kCtlLosses[] = {"follower_slow", "ring_full"};
constexpr Label kCtlLoss{"reason", 2, [](unsigned i) noexcept { return kCtlLosses[i]; }};

const Ctl kCtlRows[] = {
    {.prometheus = "flowcop_ctl_connections_total",
     .telemetry = "ctl_connections",
     .help = "Connections to the control socket (flowcopctl) given a client slot",
     .read = ctl_field<&CtlServerStats::connections>},
    {.prometheus = "flowcop_ctl_refused_total",
     .telemetry = "ctl_refused",
     .help = "Control socket clients refused: busy (every client slot taken), bad (a malformed or oversized "
             "request), timeout (no request line in time), slow (dropped for not reading its output)",
     .labels = {kCtlRefusal},
     .read =
         [](const CtlView& v, Index i) noexcept {
             switch (i[0]) {
             case 0: return ctl_field<&CtlServerStats::refused_busy>(v, i);
             case 1: return ctl_field<&CtlServerStats::refused_bad>(v, i);
             case 2: return ctl_field<&CtlServerStats::refused_timeout>(v, i);
             default: return ctl_field<&CtlServerStats::refused_slow>(v, i);
             }
         }},
    {.prometheus = "flowcop_ctl_requests_total",
     .telemetry = "ctl_requests",
     .help = "Request lines the control socket answered (any verb, errors too)",
     .read = ctl_field<&CtlServerStats::requests>},
    {.prometheus = "flowcop_ctl_sent_bytes_total",
     .telemetry = "ctl_sent_bytes",
     .help = "Reply bytes the control socket sent (flow lines, events, errors)",
     .read = ctl_field<&CtlServerStats::sent_bytes>},
    {.prometheus = "flowcop_ctl_followers",
     .telemetry = "ctl_followers",
     .help = "Clients following the event stream now (flowcopctl -E)",
     .kind = Kind::gauge,
     .read = ctl_field<&CtlServerStats::followers>},
    {.prometheus = "flowcop_ctl_events_sent_total",
     .telemetry = "ctl_events_sent",
     .help = "Event lines queued for followers (one per follower and event)",
     .read = ctl_field<&CtlServerStats::events_sent>},
    {.prometheus = "flowcop_ctl_events_lost_total",
     .telemetry = "ctl_events_lost",
     .help = "Events followers lost: follower_slow (its output was full; one per follower and event), ring_full "
             "(an lcore's follow ring was full: lost for every follower)",
     .labels = {kCtlLoss},
     .read =
         [](const CtlView& v, Index i) noexcept {
             if (i[0] == 0)
                 return ctl_field<&CtlServerStats::events_lost>(v, i);
             uint64_t full = 0;
             for (unsigned p = 0; v.follow != nullptr && p < v.follow->producers(); ++p)
                 full += v.follow->dropped_full(p);
             return full;
         }},
};

// --- The state file (state_stats.h): one source, the service's restore and saves ---
template <uint64_t StateStats::*Field>
uint64_t state_field(const StateView& v, Index) noexcept
{
    return v.stats != nullptr ? load_relaxed(v.stats->*Field) : 0;
}
const stats::Histogram kNoHistogram{{}}; // read when there is no StateStats: empty
constexpr Label kStateDiscardLabel{"reason", unsigned(kStateDiscardCount),
                                   [](unsigned i) noexcept { return kStateDiscardNames[i]; }};
constexpr const char* kSaveResults[] = {"ok", "failed"};
constexpr Label kSaveResult{"result", 2, [](unsigned i) noexcept { return kSaveResults[i]; }};

const State kStateRows[] = {
    {.prometheus = "flowcop_state_restored_flows",
     .telemetry = "state_restored_flows",
     .help = "Flows restored from --state-file at start (with their ids, state and counters)",
     .kind = Kind::gauge,
     .read = state_field<&StateStats::restored>},
    {.prometheus = "flowcop_state_restore_renumbered_flows",
     .telemetry = "state_restore_renumbered_flows",
     .help = "Restored flows given a new id: their old slot was another restored flow's (a restart with fewer "
             "lcores) or beyond a smaller --flows-per-lcore",
     .kind = Kind::gauge,
     .read = state_field<&StateStats::renumbered>},
    {.prometheus = "flowcop_state_restore_discarded_total",
     .telemetry = "state_restore_discarded",
     .help = "What --state-file held that was not restored, by reason: a file refused whole counts once "
             "(unreadable, not_a_state_file, version, header_checksum, truncated, trailing, checksum); invalid, "
             "no_room, key_changed and not_tracked count flows",
     .labels = {kStateDiscardLabel},
     .read = [](const StateView& v,
                Index i) noexcept { return v.stats != nullptr ? load_relaxed(v.stats->discarded[i[0]]) : 0; }},
    {.prometheus = "flowcop_state_restore_duration_seconds",
     .telemetry = "state_restore_duration",
     .help = "Time the restore from --state-file took at start (reading, checking and placing every flow)",
     .kind = Kind::histogram,
     .histogram = [](const StateView& v) noexcept -> const stats::Histogram& {
         return v.stats != nullptr ? v.stats->restore_ns : kNoHistogram;
     }},
    {.prometheus = "flowcop_state_saves_total",
     .telemetry = "state_saves",
     .help = "Saves of --state-file (checkpoints and the one at stop), by result",
     .labels = {kSaveResult},
     .read =
         [](const StateView& v, Index i) noexcept {
             return i[0] == 0 ? state_field<&StateStats::saves_ok>(v, i) : state_field<&StateStats::saves_failed>(v, i);
         }},
    {.prometheus = "flowcop_state_saved_flows",
     .telemetry = "state_saved_flows",
     .help = "Flows the last successful save of --state-file wrote",
     .kind = Kind::gauge,
     .read = state_field<&StateStats::saved_flows>},
    {.prometheus = "flowcop_state_save_duration_seconds",
     .telemetry = "state_save_duration",
     .help = "Time one save of --state-file took (export, write, fsync, rename)",
     .kind = Kind::histogram,
     .histogram = [](const StateView& v) noexcept -> const stats::Histogram& {
         return v.stats != nullptr ? v.stats->save_ns : kNoHistogram;
     }},
};

} // namespace

std::span<const stats::Family<StateView>> state_families()
{
    return kStateRows;
}

metrics::Labels state_labels(const StateView&)
{
    return {};
}

std::span<const stats::Family<CtlView>> ctl_families()
{
    return kCtlRows;
}

metrics::Labels ctl_labels(const CtlView&)
{
    return {};
}

std::span<const stats::Family<CollectorView>> collector_families()
{
    return kCollectorRows;
}

metrics::Labels collector_labels(const CollectorView& c)
{
    return {{"collector", c.collector->name()}};
}

std::span<const stats::Family<LcoreView>> lcore_families()
{
    return kLcoreRows;
}

std::span<const stats::Family<PortSample>> port_families()
{
    return kPortRows;
}

metrics::Labels lcore_labels(const LcoreView& v)
{
    return {{"lcore", std::to_string(v.lcore)}};
}

metrics::Labels port_labels(const PortSample& p)
{
    return {{"port", std::to_string(p.port)}, {"name", *p.name}};
}

uint64_t lcore_total(const StatsView& v, const char* key, stats::Index idx, bool all_labels)
{
    const Lcore* f = stats::find(lcore_families(), key);
    if (f == nullptr)
        return 0;
    const std::span<const LcoreView> lcores(v.lcores);
    return all_labels ? stats::total(*f, lcores) : stats::sum(*f, lcores, idx);
}

} // namespace flowcop::app
