// SPDX-License-Identifier: BSD-3-Clause
#include "status.h"

#include "stats_rows.h"
#include <service/build_info.h>
#include <service/log.h>

#include <conntrack/counters.h>
#include <conntrack/proto.h>
#include <conntrack/reason.h>
#include <packet/verdict.h>
#include <stats/relaxed.h>
#include <tcpstate/tcp_state.h>

#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdio>
#include <string>
#include <unistd.h>

namespace flowcop::app {
namespace {

constexpr const char* kKeys[] = {
    "rx_packets",
    "tx_packets",
    "tx_dropped",
    "policy_dropped",
    "policy_untraced",
    "packets_without_timestamp",
    "flows_active",
    "flows_created",
    "flows_expired",
    "proto_flows_created",
    "verdict",
    "packets",
    "inactivity_cop_passes",
    "inactivity_cop_visited",
    "inactivity_cop_fired",
    "inactivity_cop_budget_exhausted",
    "inactivity_cop_lock_acquire_failure",
    "events_written",
    "events_dropped",
    "events_write_errors",
    "ipfix_records",
    "ipfix_interim_records",
    "ipfix_dropped",
};

unsigned long long total(const StatsView& v, const char* key)
{
    return lcore_total(v, key);
}

// One label value of a labelled row, summed over lcores.
unsigned long long total_of(const StatsView& v, const char* key, unsigned value)
{
    return lcore_total(v, key, stats::Index{value, 0}, false);
}

// The tables' end-of-run tallies (conntrack/counters.h): packets and bytes counted on flows, by family, and
// what was still open at stop by state, so "closed 0, shutdown 159" reads as "46 in TIME_WAIT, ...".
void print_flow_tallies(const StatsView& v)
{
    unsigned long long packets[conntrack::kProtoCount] = {}, bytes[conntrack::kProtoCount] = {};
    unsigned long long open[tcpstate::kStateCount + 2] = {}, open_total = 0;
    for (const LcoreView& l : v.lcores) {
        if (l.table == nullptr)
            continue;
        for (size_t p = 0; p < conntrack::kProtoCount; ++p) {
            packets[p] += stats::load_relaxed(l.table->ended_packets[p]);
            bytes[p] += stats::load_relaxed(l.table->ended_bytes[p]);
        }
        for (size_t s = 0; s < l.table->open_at_stop.size(); ++s) {
            open[s] += stats::load_relaxed(l.table->open_at_stop[s]);
            open_total += stats::load_relaxed(l.table->open_at_stop[s]);
        }
    }
    unsigned long long all_packets = 0, all_bytes = 0;
    for (size_t p = 0; p < conntrack::kProtoCount; ++p)
        all_packets += packets[p], all_bytes += bytes[p];
    std::fprintf(stderr, "\n  on flows: %llu packets, %llu bytes (", all_packets, all_bytes);
    for (size_t p = 0; p < conntrack::kProtoCount; ++p)
        std::fprintf(stderr, "%s%s %llu/%llu", p ? ", " : "", conntrack::proto_name(conntrack::Proto(p)), packets[p],
                     bytes[p]);
    std::fprintf(stderr, ")\n  open at stop: %llu", open_total);
    const char* sep = " (";
    for (size_t s = 0; s < std::size(open); ++s) {
        if (open[s] == 0)
            continue;
        if (s == conntrack::Counters::kOpenUnreplied || s == conntrack::Counters::kOpenReplied)
            std::fprintf(stderr, "%s%llu other-protocol %s", sep, open[s],
                         s == conntrack::Counters::kOpenReplied ? "REPLIED" : "UNREPLIED");
        else
            std::fprintf(stderr, "%s%llu in %s", sep, open[s], tcpstate::state_name(tcpstate::State(s)));
        sep = ", ";
    }
    std::fputs(open_total ? "): ended at stop" : "", stderr);
}

} // namespace

std::span<const char* const> status_keys()
{
    return kKeys;
}

StatusLine::StatusLine(const StatsView& view, bool enabled)
    : _view(view), _enabled(enabled && isatty(STDERR_FILENO)), _last(read()), _last_at(std::chrono::steady_clock::now())
{}

StatusLine::Reading StatusLine::read() const
{
    return {total(_view, "rx_packets"), total(_view, "flows_active"), total(_view, "flows_expired"),
            total(_view, "inactivity_cop_visited"), total(_view, "inactivity_cop_budget_exhausted")};
}

void StatusLine::tick()
{
    if (!_enabled)
        return;
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - _last_at).count();
    if (dt < 1.0)
        return;
    const Reading t = read();
    auto rate = [dt](uint64_t a, uint64_t b) { return double(a - b) / dt; };
    std::fprintf(stderr, "\r\033[K%.0f pps | %llu flows | %.0f expiries/s | %.0f cop visits/s | budget hits %llu",
                 rate(t.rx_packets, _last.rx_packets), (unsigned long long)t.flows_active,
                 rate(t.flows_expired, _last.flows_expired), rate(t.cop_visited, _last.cop_visited),
                 (unsigned long long)t.cop_budget_exhausted);
    std::fflush(stderr);
    _printed = true;
    _last = t;
    _last_at = now;
}

