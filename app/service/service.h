// SPDX-License-Identifier: BSD-3-Clause
// The flowcop service: everything between a parsed command line and exit.
//
// start() builds the data plane in dependency order — mbuf pool, the synthetic
// port if asked, ports and the lcore plan, the event writer, one flow table and
// one worker per polling lcore, the exporter and the telemetry commands — and
// fails with one clear sentence (exit code 2 for configuration errors, 1 for
// runtime failures) before any packet is read. run() launches the workers (the
// main lcore is worker 0) and a housekeeping thread (live status line, idle
// stop), and returns once a signal, --stop-when-idle-ms or a failure stopped
// them. Stopping is orderly: RX stops, every open flow is reported destroyed
// with reason "shutdown", events are flushed, a summary is printed, ports are
// released.
#pragma once

#include "clock.h"
#include "options.h"
#include "ports.h"
#include "worker.h"

#include <conntrack/flow_table.h>
#include <events/events.h>
#include <tcpstate/tcp_state.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct rte_mempool;

namespace flowcop::flowgen {
class Port;
}

namespace flowcop::app {

class Exporter;
class Telemetry;

// The per-state timeouts the options describe, as the flow table takes them.
tcpstate::Timeouts timeouts_from(const Options& opt);

struct StartError {
    int exit_code = 0; // 0 = started
    std::string message;
};

class Service {
public:
    explicit Service(const Options& opt);
    ~Service();
    StartError start();
    int run();
    void request_stop() noexcept { quit_.store(true, std::memory_order_relaxed); }

    // Read-only views for the exporter and telemetry (any thread).
    const Options& options() const noexcept { return opt_; }
    const std::vector<std::unique_ptr<Worker>>& workers() const noexcept { return workers_; }
    const events::Writer* events() const noexcept { return events_.get(); }
    const PortPlan& plan() const noexcept { return plan_; }
    const TscClock& clock() const noexcept { return clock_; }
    // The packet mbuf pool (nullptr before start() created it).
    rte_mempool* pool() const noexcept { return pool_; }
    const Exporter* exporter() const noexcept { return exporter_.get(); }
    // The configuration as changed at run time by /flowcop/set (control plane).
    Options current_options() const;
    void update_options(const Options& o);
    bool running() const noexcept { return running_.load(std::memory_order_acquire); }
    // Posts a command to every worker and waits for all of them (control plane only).
    // Returns the sum of the results, or -1 if some worker did not answer in time.
    int broadcast(const Command& cmd);

private:
    void housekeeping();
    void print_summary(double seconds) const;

    Options opt_;
    mutable std::mutex current_mu_;
    Options current_;
    TscClock clock_;
    rte_mempool* pool_ = nullptr;
    std::unique_ptr<flowgen::Port> flowgen_;
    PortPlan plan_;
    std::unique_ptr<events::Writer> events_;
    std::vector<std::unique_ptr<conntrack::FlowTable>> tables_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::unique_ptr<Exporter> exporter_;
    std::unique_ptr<Telemetry> telemetry_;
    std::atomic<bool> quit_{false};
    std::atomic<bool> running_{false};
    bool ports_started_ = false;
};

} // namespace flowcop::app
