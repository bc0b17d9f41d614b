// SPDX-License-Identifier: BSD-3-Clause
// The flowcop service: everything between a parsed command line and exit.
//
// start() builds the data plane in dependency order — mbuf pool, the synthetic
// port if asked, ports and the lcore plan, the event writer, one flow table and
// one worker per polling lcore, the stats view over them (stats_view.h), the
// exporter and the telemetry commands — and fails with one clear sentence (exit
// code 2 for configuration errors, 1 for runtime failures) before any packet is
// read. The exporter, telemetry and the status line get the stats view and the
// Control interface the service implements (control.h), never the Service. run() launches the workers (the
// main lcore is worker 0) and a housekeeping thread (live status line, idle
// stop), and returns once a signal, --stop-when-idle-ms or a failure stopped
// them. Stopping is orderly: RX stops, every open flow is reported destroyed
// with reason "shutdown", events and IPFIX records are flushed, a summary is
// printed, ports are released. The event writer and the IPFIX export thread run
// on DPDK's control-thread CPUs (control_cpus.h), never on a polling lcore's.
#pragma once

#include <service/control/control.h>
#include <service/control/state_stats.h>
#include <service/control/stats_view.h>
#include <service/dataplane/clock.h>
#include <service/dataplane/worker.h>
#include <service/options/options.h>
#include <service/plan/ports.h>

#include <conntrack/flow_table.h>
#include <events/events.h>
#include <ipfix/exporter.h>
#include <tcpstate/tcp_state.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct rte_mempool;

namespace flowcop::flowgen {
class Port;
struct Config;
} // namespace flowcop::flowgen

namespace flowcop::app {

class Exporter;
class Telemetry;
class CtlServer;

// The per-state timeouts the options describe, as the flow table takes them.
tcpstate::Timeouts timeouts_from(const Options& opt);
// TCP window tracking's policy from the --tcp-* options.
tcpstate::WindowPolicy window_policy_from(const Options& opt);
protostate::Timeouts proto_timeouts_from(const Options& opt);

// The IPFIX exporter's settings from the options and the lcore plan (one observation domain per lcore).
ipfix::ExporterConfig ipfix_config(const Options& opt, const PortPlan& plan);

struct StartError {
    int exit_code = 0; // 0 = started
    std::string message;
};

class Service final : public Control {
public:
    explicit Service(const Options& opt);
    ~Service() override;
    StartError start();
    int run();
    // Both async-signal-safe (lock-free atomic stores), callable once start() has succeeded.
    void request_stop() noexcept { _quit.store(true, std::memory_order_relaxed); }
    // Reopens the events file (SIGHUP, logrotate): events::Writer::request_reopen(); no-op without one.
    // SIGHUP also re-reads --policy: the housekeeping thread does it (reload_policy()) on its next tick.
    void request_reopen() noexcept
    {
        if (_events)
            _events->request_reopen();
        _policy_reload_requested.store(true, std::memory_order_relaxed);
    }

    // Control (any control-plane thread).
    bool running() const noexcept override { return _running.load(std::memory_order_acquire); }
    Options current_options() const override;
    uint64_t now_ns() const noexcept override { return _clock.now_ns(); }
    int kill(const packet::FlowKey& key) override;
    bool apply(const Options& o) override;
    size_t snapshot(size_t worker, const conntrack::SnapshotFilter& filter, conntrack::FlowSnapshot* out,
                    size_t max) const override;
    uint32_t read_slice(size_t worker, uint32_t start, uint32_t max_records, conntrack::FlowSnapshot* out,
                        size_t& n) const override;
    int get(const packet::FlowKey& key, conntrack::FlowSnapshot& out, size_t& worker) override;
    int set_timeout(const packet::FlowKey& key, uint32_t seconds, conntrack::FlowSnapshot& out,
                    size_t& worker) override;
    int kill_ids(size_t worker, const uint64_t* ids, unsigned n, uint8_t* killed) override;
    bool reload_policy(std::string& error) override;
    PolicyListing policy_listing() const override;