void StatusLine::finish()
{
    if (_printed)
        std::fputs("\n", stderr);
}

void print_startup(const Options& o, const PortPlan& plan, rte_mempool* pool, const std::string& metrics_url)
{
    log::write(RTE_LOG_INFO, log::Part::service, "%s: %s mode, %s clock, %zu worker lcore(s)", version_line().c_str(),
               o.mode == Mode::monitor ? "monitor" : "inline", o.clock == ClockSource::tsc ? "tsc" : "packet",
               plan.workers.size());
    log::write(RTE_LOG_INFO, log::Part::service, "flowcop: ownership plan %s (%s): %s", plan_name(plan.kind),
               reason_name(plan.reason), plan.why.c_str());
    for (const WorkerPlan& w : plan.workers) {
        for (const RxQueueRef& q : w.rx)
            log::write(RTE_LOG_INFO, log::Part::service, "flowcop:   lcore %u polls port %u (%s) queue %u", w.lcore,
                       q.port, plan.port_name(q.port).c_str(), q.queue);
        if (w.rx.empty())
            log::write(RTE_LOG_INFO, log::Part::service,
                       "flowcop:   lcore %u polls no queue: it tracks the packets handed off to it", w.lcore);
    }
    // --mbufs auto resolved: what the pool holds and the memory it took (mbuf_pool.h).
    if (pool != nullptr) {
        size_t bytes = 0;
        rte_mempool_mem_iter(
            pool,
            [](rte_mempool*, void* sum, rte_mempool_memhdr* m, unsigned) { *static_cast<size_t*>(sum) += m->len; },
            &bytes);
        log::write(RTE_LOG_INFO, log::Part::service, "flowcop: mbuf pool: %u mbufs with a %u-byte data room, %.1f MiB",
                   pool->size, unsigned(rte_pktmbuf_data_room_size(pool)), double(bytes) / (1 << 20));
    }
    log::write(RTE_LOG_INFO, log::Part::service, "flowcop: config: %s", describe_line(o).c_str());
    if (!metrics_url.empty())
        log::write(RTE_LOG_INFO, log::Part::service, "flowcop: metrics at %s", metrics_url.c_str());
}

