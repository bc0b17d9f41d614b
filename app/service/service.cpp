// SPDX-License-Identifier: BSD-3-Clause
#include "service.h"

#include "exporter.h"
#include "mbuf_pool.h"
#include "status.h"
#include "telemetry.h"

#include <flowgen/flowgen.h>
#include <tcpstate/tcp_state.h>

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace flowcop::app {

tcpstate::Timeouts timeouts_from(const Options& opt)
{
    tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
    for (size_t i = 0; i < kTcpStateFlagNames.size(); ++i) {
        tcpstate::State s;
        if (tcpstate::parse_state_flag_name(kTcpStateFlagNames[i], s))
            t.seconds[static_cast<size_t>(s)] = opt.tcp_timeout_s[i];
    }
    t.default_inactivity = opt.default_inactivity_timeout_s;
    return t;
}

namespace {

int worker_main(void* arg)
{
    auto* ctx = static_cast<std::pair<Worker*, const std::atomic<bool>*>*>(arg);
    ctx->first->run(*ctx->second);
    return 0;
}

} // namespace

Service::Service(const Options& opt) : opt_(opt), current_(opt) {}

Options Service::current_options() const
{
    std::lock_guard<std::mutex> g(current_mu_);
    return current_;
}

void Service::update_options(const Options& o)
{
    std::lock_guard<std::mutex> g(current_mu_);
    current_ = o;
}

Service::~Service()
{
    telemetry_.reset();
    exporter_.reset();
    workers_.clear();
    tables_.clear();
    if (flowgen_)
        flowgen_->stop();
    if (ports_started_)
        close_ports();
    flowgen_.reset();
    if (pool_)
        rte_mempool_free(pool_);
}

StartError Service::start()
{
    std::string error;
    const unsigned lcores = rte_lcore_count();
    flowgen::Config fg;
    if (!opt_.flowgen.empty())
        if (std::string e = flowgen::parse_config(opt_.flowgen.c_str(), fg); !e.empty())
            return {2, format_flag_error("--flowgen", e)};
    const uint16_t ports = rte_eth_dev_count_avail() + (opt_.flowgen.empty() ? 0 : 1);
    // The synthetic port holds up to its RX ring, its TX ring and a burst of
    // mbufs from the same pool, on top of what the real queues need.
    const unsigned extra = opt_.flowgen.empty() ? 0 : 2 * fg.ring + 2 * fg.burst;
    uint64_t mbufs = 0;
    if (std::string e = resolve_mbufs(opt_.mbufs, ports, lcores, extra, mbufs); !e.empty())
        return {2, format_flag_error("--mbufs", e)};
    pool_ = create_mbuf_pool(mbufs, opt_.mbuf_data_room, error);
    if (pool_ == nullptr)
        return {1, "flowcop: " + error};

    if (!opt_.flowgen.empty()) {
        flowgen_ = flowgen::Port::create(fg, pool_, int(rte_socket_id()), error);
        if (!flowgen_)
            return {1, format_flag_error("--flowgen", error)};
    }

    if (opt_.mode == Mode::inline_fwd && rte_eth_dev_count_avail() % 2 != 0)
        return {2, format_flag_error("--mode", "inline forwards between port pairs (0<->1, 2<->3, ...) but " +
                                                   std::to_string(rte_eth_dev_count_avail()) + " port(s) were found")};
    if (!setup_ports(opt_, pool_, plan_, error)) {
        ports_started_ = true; // close whatever did start
        return {1, "flowcop: " + error};
    }
    ports_started_ = true;
    for (const std::string& w : plan_.warnings)
        std::fprintf(stderr, "flowcop: warning: %s\n", w.c_str());

    const TimestampField ts = TimestampField::lookup();
    if (opt_.clock == ClockSource::packet && ts.offset < 0)
        return {2, format_flag_error("--clock", "packet: no port provides packet timestamps "
                                                "(DPDK's pcap vdev and --flowgen do)")};

    const unsigned n_workers = unsigned(plan_.workers.size());
    if (!opt_.events_path.empty()) {
        events_ = events::Writer::open(opt_.events_path, n_workers, opt_.events_ring, error);
        if (!events_)
            return {2, format_flag_error("--events", error)};
    }

    WorkerSettings ws;
    ws.mode = opt_.mode;
    ws.clock = opt_.clock;
    ws.check_interval_ns = uint64_t(opt_.check_interval_ms) * 1'000'000;
    ws.fire_budget = opt_.timeout_budget;
    ws.visit_budget_factor = opt_.visit_budget_factor;
    for (unsigned w = 0; w < n_workers; ++w) {
        const unsigned lcore = plan_.workers[w].lcore;
        conntrack::TableConfig tc;
        tc.name = "flowcop_flows" + std::to_string(lcore);
        tc.capacity = opt_.flows_per_lcore;
        tc.socket_id = int(rte_lcore_to_socket_id(lcore));
        tc.lcore = uint16_t(lcore);
        tc.wheel.buckets = opt_.wheel_buckets;
        tc.wheel.tick_ns = uint64_t(opt_.tick_ms) * 1'000'000;
        tc.timeouts = timeouts_from(opt_);
        tc.active_timeout_s = opt_.active_timeout_s;
        tc.loose_pickup = opt_.loose_pickup;
        auto table = conntrack::FlowTable::create(tc, error);
        if (!table)
            return {1, "flowcop: lcore " + std::to_string(lcore) + ": " + error};
        if (events_)
            table->set_events(&events_->producer(w));
        auto worker = Worker::create(plan_.workers[w], *table, clock_, ts, ws, error);
        if (!worker)
            return {1, "flowcop: " + error};
        tables_.push_back(std::move(table));
        workers_.push_back(std::move(worker));
    }

    if (opt_.metrics_enabled) {
        exporter_ = Exporter::start(*this, error);
        if (!exporter_)
            return {2, format_flag_error("--metrics-addr", error)};
    }
    telemetry_ = std::make_unique<Telemetry>(*this);
    return {};
}

int Service::broadcast(const Command& proto)
{
    // Commands are abandoned, never freed, if a worker does not answer: it may
    // still write to them. A worker answers within one loop turn, so a timeout
    // only happens while it is stopping.
    std::vector<Command*> cmds;
    int sum = 0;
    for (auto& w : workers_) {
        auto* c = new Command();
        c->type = proto.type;
        c->key = proto.key;
        c->timeouts = proto.timeouts;
        c->active_timeout_s = proto.active_timeout_s;
        c->fire_budget = proto.fire_budget;
        c->visit_budget_factor = proto.visit_budget_factor;
        if (!running() || !w->post(c)) {
            delete c;
            cmds.push_back(nullptr);
            sum = -1;
            continue;
        }
        cmds.push_back(c);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (Command* c : cmds) {
        if (c == nullptr)
            continue;
        while (!c->done.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        if (!c->done.load(std::memory_order_acquire)) {
            sum = -1; // abandoned on purpose
            continue;
        }
        if (sum >= 0)
            sum += c->result;
        delete c;
    }
    return sum;
}

int Service::run()
{
    if (events_)
        events_->start();
    if (flowgen_)
        flowgen_->start();
    if (!opt_.quiet)
        print_startup(*this);
    running_.store(true, std::memory_order_release);
    const auto t0 = std::chrono::steady_clock::now();

    std::vector<std::pair<Worker*, const std::atomic<bool>*>> ctx;
    ctx.reserve(workers_.size());
    for (auto& w : workers_)
        ctx.emplace_back(w.get(), &quit_);
    for (size_t i = 1; i < workers_.size(); ++i)
        rte_eal_remote_launch(worker_main, &ctx[i], workers_[i]->lcore());
    std::thread keeper([this] { housekeeping(); });
    workers_[0]->run(quit_);
    quit_.store(true, std::memory_order_relaxed);
    rte_eal_mp_wait_lcore();
    running_.store(false, std::memory_order_release);
    keeper.join();

    if (flowgen_)
        flowgen_->stop();
    if (events_)
        events_->stop_and_flush();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!opt_.quiet)
        print_summary(secs);
    return 0;
}

void Service::housekeeping()
{
    StatusLine status(*this, !opt_.quiet);
    const uint64_t idle_cycles = clock_.cycles_from_ns(uint64_t(opt_.stop_when_idle_ms) * 1'000'000);
    const uint64_t started = rte_rdtsc();
    while (!quit_.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        status.tick();
        if (opt_.stop_when_idle_ms == 0)
            continue;
        uint64_t last = started;
        for (auto& w : workers_)
            last = std::max(last, conntrack::load_relaxed(w->stats().last_rx_tsc));
        if (rte_rdtsc() - last >= idle_cycles)
            quit_.store(true, std::memory_order_relaxed);
    }
    status.finish();
}

void Service::print_summary(double seconds) const
{
    app::print_summary(*this, seconds);
}

} // namespace flowcop::app