    // What every reader of the counters iterates; complete once start() has succeeded.
    const StatsView& stats_view() const noexcept { return _view; }

private:
    // Posts a copy of `request` to every worker and waits for all of them (control plane only).
    // Returns the sum of the results, or -1 if some worker did not answer in time.
    int broadcast(const Command& request);
    // Posts a copy of `request` to one worker and waits for it (2 s at most): its result (and its `flow`
    // in *flow when given), or -1 if it was not posted or not answered.
    int ask(size_t worker, const Command& request, conntrack::FlowSnapshot* flow);
    // Asks each worker in turn (a command about one flow) until one answers non-zero: that result, with
    // its `flow` in `out` and its index in `worker`; 0 if every worker answered 0, -1 if one did not answer.
    int ask_each(const Command& request, conntrack::FlowSnapshot& out, size_t& worker);
    // start()'s steps, in order; each fails with one sentence and an exit code.
    StartError create_pool(const flowgen::Config& fg);   // the mbuf pool, sized for every queue and ring
    StartError start_ports(const flowgen::Config& fg);   // the synthetic port, the ports and the lcore plan
    StartError create_streams();                         // the event stream, --events and --ipfix
    StartError create_workers(const TimestampField& ts); // one flow table and one worker per polling lcore
    // --policy: reads and compiles the file into `out` (port names resolved by DPDK); false and one line.
    bool load_policy(policy::Policy& out, std::string& error) const;
    StartError start_control(); // the stats view, the exporter, telemetry and the control socket
    void build_stats_view();
    void housekeeping();
    // --state-file (state.h): the restore at start (before any worker runs), the checkpoints' thread body
    // (--state-checkpoint-s), and the save at stop (workers stopped, flows still open), which then
    // ends the flows (without events for the ones saved: they go on in the next run).
    void restore_flows();
    void checkpoint_loop();
    void save_and_end_flows();

    Options _opt;
    mutable std::mutex _current_mu;
    Options _current;
    TscClock _clock;
    rte_mempool* _pool = nullptr;
    std::unique_ptr<flowgen::Port> _flowgen;
    PortPlan _plan;
    std::unique_ptr<events::Stream> _stream; // outlives its subscribers (declared before them)
    std::unique_ptr<events::Writer> _events;
    std::unique_ptr<ipfix::Exporter> _ipfix;
    std::vector<std::unique_ptr<conntrack::FlowTable>> _tables;
    std::unique_ptr<HandoffRings> _handoff; // the handoff plan's rings (nullptr under the others)
    std::unique_ptr<ReplayTime> _replay;    // --clock packet: the time the workers share (nullptr under tsc)
    std::vector<std::unique_ptr<Worker>> _workers;
    std::unique_ptr<PacketRingDrops> _ring_drops; // af_packet ports' kernel drops (nullptr without any)
    StatsView _view;
    std::unique_ptr<Exporter> _exporter;
    std::unique_ptr<Telemetry> _telemetry;
    events::Subscription* _follow = nullptr; // the control socket's (flowcopctl -E); the stream owns it
    CtlServerStats _ctl_stats;               // the control socket's counters (ctl_stats.h)
    StateStats _state_stats;                 // --state-file's restore and saves (state_stats.h)
    bool _state_read = false;                // restore_flows() read --state-file whole (consume_state_file)
    uint64_t _owner_seed = 0;                // flow_owner.h's seed for the handoff plan, drawn at start
    std::unique_ptr<CtlServer> _ctl;
    // --policy: the compiled policy (each worker holds its own copy) and reload's bookkeeping. _policy_mu
    // serialises reloads with the readers of the workers' policy pointers (policy_listing()); the data
    // plane never takes it.
    mutable std::mutex _policy_mu;
    std::unique_ptr<policy::Policy> _policy;
    uint64_t _policy_reloads_ok = 0, _policy_reloads_failed = 0;
    std::string _policy_last_error;
    std::atomic<bool> _policy_reload_requested{false}; // SIGHUP: the housekeeping thread reloads
    std::atomic<bool> _quit{false};
    std::atomic<bool> _running{false};
    bool _ports_started = false;
    bool _flowgen_reads_file = false; // --flowgen replay= (overflow=wait): a file port, which may wait for a full ring
};

} // namespace flowcop::app
