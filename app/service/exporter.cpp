// SPDX-License-Identifier: BSD-3-Clause
#include "exporter.h"

#include "service.h"

#include <conntrack/relaxed.h>
#include <metrics/families.h>
#include <packet/verdict.h>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <rte_ethdev.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace flowcop::app {

using conntrack::load_relaxed;
using metrics::Family;
using metrics::Labels;
using prometheus::MetricType;

class Collector : public prometheus::Collectable {
public:
    explicit Collector(const Service& s) : _s(s) {}
    std::vector<prometheus::MetricFamily> Collect() const override;

private:
    void lcore_families(std::vector<prometheus::MetricFamily>& out) const;
    void event_families(std::vector<prometheus::MetricFamily>& out) const;
    void port_families(std::vector<prometheus::MetricFamily>& out) const;
    void config_family(std::vector<prometheus::MetricFamily>& out) const;
    const Service& _s;
};

namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

std::vector<uint64_t> bounds_of(const conntrack::Histogram& h)
{
    std::vector<uint64_t> b;
    for (unsigned i = 0; i < h.bounds(); ++i)
        b.push_back(h.bound(i));
    return b;
}

std::vector<uint64_t> counts_of(const conntrack::Histogram& h)
{
    std::vector<uint64_t> c;
    for (unsigned i = 0; i <= h.bounds(); ++i)
        c.push_back(h.count_in(i));
    return c;
}

} // namespace

void Collector::lcore_families(std::vector<prometheus::MetricFamily>& out) const
{
    Family visited("flowcop_inactivity_cop_visited_total",
                   "Flows the inactivity cop examined (fired, re-linked or deferred); tracks flows coming due, "
                   "not flows open",
                   MetricType::Counter);
    Family fired("flowcop_inactivity_cop_fired_total", "Flows the inactivity cop expired", MetricType::Counter);
    Family exhausted("flowcop_inactivity_cop_budget_exhausted_total",
                     "Cop passes stopped by the fire or visit budget with due work left (timeouts firing late)",
                     MetricType::Counter);
    Family lockfail("flowcop_inactivity_cop_lock_acquire_failure_total",
                    "Due flows the cop could not lock (a control-plane reader held the shard); retried next tick",
                    MetricType::Counter);
    Family passes("flowcop_inactivity_cop_passes_total", "Inactivity cop passes", MetricType::Counter);
    Family pass_s("flowcop_inactivity_cop_pass_duration_seconds", "Duration of one inactivity cop pass",
                  MetricType::Histogram);
    Family lag("flowcop_timeout_lag_seconds", "Expiry time minus the flow's true deadline", MetricType::Histogram);
    Family active("flowcop_flows_active", "Flows in the table", MetricType::Gauge);
    Family capacity("flowcop_flows_capacity", "Flows the table can hold (--flows-per-lcore)", MetricType::Gauge);
    Family created("flowcop_flows_created_total", "Flows created", MetricType::Counter);
    Family expired("flowcop_flows_expired_total", "Flows ended, by reason", MetricType::Counter);
    Family dropped("flowcop_flows_dropped_total", "New flows refused, by reason", MetricType::Counter);
    Family early("flowcop_flows_early_drop_attempts_total", "Times a full table looked for an unassured flow to evict",
                 MetricType::Counter);
    Family packets("flowcop_packets_total",
                   "Packets by what the tracker did with them (tracked, tcp_* outcomes, not tracked protocols, "
                   "each malformed class)",
                   MetricType::Counter);
    Family memory("flowcop_flow_table_memory_bytes", "Memory the flow table allocated (hash, records, wheel)",
                  MetricType::Gauge);
    Family rebased("flowcop_flows_rebased_total", "Flows re-armed after a runtime timeout change", MetricType::Counter);

    for (const auto& w : _s.workers()) {
        const conntrack::FlowTable& t = w->table();
        const conntrack::Counters& c = t.counters();
        const Labels l{{"lcore", std::to_string(w->lcore())}};
        visited.counter(l, double(load_relaxed(c.cop_visited)));
        fired.counter(l, double(load_relaxed(c.cop_fired)));
        exhausted.counter(l, double(load_relaxed(c.cop_budget_exhausted)));
        lockfail.counter(l, double(load_relaxed(c.cop_lock_failures)));
        passes.counter(l, double(load_relaxed(c.cop_passes)));
        pass_s.histogram(l, bounds_of(c.cop_pass_ns), counts_of(c.cop_pass_ns), c.cop_pass_ns.sum(), kNsPerSecond);
        lag.histogram(l, bounds_of(c.timeout_lag_ns), counts_of(c.timeout_lag_ns), c.timeout_lag_ns.sum(),
                      kNsPerSecond);
        active.gauge(l, double(c.active()));
        capacity.gauge(l, double(t.capacity()));
        created.counter(l, double(load_relaxed(c.flows_created)));
        for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
            expired.counter({l[0], {"reason", conntrack::reason_name(static_cast<conntrack::Reason>(r))}},
                            double(load_relaxed(c.flows_expired[r])));
        dropped.counter({l[0], {"reason", "table_full"}}, double(load_relaxed(c.tcp_table_full)));
        early.counter(l, double(load_relaxed(c.early_drop_attempts)));
        packets.counter({l[0], {"result", "tracked"}}, double(load_relaxed(c.tcp_tracked)));
        packets.counter({l[0], {"result", "tcp_invalid_for_state"}}, double(load_relaxed(c.tcp_invalid)));
        packets.counter({l[0], {"result", "tcp_no_flow"}}, double(load_relaxed(c.tcp_no_flow)));
        packets.counter({l[0], {"result", "tcp_table_full"}}, double(load_relaxed(c.tcp_table_full)));
        for (unsigned v = 0; v < packet::kVerdictCount; ++v) {
            const auto verdict = static_cast<packet::Verdict>(v);
            if (verdict == packet::Verdict::tcp)
                continue; // split into the four tcp results above
            packets.counter({l[0], {"result", packet::verdict_name(verdict)}},
                            double(load_relaxed(c.packets_by_verdict[v])));
        }
        memory.gauge(l, double(t.memory_bytes()));
        rebased.counter(l, double(load_relaxed(c.rebase_visited)));
    }
    for (Family* f : {&visited, &fired, &exhausted, &lockfail, &passes, &pass_s, &lag, &active, &capacity, &created,
                      &expired, &dropped, &early, &packets, &memory, &rebased})
        out.push_back(f->take());
}