void print_summary(const StatsView& v, Mode mode, double seconds)
{
    std::fprintf(stderr, "flowcop: stopped after %.1f s\n", seconds);
    std::fprintf(stderr, "  packets: %llu received", total(v, "rx_packets"));
    if (mode == Mode::inline_fwd)
        std::fprintf(stderr, ", %llu forwarded, %llu tx-dropped", total(v, "tx_packets"), total(v, "tx_dropped"));
    // --policy in inline mode: received = forwarded + tx-dropped + dropped by policy (+ handoff drops).
    if (const unsigned long long n = total(v, "policy_dropped"))
        std::fprintf(stderr, ", %llu dropped by policy", n);
    if (const unsigned long long n = total(v, "packets_without_timestamp"))
        std::fprintf(stderr, ", %llu without timestamp", n);
    std::fputs("\n  by verdict:", stderr);
    for (unsigned i = 0; i < packet::kVerdictCount; ++i)
        if (const unsigned long long n = total_of(v, "verdict", i))
            std::fprintf(stderr, " %s %llu", packet::verdict_name(static_cast<packet::Verdict>(i)), n);
    // The packets row's result label starts with tracked, tcp_invalid_for_state, tcp_no_flow, tcp_table_full,
    // tcp_out_of_window.
    std::fprintf(stderr,
                 "\n  tcp: %llu invalid for state, %llu out of window, %llu could not start a flow, %llu refused "
                 "(table full)\n",
                 total_of(v, "packets", 1), total_of(v, "packets", 4), total_of(v, "packets", 2),
                 total_of(v, "packets", 3));
    // flowcop_proto_packets_total's result label: tracked, no_flow, table_full, per non-TCP family.
    unsigned long long other[3] = {};
    for (unsigned p = 0; p + 1 < conntrack::kProtoCount; ++p)
        for (unsigned r = 0; r < 3; ++r)
            other[r] += lcore_total(v, "proto_packets", stats::Index{p, r}, false);
    std::fprintf(stderr,
                 "  other protocols: %llu tracked, %llu could not start a flow, %llu refused (table full);"
                 " fragments: %llu counted on a flow\n",
                 other[0], other[1], other[2],
                 // flowcop_fragments_total's result label: tracked, no_flow, attributed_late, unattributed.
                 total_of(v, "fragments", 0) + total_of(v, "fragments", 2));
    // --policy inline: what its drops kept out of the table (harness.py subtracts the refused ones from the
    // packets counted on flows).
    if (const unsigned long long n = total(v, "policy_dropped"))
        std::fprintf(
            stderr,
            "  policy: %llu dropped, %llu of them new (no flow), %llu refused TCP segments (not on their flow)\n", n,
            total_of(v, "policy_untraced", 0), total_of(v, "policy_untraced", 1));
    // Where the packets one lcore read for another went (handoff plan): with the verdicts above they add up
    // to the packets received (a handed-off packet is counted by verdict on its owner).
    if (v.lcores.size() > 1)
        std::fprintf(stderr, "  handoff: %llu passed to their owner, %llu dropped (owner's ring full)\n",
                     total(v, "handoff_sent"), total(v, "handoff_dropped"));
    std::fprintf(stderr, "  flows: %llu created (", total(v, "flows_created"));
    for (unsigned p = 0; p < conntrack::kProtoCount; ++p)
        std::fprintf(stderr, "%s%s %llu", p ? ", " : "", conntrack::proto_name(conntrack::Proto(p)),
                     total_of(v, "proto_flows_created", p));
    std::fprintf(stderr, "), %llu active, %llu ended:", total(v, "flows_active"), total(v, "flows_expired"));
    for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
        std::fprintf(stderr, " %s %llu", conntrack::reason_name(static_cast<conntrack::Reason>(r)),
                     total_of(v, "flows_expired", r));
    print_flow_tallies(v);
    std::fprintf(stderr, "\n  cop: %llu passes, %llu visited, %llu fired, %llu budget exhausted, %llu lock failures\n",
                 total(v, "inactivity_cop_passes"), total(v, "inactivity_cop_visited"),
                 total(v, "inactivity_cop_fired"), total(v, "inactivity_cop_budget_exhausted"),
                 total(v, "inactivity_cop_lock_acquire_failure"));
    const bool events = !v.lcores.empty() && v.lcores.front().events != nullptr;
    if (events)
        std::fprintf(stderr, "  events: %llu written, %llu dropped, %llu write errors\n", total(v, "events_written"),
                     total(v, "events_dropped"), total(v, "events_write_errors"));
    if (!v.collectors.empty()) {
        std::fprintf(stderr,
                     "  ipfix: %llu records (%llu interim), %llu dropped (queue full), %llu dropped (tracker full)",
                     total(v, "ipfix_records"), total(v, "ipfix_interim_records"), total_of(v, "ipfix_dropped", 0),
                     total_of(v, "ipfix_dropped", 1));
        for (const CollectorView& c : v.collectors) {
            const ipfix::CollectorStats cs = c.collector->stats();
            std::fprintf(stderr, "; %s: %llu messages, %llu send errors", c.collector->name().c_str(),
                         (unsigned long long)cs.messages, (unsigned long long)cs.send_errors);
        }
        std::fputs("\n", stderr);
    }
    if (const StateStats* s = v.state.stats; s != nullptr && v.state.enabled) {
        uint64_t discarded = 0;
        for (const uint64_t& d : s->discarded)
            discarded += stats::load_relaxed(d);
        std::fprintf(stderr,
                     "  state: %llu flows restored at start (%llu renumbered, %llu discarded), %llu saved by the "
                     "last save; %llu saves, %llu failed\n",
                     (unsigned long long)stats::load_relaxed(s->restored),
                     (unsigned long long)stats::load_relaxed(s->renumbered), (unsigned long long)discarded,
                     (unsigned long long)stats::load_relaxed(s->saved_flows),
                     (unsigned long long)stats::load_relaxed(s->saves_ok),
                     (unsigned long long)stats::load_relaxed(s->saves_failed));
    }
    for (const PortSample& p : v.port_samples())
        std::fprintf(stderr, "  port %u (%s): rx %llu, tx %llu, missed %llu, rx errors %llu, no mbuf %llu\n", p.port,
                     p.name->c_str(), (unsigned long long)p.counters.ipackets, (unsigned long long)p.counters.opackets,
                     (unsigned long long)p.counters.imissed, (unsigned long long)p.counters.ierrors,
                     (unsigned long long)p.counters.rx_nombuf);
}

} // namespace flowcop::app
