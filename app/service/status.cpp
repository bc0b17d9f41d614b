// SPDX-License-Identifier: BSD-3-Clause
#include "status.h"

#include "exporter.h"
#include "service.h"

#include <conntrack/relaxed.h>
#include <packet/verdict.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <string>
#include <unistd.h>

namespace flowcop::app {

using conntrack::load_relaxed;

Totals totals(const Service& s)
{
    Totals t;
    for (const auto& w : s.workers()) {
        const WorkerStats& ws = w->stats();
        t.rx_packets += load_relaxed(ws.rx_packets);
        t.tx_packets += load_relaxed(ws.tx_packets);
        t.tx_dropped += load_relaxed(ws.tx_dropped);
        t.no_timestamp += load_relaxed(ws.no_timestamp);
        const conntrack::Counters& c = w->table().counters();
        t.flows_active += c.active();
        t.flows_expired += c.expired_total();
        t.flows_created += load_relaxed(c.flows_created);
        t.cop_passes += load_relaxed(c.cop_passes);
        t.cop_visited += load_relaxed(c.cop_visited);
        t.cop_fired += load_relaxed(c.cop_fired);
        t.cop_budget_exhausted += load_relaxed(c.cop_budget_exhausted);
        t.cop_lock_failures += load_relaxed(c.cop_lock_failures);
    }
    return t;
}

StatusLine::StatusLine(const Service& s, bool enabled)
    : _s(s), _enabled(enabled && isatty(STDERR_FILENO)), _last(totals(s)), _last_at(std::chrono::steady_clock::now())
{}

void StatusLine::tick()
{
    if (!_enabled)
        return;
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - _last_at).count();
    if (dt < 1.0)
        return;
    const Totals t = totals(_s);
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

void print_startup(const Service& s)
{
    const Options& o = s.options();
    std::fprintf(stderr, "flowcop: %s mode, %s clock, %zu worker lcore(s)%s\n",
                 o.mode == Mode::monitor ? "monitor" : "inline", o.clock == ClockSource::tsc ? "tsc" : "packet",
                 s.workers().size(), s.plan().rss ? " with symmetric RSS" : "");
    for (const auto& w : s.workers())
        for (const RxQueueRef& q : w->plan_rx())
            std::fprintf(stderr, "flowcop:   lcore %u polls port %u (%s) queue %u\n", w->lcore(), q.port,
                         s.plan().port_name(q.port).c_str(), q.queue);
    // --mbufs auto resolved: what the pool holds and the memory it took (mbuf_pool.h).
    if (rte_mempool* pool = s.pool()) {
        size_t bytes = 0;
        rte_mempool_mem_iter(
            pool,
            [](rte_mempool*, void* sum, rte_mempool_memhdr* m, unsigned) { *static_cast<size_t*>(sum) += m->len; },
            &bytes);
        std::fprintf(stderr, "flowcop: mbuf pool: %u mbufs with a %u-byte data room, %.1f MiB\n", pool->size,
                     unsigned(rte_pktmbuf_data_room_size(pool)), double(bytes) / (1 << 20));
    }
    std::fprintf(stderr, "flowcop: config: %s\n", describe_line(o).c_str());
    if (const std::string where = Exporter::where(s); !where.empty())
        std::fprintf(stderr, "flowcop: metrics at %s\n", where.c_str());
}

void print_summary(const Service& s, double seconds)
{
    const Totals t = totals(s);
    std::fprintf(stderr, "flowcop: stopped after %.1f s\n", seconds);
    std::fprintf(stderr, "  packets: %llu received", (unsigned long long)t.rx_packets);
    if (s.options().mode == Mode::inline_fwd)
        std::fprintf(stderr, ", %llu forwarded, %llu tx-dropped", (unsigned long long)t.tx_packets,
                     (unsigned long long)t.tx_dropped);
    if (t.no_timestamp)
        std::fprintf(stderr, ", %llu without timestamp", (unsigned long long)t.no_timestamp);
    std::fputs("\n  by verdict:", stderr);
    for (unsigned v = 0; v < packet::kVerdictCount; ++v) {
        uint64_t n = 0;
        for (const auto& w : s.workers())
            n += load_relaxed(w->table().counters().packets_by_verdict[v]);
        if (n)
            std::fprintf(stderr, " %s %llu", packet::verdict_name(static_cast<packet::Verdict>(v)),
                         (unsigned long long)n);
    }
    uint64_t invalid = 0, no_flow = 0, full = 0;
    uint64_t by_reason[conntrack::kReasonCount] = {};
    for (const auto& w : s.workers()) {
        const conntrack::Counters& c = w->table().counters();
        invalid += load_relaxed(c.tcp_invalid);
        no_flow += load_relaxed(c.tcp_no_flow);
        full += load_relaxed(c.tcp_table_full);
        for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
            by_reason[r] += load_relaxed(c.flows_expired[r]);
    }
    std::fprintf(stderr, "\n  tcp: %llu invalid for state, %llu could not start a flow, %llu refused (table full)\n",
                 (unsigned long long)invalid, (unsigned long long)no_flow, (unsigned long long)full);
    std::fprintf(stderr, "  flows: %llu created, %llu active, %llu ended:", (unsigned long long)t.flows_created,
                 (unsigned long long)t.flows_active, (unsigned long long)t.flows_expired);
    for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
        std::fprintf(stderr, " %s %llu", conntrack::reason_name(static_cast<conntrack::Reason>(r)),
                     (unsigned long long)by_reason[r]);
    std::fprintf(stderr, "\n  cop: %llu passes, %llu visited, %llu fired, %llu budget exhausted, %llu lock failures\n",
                 (unsigned long long)t.cop_passes, (unsigned long long)t.cop_visited, (unsigned long long)t.cop_fired,
                 (unsigned long long)t.cop_budget_exhausted, (unsigned long long)t.cop_lock_failures);
    if (const events::Writer* ev = s.events()) {
        uint64_t written = 0, dropped = 0, errors = 0;
        for (size_t i = 0; i < s.workers().size(); ++i) {
            const events::WriterStats st = ev->stats(unsigned(i));
            written += st.written;
            dropped += st.dropped_full + st.dropped_write;
            errors += st.write_errors;
        }
        std::fprintf(stderr, "  events: %llu written, %llu dropped, %llu write errors\n", (unsigned long long)written,
                     (unsigned long long)dropped, (unsigned long long)errors);
    }
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_stats st{};
        if (rte_eth_stats_get(p, &st) == 0)
            std::fprintf(stderr, "  port %u (%s): rx %llu, tx %llu, missed %llu, rx errors %llu, no mbuf %llu\n", p,
                         s.plan().port_name(p).c_str(), (unsigned long long)st.ipackets,
                         (unsigned long long)st.opackets, (unsigned long long)st.imissed,
                         (unsigned long long)st.ierrors, (unsigned long long)st.rx_nombuf);
    }
}

} // namespace flowcop::app