void Collector::event_families(std::vector<prometheus::MetricFamily>& out) const
{
    const events::Writer* ev = _s.events();
    Family written("flowcop_events_written_total", "Flow events written to --events", MetricType::Counter);
    Family dropped("flowcop_events_dropped_total",
                   "Flow events lost: ring_full (the writer fell behind) or write_error (the output failed)",
                   MetricType::Counter);
    Family errors("flowcop_events_write_errors_total", "Failed writes of the event log", MetricType::Counter);
    for (size_t i = 0; i < _s.workers().size(); ++i) {
        const std::string lc = std::to_string(_s.workers()[i]->lcore());
        const events::WriterStats st = ev ? ev->stats(unsigned(i)) : events::WriterStats{};
        written.counter({{"lcore", lc}}, double(st.written));
        dropped.counter({{"lcore", lc}, {"reason", "ring_full"}}, double(st.dropped_full));
        dropped.counter({{"lcore", lc}, {"reason", "write_error"}}, double(st.dropped_write));
        errors.counter({{"lcore", lc}}, double(st.write_errors));
    }
    out.push_back(written.take());
    out.push_back(dropped.take());
    out.push_back(errors.take());
}

void Collector::port_families(std::vector<prometheus::MetricFamily>& out) const
{
    Family rx("flowcop_port_rx_packets_total", "Packets received by the port", MetricType::Counter);
    Family tx("flowcop_port_tx_packets_total", "Packets sent by the port", MetricType::Counter);
    Family rxb("flowcop_port_rx_bytes_total", "Bytes received by the port", MetricType::Counter);
    Family txb("flowcop_port_tx_bytes_total", "Bytes sent by the port", MetricType::Counter);
    Family missed("flowcop_port_rx_missed_total", "Packets the port dropped because RX was not polled fast enough",
                  MetricType::Counter);
    Family errors("flowcop_port_rx_errors_total", "Erroneous packets received by the port", MetricType::Counter);
    Family nombuf("flowcop_port_rx_nombuf_total", "RX mbuf allocation failures", MetricType::Counter);
    Family txerr("flowcop_port_tx_errors_total", "Failed transmissions", MetricType::Counter);
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_stats st{};
        if (rte_eth_stats_get(p, &st) != 0)
            continue;
        const Labels l{{"port", std::to_string(p)}, {"name", _s.plan().port_name(p)}};
        rx.counter(l, double(st.ipackets));
        tx.counter(l, double(st.opackets));
        rxb.counter(l, double(st.ibytes));
        txb.counter(l, double(st.obytes));
        missed.counter(l, double(st.imissed));
        errors.counter(l, double(st.ierrors));
        nombuf.counter(l, double(st.rx_nombuf));
        txerr.counter(l, double(st.oerrors));
    }
    for (Family* f : {&rx, &tx, &rxb, &txb, &missed, &errors, &nombuf, &txerr})
        out.push_back(f->take());
}

