// SPDX-License-Identifier: BSD-3-Clause
// The Prometheus exporter: prometheus-cpp's pull Exposer serving /metrics at
// --metrics-addr (loopback by default), with one custom Collectable that reads
// flowcop's plain per-lcore counters at scrape time: every stats row with a
// Prometheus name (stats_rows.h) over the stats view, in row order, then
// flowcop_config_info and flowcop_up from the Control interface, and
// flowcop_exporter_connections_refused_total (clients outside --metrics-allow, counted as
// civetweb's accepting thread closes them). Per-lcore values
// carry lcore="N", port values port="N",name="<device>". Names follow the Prometheus
// conventions (base units, _total counters; prometheus-cpp 1.0 appends no
// suffix, the names here are final) and pass `promtool check metrics`
// (tests/app/test_metrics_scrape.py). app/operations.md says what each one means.
//
// Threading and cost. Collect() runs on one of the Exposer's kHttpThreads HTTP threads,
// never on a worker lcore, and costs the data plane nothing per packet. A scrape
// never takes a lock the data plane waits on:
//   - flow-table and worker counters and histograms are single-writer fields read
//     with relaxed loads (stats/relaxed.h): no lock, no fence, no shard lock;
//   - event-writer statistics are relaxed atomic loads;
//   - port counters come from rte_eth_stats_get(), which reads the PMD's per-queue
//     counters (pcap, ring, af_packet, null) or device registers, never a lock taken
//     by rx/tx bursts;
//   - flowcop_config_info reads Control::current_options(), whose mutex only the
//     control plane (this exporter and /flowcop/set) ever takes;
//   - prometheus-cpp's own collectables mutex is taken only by its HTTP threads.
// Values read in one scrape are not a single snapshot: a flow created and
// expired between two loads may show in one counter and not yet in the other,
// so created == sum(expired) + active holds exactly only while the lcore is idle
// (flows_active is clamped at 0 rather than wrapping).
//
// Process families: process_* and flowcop_build_info (process_metrics.h).
//
// Lifetime: the Exporter must be destroyed before the view's workers and ports
// and the Control (Service's destructor does so); until then it keeps serving,
// and flowcop_up reports 0 once the data plane has stopped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Exposer;
}

namespace flowcop::app {

class Control;
class Collector;
struct StatsView;

class Exporter {
public:
    // A client that connects and sends no complete request (a stuck scraper, a port scan, a
    // request sent a byte at a time) holds one HTTP thread for at most kRequestTimeoutMs from the
    // moment a thread takes the connection (civetweb counts the whole request, not the gaps).
    // Scrapes are served at once while fewer than kHttpThreads such connections are open.
    // civetweb serves connections in arrival order and reserves nothing per client or port, so
    // behind n held connections, even reopened as fast as they are closed, a scrape waits about
    // ceil((n - kHttpThreads + 1) / kHttpThreads) x kRequestTimeoutMs: 1.0 s for 24, 6.0 s for 100
    // (measured; Prometheus gives up after its 10 s scrape timeout, so from about 160). A client
    // does send its request as soon as it connects: 500 ms covers a round trip of a few hundred.
    static constexpr unsigned kHttpThreads = 8;
    static constexpr unsigned kRequestTimeoutMs = 500;
    // Destruction stops the HTTP server within about this, unless a client holds a connection (then
    // up to kRequestTimeoutMs): civetweb's accept loop is woken by a connection every kStopKnockMs.
    static constexpr unsigned kStopKnockMs = 10;
    // Binds host:port (host an IPv4 or IPv6 literal without brackets; port 0 = any free one) and
    // starts serving. allow (Options::metrics_allow, canonical networks; empty = everyone) becomes
    // civetweb's access_control_list, which its accepting thread checks before a connection is
    // queued for an HTTP thread: a client outside it is closed at once and holds no thread, so
    // the bound above applies only to clients inside it. nullptr on failure, with error
    // ("127.0.0.1:9781: cannot listen (...)") and the flag it is about (--metrics-addr, or
    // --metrics-allow when the HTTP server cannot take an IPv6 network).
    static std::unique_ptr<Exporter> start(const StatsView& view, const Control& control, const std::string& host,
                                           uint16_t port, const std::vector<std::string>& allow, std::string& error,
                                           std::string& error_flag);
    ~Exporter();
    // "http://HOST:PORT/metrics" with the port actually bound.
    const std::string& url() const noexcept { return _url; }

private:
    Exporter() = default;
    std::unique_ptr<prometheus::Exposer> _exposer;
    std::shared_ptr<Collector> _collector;
    std::string _url;
    std::string _wake_host; // where destruction knocks (the bound address; loopback for a wildcard)
    uint16_t _port = 0;
};

} // namespace flowcop::app
