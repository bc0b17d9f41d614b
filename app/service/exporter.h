// SPDX-License-Identifier: BSD-3-Clause
// The Prometheus exporter: prometheus-cpp's pull Exposer serving /metrics at
// --metrics-addr, with one custom Collectable that reads flowcop's plain
// per-lcore counters at scrape time (no per-packet cost, no lock the data
// plane waits on: every read is a relaxed load; port counters come from
// rte_eth_stats_get). Per-lcore values carry lcore="N". Names follow the
// Prometheus conventions (base units, _total counters) and pass
// `promtool check metrics` (tests/metrics).
#pragma once

#include <memory>
#include <string>

namespace prometheus {
class Exposer;
}

namespace flowcop::app {

class Service;
class Collector;

class Exporter {
public:
    // Binds and starts serving. nullptr + error ("127.0.0.1:9781: address already in use") on failure.
    static std::unique_ptr<Exporter> start(const Service& s, std::string& error);
    ~Exporter();
    // "http://HOST:PORT/metrics" with the port actually bound, or "" if no exporter runs.
    static std::string where(const Service& s);
    const std::string& url() const noexcept { return url_; }

private:
    Exporter() = default;
    std::unique_ptr<prometheus::Exposer> exposer_;
    std::shared_ptr<Collector> collector_;
    std::string url_;
};

} // namespace flowcop::app