void Collector::config_family(std::vector<prometheus::MetricFamily>& out) const
{
    Family info("flowcop_config_info", "The running configuration (value is always 1)", MetricType::Gauge);
    Labels l;
    for (auto& [k, v] : describe(_s.current_options()))
        l.emplace_back(k, v);
    info.gauge(l, 1);
    out.push_back(info.take());
    Family up("flowcop_up", "1 while the data plane runs", MetricType::Gauge);
    up.gauge({}, _s.running() ? 1 : 0);
    out.push_back(up.take());
}

std::vector<prometheus::MetricFamily> Collector::Collect() const
{
    std::vector<prometheus::MetricFamily> out;
    lcore_families(out);
    event_families(out);
    port_families(out);
    config_family(out);
    return out;
}

namespace {

// Why the Exposer could not listen: civetweb only says "null context". Binding a
// plain socket to the same address tells a taken or foreign address (errno) from
// an address the HTTP server itself cannot serve. Returns "" if the bind works.
std::string bind_error(const std::string& host, uint16_t port, bool v6)
{
    sockaddr_storage ss{};
    socklen_t len;
    if (v6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1)
            return "not an IPv6 address";
        len = sizeof(*a);
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1)
            return "not an IPv4 address";
        len = sizeof(*a);
    }
    const int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0)
        return std::strerror(errno);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); // as civetweb does
    const int rc = bind(fd, reinterpret_cast<sockaddr*>(&ss), len);
    const int err = errno;
    close(fd);
    return rc == 0 ? std::string() : std::strerror(err);
}

} // namespace

std::unique_ptr<Exporter> Exporter::start(const Service& s, std::string& error)
{
    const Options& o = s.options();
    const bool v6 = o.metrics_host.find(':') != std::string::npos;
    const std::string host = v6 ? "[" + o.metrics_host + "]" : o.metrics_host;
    const std::string bind = host + ":" + std::to_string(o.metrics_port);
    std::unique_ptr<Exporter> e(new Exporter());
    try {
        // civetweb gives each connection a thread until it is served, and waits 30 s
        // for a request by default: two idle connections blocked every scrape.
        e->_exposer = std::make_unique<prometheus::Exposer>(
            std::vector<std::string>{"listening_ports", bind, "num_threads", std::to_string(kHttpThreads),
                                     "request_timeout_ms", std::to_string(kRequestTimeoutMs)});
    } catch (const std::exception&) {
        const std::string why = bind_error(o.metrics_host, o.metrics_port, v6);
        if (!why.empty())
            error = bind + ": cannot listen: " + why;
        else if (v6)
            error = bind + ": cannot listen on IPv6: the HTTP server prometheus-cpp uses (civetweb) was built "
                           "without IPv6 (as Debian 12's is); use an IPv4 address such as 127.0.0.1";
        else
            error = bind + ": cannot listen (the HTTP server refused the address)";
        return nullptr;
    }
    const std::vector<int> ports = e->_exposer->GetListeningPorts();
    const int port = ports.empty() ? o.metrics_port : ports.front();
    e->_url = "http://" + host + ":" + std::to_string(port) + "/metrics";
    e->_collector = std::make_shared<Collector>(s);
    e->_exposer->RegisterCollectable(e->_collector);
    return e;
}

Exporter::~Exporter()
{
    if (_exposer)
        _exposer->RemoveCollectable(_collector);
}

std::string Exporter::where(const Service& s)
{
    return s.exporter() ? s.exporter()->url() : std::string();
}

} // namespace flowcop::app
