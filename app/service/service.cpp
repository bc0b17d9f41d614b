// SPDX-License-Identifier: BSD-3-Clause
#include "service.h"

#include "control_thread.h"
#include "log.h"
#include "notify.h"
#include "state.h"
#include <service/control/control_cpus.h>
#include <service/control/ctl_query.h>
#include <service/control/ctl_server.h>
#include <service/control/exporter.h>
#include <service/control/status.h>
#include <service/control/telemetry.h>
#include <service/control/telemetry_guard.h>
#include <service/dataplane/policy_file.h>
#include <service/options/mbuf_pool.h>
#include <service/plan/flow_owner.h>
#include <service/plan/rss_owner.h>

#include <flowgen/flowgen.h>
#include <stats/relaxed.h>
#include <tcpstate/tcp_state.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string_view>
#include <thread>

namespace flowcop::app {

tcpstate::Timeouts timeouts_from(const Options& opt)
{
    tcpstate::Timeouts t = tcpstate::Timeouts::netfilter_defaults();
    for (size_t i = 0; i < kTcpTimeoutStates; ++i)
        t.seconds[static_cast<size_t>(tcp_timeout_state(i))] = opt.tcp_timeout_s[i];
    t.default_inactivity = opt.default_inactivity_timeout_s;
    t.max_retrans = opt.tcp_timeout_max_retrans_s;
    t.unacknowledged = opt.tcp_timeout_unacknowledged_s;
    return t;
}

ipfix::ExporterConfig ipfix_config(const Options& opt, const PortPlan& plan)
{
    ipfix::ExporterConfig c;
    for (const auto& col : opt.ipfix)
        c.collectors.push_back({col.host, col.port});
    c.path_mtu = opt.ipfix_mtu;
    c.template_refresh_ns = uint64_t(opt.ipfix_template_refresh_s) * 1'000'000'000;
    c.template_refresh_messages = opt.ipfix_template_refresh_messages;
    c.max_rate = opt.ipfix_max_rate;
    c.ring_events = opt.events_ring - 1;       // N slots hold N - 1 events (see the --events writer below)
    c.max_tracked_flows = opt.flows_per_lcore; // at most one long flow per table slot
    for (const WorkerPlan& w : plan.workers)
        c.domain_id.push_back(opt.ipfix_domain_base + w.lcore); // a flow's port is in its events (in_port)
    return c;
}

tcpstate::WindowPolicy window_policy_from(const Options& opt)
{
    tcpstate::WindowPolicy p;
    p.be_liberal = opt.tcp_be_liberal;
    p.ignore_invalid_rst = opt.tcp_ignore_invalid_rst;
    p.max_retrans = static_cast<uint8_t>(opt.tcp_max_retrans);
    return p;
}

protostate::Timeouts proto_timeouts_from(const Options& opt)
{
    protostate::Timeouts t = protostate::Timeouts::netfilter_defaults();
    for (size_t i = 0; i < protostate::kTimeoutCount; ++i)
        t.seconds_by_timeout[i] = opt.proto_timeout_s[i];
    return t;
}

namespace {

// The capabilities the --flowgen port declares (drivers/net/flowgen/port.h): its own queues, and with
// queues=N the RSS a NIC would report, dealt in software (PortCaps::soft_rss).
PortCaps flowgen_caps(const flowgen::Config& fg, uint16_t id)
{
    const flowgen::Port::RssCaps rc = flowgen::Port::rss_caps_for(fg);
    PortCaps c;
    c.id = id;
    c.name = "flowgen";
    c.max_rx_queues = c.max_tx_queues = c.own_rx_queues = rc.queues;
    c.rss_offloads = rc.offloads;
    c.hash_key_size = rc.key_bytes;
    c.reta_size = rc.reta_size;
    c.soft_rss = true;
    return c;
}

// One request posted to one worker, from posting to its answer: the one owner of a posted Command.
// It frees the Command unless the worker failed to answer by the deadline: the worker may still write
// it then, so it is abandoned on purpose, never freed (a worker answers within one loop turn; only a
// stopping one does not).
class PostedCommand {
public:
    explicit PostedCommand(const Command& request) : _cmd(new Command(request)) {}
    ~PostedCommand()
    {
        if (!_abandoned)
            delete _cmd;
    }
    PostedCommand(const PostedCommand&) = delete;
    PostedCommand& operator=(const PostedCommand&) = delete;

    // False if the worker's mailbox is full.
    bool post(Worker& worker) noexcept { return worker.post(_cmd); }
    // Waits for the answer; false (and abandoned) if none came by `deadline`. It spins briefly before
    // sleeping, so a walk's many kill_ids commands are not each a scheduler tick long.
    bool wait(std::chrono::steady_clock::time_point deadline)
    {
        for (unsigned spins = 0; !_cmd->done.load(std::memory_order_acquire); ++spins) {
            if (std::chrono::steady_clock::now() >= deadline) {
                _abandoned = true;
                return false;
            }
            if (spins < 64)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        return true;
    }
    const Command& answer() const noexcept { return *_cmd; }

private:
    Command* _cmd;
    bool _abandoned = false;
};

std::chrono::steady_clock::time_point answer_deadline()
{
    return std::chrono::steady_clock::now() + std::chrono::seconds(2);
}

int worker_main(void* arg)
{
    auto* ctx = static_cast<std::pair<Worker*, const std::atomic<bool>*>*>(arg);
    ctx->first->run(*ctx->second);
    return 0;
}

} // namespace

Service::Service(const Options& opt) : _opt(opt), _current(opt) {}

Options Service::current_options() const
{
    std::lock_guard<std::mutex> g(_current_mu);
    return _current;
}

int Service::kill(const packet::FlowKey& key)
{
    Command c;
    c.type = Command::Type::kill;
    c.key = key;
    return broadcast(c);
}

bool Service::apply(const Options& o)
{
    Command budgets;
    budgets.type = Command::Type::set_budgets;
    budgets.fire_budget = o.timeout_budget;
    budgets.visit_budget_factor = o.visit_budget_factor;
    Command timeouts;
    timeouts.type = Command::Type::set_timeouts;
    timeouts.timeouts = timeouts_from(o);
    timeouts.proto_timeouts = proto_timeouts_from(o);
    timeouts.active_timeout_s = o.active_timeout_s;
    Command window;
    window.type = Command::Type::set_window;
    window.window = window_policy_from(o);
    if (broadcast(budgets) < 0 || broadcast(timeouts) < 0 || broadcast(window) < 0)
        return false;
    std::lock_guard<std::mutex> g(_current_mu);
    _current = o;
    return true;
}

size_t Service::snapshot(size_t worker, const conntrack::SnapshotFilter& filter, conntrack::FlowSnapshot* out,
                         size_t max) const
{
    return worker < _tables.size() ? _tables[worker]->snapshot(filter, out, max) : 0;
}

uint32_t Service::read_slice(size_t worker, uint32_t start, uint32_t max_records, conntrack::FlowSnapshot* out,
                             size_t& n) const
{
    n = 0;
    return worker < _tables.size() ? _tables[worker]->read_slice(start, max_records, out, n) : conntrack::kNoPosition;
}

int Service::ask(size_t worker, const Command& request, conntrack::FlowSnapshot* flow)
{
    if (worker >= _workers.size() || !running())
        return -1;
    PostedCommand posted(request);
    if (!posted.post(*_workers[worker]) || !posted.wait(answer_deadline()))
        return -1;
    if (flow != nullptr)
        *flow = posted.answer().flow;
    return posted.answer().result;
}

bool Service::reload_policy(std::string& error)
{
    std::lock_guard<std::mutex> g(_policy_mu);
    if (!_policy) {
        error = "flowcop runs without --policy";
        return false;
    }
    auto fresh = std::make_unique<policy::Policy>();
    bool ok = load_policy(*fresh, error);
    for (size_t w = 0; ok && w < _workers.size(); ++w) {
        // Each lcore gets its own copy and counters; it hands its old pair back to be freed here.
        Command c;
        c.type = Command::Type::set_policy;
        c.policy = new policy::Policy(*fresh);
        c.policy_counters = new policy::Counters(*c.policy);
        PostedCommand posted(c);
        const bool posted_ok = running() && posted.post(*_workers[w]);
        if (!posted_ok || !posted.wait(answer_deadline())) {
            // Never posted: nobody else holds the pair. Posted but unanswered (the worker is stopping): the
            // command is abandoned, and a worker that runs it later swaps the pair in, so it is not freed.
            if (!posted_ok) {
                delete c.policy;
                delete c.policy_counters;
            }
            error = "lcore " + std::to_string(_workers[w]->lcore()) + " did not take the new policy";
            ok = false;
            break;
        }
        delete posted.answer().policy; // the old pair (or the unused new one: result 1)
        delete posted.answer().policy_counters;
    }
    if (!ok) {
        ++_policy_reloads_failed;
        _policy_last_error = error;
        log::write(RTE_LOG_ERR, log::Part::service, "flowcop: policy reload failed, the running policy stays: %s",
                   error.c_str());
        return false;
    }
    _policy = std::move(fresh);
    ++_policy_reloads_ok;
    log::write(RTE_LOG_NOTICE, log::Part::service, "flowcop: policy reloaded from %s (%zu rules)",
               _opt.policy_path.c_str(), _policy->rule_count());
    return true;
}

PolicyListing Service::policy_listing() const
{
    PolicyListing l;
    std::lock_guard<std::mutex> g(_policy_mu);
    if (!_policy)
        return l;
    l.active = true;
    l.enforced = _opt.mode == Mode::inline_fwd;
    l.path = _opt.policy_path;
    l.reloads_ok = _policy_reloads_ok;
    l.reloads_failed = _policy_reloads_failed;
    l.last_error = _policy_last_error;
    const policy::Policy& p = *_policy;
    for (size_t i = 0; i <= p.rule_count(); ++i) {
        PolicyRuleRow r;
        r.index = unsigned(i);
        if (i < p.rule_count()) {
            r.text = p.identity(i);
            r.comment = p.comment(i);
            r.drop = p.action(i) == policy::Action::drop;
        } else {
            r.drop = p.default_action() == policy::Action::drop;
            r.text = r.drop ? "policy drop" : "policy accept";
        }
        l.rules.push_back(std::move(r));
    }
    // Every worker's copy has the rules of _policy (reloads swap them all under this lock).
    for (const auto& w : _workers) {
        const policy::Counters* c = w->policy_counters();
        for (size_t i = 0; c != nullptr && i < l.rules.size() && i < c->size(); ++i) {
            const policy::RuleCounter rc = c->read(i);
            l.rules[i].packets += rc.packets;
            l.rules[i].bytes += rc.bytes;
        }
        const conntrack::StateVerdicts& v = w->policy_verdicts();
        for (unsigned s = 0; s < conntrack::kCtStateCount; ++s)
            for (unsigned a = 0; a < 2; ++a)
                l.verdicts[s][a] += stats::load_relaxed(v.packets[s][a]);
    }
    return l;
}

int Service::ask_each(const Command& request, conntrack::FlowSnapshot& out, size_t& worker)
{
    for (size_t w = 0; w < _workers.size(); ++w) {
        const int result = ask(w, request, &out);
        if (result != 0) {
            worker = w;
            return result;
        }
    }
    return 0;
}

int Service::get(const packet::FlowKey& key, conntrack::FlowSnapshot& out, size_t& worker)
{
    Command c;
    c.type = Command::Type::get;
    c.key = key;
    return ask_each(c, out, worker);
}

int Service::set_timeout(const packet::FlowKey& key, uint32_t seconds, conntrack::FlowSnapshot& out, size_t& worker)
{
    Command c;
    c.type = Command::Type::set_timeout;
    c.key = key;
    c.flow_timeout_s = seconds;
    const int result = ask_each(c, out, worker);
    return result == 2 ? -2 : result;
}

int Service::kill_ids(size_t worker, const uint64_t* ids, unsigned n, uint8_t* killed)
{
    if (worker >= _workers.size() || !running())
        return -1;
    Command c;
    c.type = Command::Type::kill_ids;
    c.n_ids = std::min(n, Command::kMaxIds);
    std::copy(ids, ids + c.n_ids, c.ids);
    PostedCommand posted(c);
    if (!posted.post(*_workers[worker]) || !posted.wait(answer_deadline()))
        return -1;
    if (killed != nullptr)
        std::copy(posted.answer().killed, posted.answer().killed + c.n_ids, killed);
    return posted.answer().result;
}

void Service::build_stats_view()
{
    for (size_t w = 0; w < _workers.size(); ++w) {
        LcoreView v;
        v.lcore = _workers[w]->lcore();
        v.table = &_tables[w]->counters();
        v.fragments = &_workers[w]->fragment_stats();
        v.policy = _workers[w]->policy() != nullptr ? &_workers[w]->policy_verdicts() : nullptr;
        v.worker = &_workers[w]->stats();
        v.capacity = _tables[w]->capacity();
        v.memory_bytes = _tables[w]->memory_bytes();
        v.events = _events.get();
        v.events_producer = unsigned(w);
        v.ipfix = _ipfix.get();
        v.ipfix_producer = unsigned(w);
        _view.lcores.push_back(v);
    }
    for (size_t c = 0; _ipfix && c < _ipfix->collectors(); ++c)
        _view.collectors.push_back({&_ipfix->collector(c)});
    uint16_t p;
    std::vector<PortInterface> packet_ports; // af_packet ports: their kernel rings drop unseen
    RTE_ETH_FOREACH_DEV(p)
    {
        _view.ports.push_back({p, _plan.port_name(p)});
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(p, &info) == 0 && info.driver_name != nullptr &&
            std::string_view(info.driver_name) == "net_af_packet" && info.if_index != 0)
            packet_ports.push_back({p, int(info.if_index)});
    }
    if (!packet_ports.empty()) {
        _ring_drops = PacketRingDrops::discover(packet_ports);
        _view.ring_drops = _ring_drops.get();
    }
    if (_flowgen) {
        _view.synthetic_port = _flowgen->port_id();
        _view.synthetic_drops = [port = _flowgen.get()] { return port->stats().rx_dropped; };
    }
    _view.plan = &_plan;
    _view.ctl = {&_ctl_stats, _follow};
    _view.state = {&_state_stats, !_opt.state_file.empty()};
}

Service::~Service()
{
    _ctl.reset();
    _telemetry.reset();
    _exporter.reset();
    _ipfix.reset();
    _workers.clear();
    _handoff.reset();
    _tables.clear();
    if (_flowgen)
        _flowgen->stop();
    if (_ring_drops)
        _ring_drops->release(); // before close_ports(): the sockets' fds may be reused after
    if (_ports_started)
        close_ports();
    _flowgen.reset();
    if (_pool)
        rte_mempool_free(_pool);
}

StartError Service::start()
{
    flowgen::Config fg;
    if (!_opt.flowgen.empty())
        if (std::string e = flowgen::parse_config(_opt.flowgen.c_str(), fg); !e.empty())
            return {2, format_flag_error("--flowgen", e)};
    if (StartError e = create_pool(fg); e.exit_code != 0)
        return e;
    if (StartError e = start_ports(fg); e.exit_code != 0)
        return e;
    const TimestampField ts = TimestampField::lookup();
    if (_opt.clock == ClockSource::packet && ts.offset < 0)
        return {2, format_flag_error("--clock", "packet: no port provides packet timestamps "
                                                "(DPDK's pcap vdev and --flowgen do)")};
    if (StartError e = create_streams(); e.exit_code != 0)
        return e;
    if (StartError e = create_workers(ts); e.exit_code != 0)
        return e;
    restore_flows();
    return start_control();
}

StartError Service::create_pool(const flowgen::Config& fg)
{
    std::string error;
    const unsigned lcores = rte_lcore_count();
    const uint16_t ports = rte_eth_dev_count_avail() + (_opt.flowgen.empty() ? 0 : 1);
    // The synthetic port holds up to its RX rings, its TX rings and a burst of
    // mbufs from the same pool, on top of what the real queues need.
    uint64_t extra = _opt.flowgen.empty() ? 0 : 2 * uint64_t(fg.ring) * fg.queues + 2 * fg.burst;
    // What the ownership plan adds: handoff rings full of packets, queues a device brings beyond one per lcore.
    const PortCaps fg_caps = flowgen_caps(fg, 0);
    extra += planned_extra_mbufs(_opt, _opt.flowgen.empty() ? nullptr : &fg_caps, lcores, error);
    if (!error.empty())
        return {1, "flowcop: " + error};
    uint64_t mbufs = 0;
    if (std::string e = resolve_mbufs(_opt.mbufs, ports, lcores, extra, mbufs); !e.empty())
        return {2, format_flag_error("--mbufs", e)};
    _pool = create_mbuf_pool(mbufs, _opt.mbuf_data_room, error);
    if (_pool == nullptr)
        return {1, "flowcop: " + error};
    return {};
}

StartError Service::start_ports(const flowgen::Config& fg)
{
    std::string error;
    if (!_opt.flowgen.empty()) {
        _flowgen = flowgen::Port::create(fg, _pool, int(rte_socket_id()), error);
        if (!_flowgen)
            return {1, format_flag_error("--flowgen", error)};
        _flowgen_reads_file = !fg.replay.empty() && fg.overflow == flowgen::Overflow::wait;
    }
    if (_opt.mode == Mode::inline_fwd && rte_eth_dev_count_avail() % 2 != 0)
        return {2, format_flag_error("--mode", "inline forwards between port pairs (0<->1, 2<->3, ...) but " +
                                                   std::to_string(rte_eth_dev_count_avail()) + " port(s) were found")};
    SoftRssPort soft;
    if (_flowgen) {
        soft.caps = flowgen_caps(fg, _flowgen->port_id());
        soft.program = [port = _flowgen.get()](const uint8_t* key, uint16_t len, uint64_t hf,
                                               const std::vector<uint16_t>& table) {
            return port->program_rss(key, len, hf, table);
        };
        soft.read_back = [port = _flowgen.get()] {
            RssReadback got;
            got.conf_read = got.reta_read = true;
            got.key.assign(port->rss().key().begin(), port->rss().key().end());
            got.hf = port->rss().hash_fields();
            got.table = port->rss().table();
            return got;
        };
    }
    _ports_started = true; // from here on, close whatever did start
    if (!setup_ports(_opt, _pool, _plan, error, _flowgen ? &soft : nullptr))
        return {1, "flowcop: " + error};
    for (const std::string& w : _plan.warnings)
        log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: warning: %s", w.c_str());
    // Under rss too: the ICMP errors and fragments a port delivers to a worker that does not own their
    // flow go to the owner through them (worker_related.cpp); every other packet stays where it arrived.
    if (_plan.handoff() || _plan.rss()) {
        std::vector<int> sockets;
        for (const WorkerPlan& w : _plan.workers)
            sockets.push_back(int(rte_lcore_to_socket_id(w.lcore)));
        _handoff = HandoffRings::create(sockets, error);
        if (!_handoff)
            return {1, "flowcop: " + error};
    }
    return {};
}

StartError Service::create_streams()
{
    std::string error;
    // The event stream always exists: flowcopctl -E follows it through the control socket, whose
    // subscription stays paused (the lcores build no event for it) while nobody follows.
    _stream = events::Stream::create(unsigned(_plan.workers.size()), error);
    if (!_stream)
        return {1, "flowcop: " + error};
    _follow = _stream->subscribe("flowcopctl -E", kFollowKinds, CtlServer::kFollowRingEvents, error);
    if (_follow == nullptr)
        return {1, "flowcop: " + error};
    _follow->set_kinds(0);
    if (!_opt.events_path.empty()) {
        // --events-ring is the ring's size in slots (a power of two): an rte_ring of 2^k slots holds
        // 2^k - 1 entries, and asking for 2^k would allocate 2^(k+1) slots (RING_F_EXACT_SZ).
        _events = events::Writer::open(_opt.events_path, *_stream, _opt.events_ring - 1, error,
                                       _opt.events_filter.kinds, _opt.events_filter.protos);
        if (!_events)
            return {2, format_flag_error("--events", error)};
    }
    if (!_opt.ipfix.empty()) {
        _ipfix = ipfix::Exporter::open(ipfix_config(_opt, _plan), *_stream, error);
        if (!_ipfix)
            return {2, format_flag_error("--ipfix", error)};
    }
    return {};
}

namespace {

conntrack::TableConfig table_config(const Options& opt, unsigned lcore)
{
    conntrack::TableConfig tc;
    tc.name = "flowcop_flows" + std::to_string(lcore);
    tc.capacity = opt.flows_per_lcore;
    tc.socket_id = int(rte_lcore_to_socket_id(lcore));
    tc.memory = conntrack::eal_memory(); // hugepages, on the lcore's socket
    tc.lcore = uint16_t(lcore);
    tc.wheel.buckets = opt.wheel_buckets;
    tc.wheel.tick_ns = uint64_t(opt.tick_ms) * 1'000'000;
    tc.timeouts = timeouts_from(opt);
    tc.active_timeout_s = opt.active_timeout_s;
    tc.interim_s = opt.ipfix.empty() ? 0 : opt.ipfix_active_timeout_s; // only IPFIX reads them
    tc.loose_pickup = opt.loose_pickup;
    tc.window = window_policy_from(opt);
    tc.proto_timeouts = proto_timeouts_from(opt);
    tc.track = opt.track;
    tc.invalid_event_rate = opt.events_invalid_rate;
    return tc;
}

// file_port: the --flowgen port when it replays a file (replay=, overflow=wait), else -1.
WorkerSettings worker_settings(const Options& opt, int file_port)
{
    WorkerSettings ws;
    ws.mode = opt.mode;
    ws.clock = opt.clock;
    ws.check_interval_ns = uint64_t(opt.check_interval_ms) * 1'000'000;
    ws.fire_budget = opt.timeout_budget;
    ws.visit_budget_factor = opt.visit_budget_factor;
    ws.vlan_key = opt.vlan_key;
    ws.port_zones = opt.port_zones;
    if (opt.clock == ClockSource::packet) {
        // A port that reads a file can wait for a full handoff ring (handoff.h) and loses nothing by it;
        // a NIC (or the flowgen port's generator) cannot, and drops.
        uint16_t port = 0;
        RTE_ETH_FOREACH_DEV(port)
        {
            rte_eth_dev_info info{};
            if (rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != nullptr &&
                std::string_view(info.driver_name) == "net_pcap") {
                if (ws.wait_ports.size() <= port)
                    ws.wait_ports.resize(size_t(port) + 1, 0);
                ws.wait_ports[port] = 1;
            }
        }
        // The flowgen port replaying a file (replay=, overflow=wait) reads a file too.
        if (file_port >= 0) {
            if (ws.wait_ports.size() <= size_t(file_port))
                ws.wait_ports.resize(size_t(file_port) + 1, 0);
            ws.wait_ports[size_t(file_port)] = 1;
        }
    }
    return ws;
}

} // namespace

bool Service::load_policy(policy::Policy& out, std::string& error) const
{
    // An `iif` name is a DPDK port name (net_af_packet0, 0000:3b:00.0, ...).
    const policy::PortResolver resolve = [](std::string_view name) -> std::optional<uint16_t> {
        uint16_t id = 0;
        if (rte_eth_dev_get_port_by_name(std::string(name).c_str(), &id) != 0)
            return std::nullopt;
        return id;
    };
    return load_policy_file(_opt.policy_path, resolve, out, error);
}

StartError Service::create_workers(const TimestampField& ts)
{
    std::string error;
    WorkerSettings ws = worker_settings(_opt, _flowgen && _flowgen_reads_file ? int(_flowgen->port_id()) : -1);
    if (!_opt.policy_path.empty()) {
        // Once, here: each worker copies it (a bad file is a configuration error, exit 2).
        _policy = std::make_unique<policy::Policy>();
        if (!load_policy(*_policy, error))
            return {2, "flowcop: --policy: " + error};
        ws.policy = _policy.get();
    }
    ws.keep_flows_at_stop = !_opt.state_file.empty(); // saved, then ended by save_and_end_flows()
    _owner_seed = rte_rand();                         // flow_owner.h: where flows land differs between runs
    const uint64_t owner_seed = _owner_seed;
    // One replay time for every lcore (clock.h), under --clock packet only.
    if (_opt.clock == ClockSource::packet)
        _replay = std::make_unique<ReplayTime>(unsigned(_plan.workers.size()));
    // Under the rss plan the flowgen port deals its one timeline to every queue's reader as time marks
    // (flowgen/time_marks.h, clock.h), so each lcore's cop runs where one lcore's would. overflow=drop
    // (a NIC's pace) has none: there each lcore follows its own queue and the others' newest time.
    bool marks = false;
    if (_replay && _flowgen && _plan.rss() && _flowgen->rss_caps().queues > 1) {
        // A queue's marks tell the times of the other queues' frames: an lcore reading two of the queues
        // would apply one queue's marks before it read the other's frames they stand for.
        unsigned most = 0; // the flowgen port's queues one lcore reads, at most
        for (const WorkerPlan& wp : _plan.workers) {
            unsigned mine = 0;
            for (const RxQueueRef& q : wp.rx)
                mine += q.port == _flowgen->port_id() ? 1 : 0;
            most = std::max(most, mine);
        }
        const std::string why =
            most > 1 ? "an lcore reads several of the flowgen port's queues (give it queues= as many as lcores): "
                       "each lcore follows the newest time read, not the one timeline"
                     : _flowgen->enable_time_marks();
        marks = why.empty();
        if (!marks)
            log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: warning: --clock packet under rss: %s",
                       why.c_str());
    }
    for (unsigned w = 0; w < _plan.workers.size(); ++w) {
        const unsigned lcore = _plan.workers[w].lcore;
        auto table = conntrack::FlowTable::create(table_config(_opt, lcore), error);
        if (!table)
            return {1, "flowcop: lcore " + std::to_string(lcore) + ": " + error};
        table->set_events(&_stream->producer(w));
        WorkerPlace place;
        place.index = w;
        place.peer = _plan.peer;
        place.handoff = _handoff.get();
        place.owner_seed = owner_seed;
        place.rss = _plan.rss();
        place.rss_owner = rss_owner_conf(_plan);
        place.replay = _replay.get();
        for (const RxQueueRef& q : _plan.workers[w].rx)
            place.rx_marks.push_back(marks && q.port == _flowgen->port_id() ? _flowgen->time_marks(q.queue) : nullptr);
        auto worker = Worker::create(_plan.workers[w], place, *table, _clock, ts, ws, error);
        if (!worker)
            return {1, "flowcop: " + error};
        _tables.push_back(std::move(table));
        _workers.push_back(std::move(worker));
    }
    return {};
}

StartError Service::start_control()
{
    std::string error;
    control_cpus(); // learnt now, on the main thread, before any thread needs it
    build_stats_view();
    if (_opt.metrics_enabled) {
        // civetweb's threads inherit the affinity of the thread that starts the server.
        std::string flag;
        if (!on_control_cpus(
                "flowcop-setup",
                [&] {
                    _exporter = Exporter::start(_view, *this, _opt.metrics_host, _opt.metrics_port, _opt.metrics_allow,
                                                error, flag);
                },
                error))
            return {1, "flowcop: " + error};
        if (!_exporter)
            return {2, format_flag_error(flag, error)};
    }
    _telemetry = std::make_unique<Telemetry>(_view, *this);
    // The control socket (flowcopctl). Like telemetry, the service runs on without it.
    _ctl = CtlServer::start(CtlServer::default_path(), _view, *this, _follow, _ctl_stats, error);
    if (!_ctl)
        log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: warning: no control socket for flowcopctl: %s",
                   error.c_str());
    return {};
}

int Service::broadcast(const Command& request)
{
    std::vector<std::unique_ptr<PostedCommand>> posted; // nullptr where it could not be posted
    int sum = 0;
    for (auto& w : _workers) {
        auto p = std::make_unique<PostedCommand>(request);
        if (!running() || !p->post(*w)) {
            p.reset();
            sum = -1;
        }
        posted.push_back(std::move(p));
    }
    const auto deadline = answer_deadline();
    for (auto& p : posted) {
        if (!p || !p->wait(deadline))
            sum = -1;
        else if (sum >= 0)
            sum += p->answer().result;
    }
    return sum;
}

int Service::run()
{
    // Started from a control thread, so that every thread they create (flowgen's generator too)
    // inherits EAL's control CPUs; the writer and the IPFIX exporter also pin theirs explicitly.
    std::string error;
    if (!on_control_cpus(
            "flowcop-setup",
            [this] {
                if (_events)
                    _events->start([] { pin_to_control_cpus(); });
                if (_ipfix)
                    _ipfix->start([] { pin_to_control_cpus(); });
                if (_flowgen)
                    _flowgen->start();
            },
            error)) {
        log::write(RTE_LOG_ERR, log::Part::service, "flowcop: %s", error.c_str());
        return 1;
    }
    // Running from here on (the workers launch below): whoever reads the startup line and then
    // scrapes sees flowcop_up 1, never the 0 of a start still in progress.
    _running.store(true, std::memory_order_release);
    const std::string metrics_url = _exporter ? _exporter->url() : std::string();
    if (!_opt.quiet) {
        print_startup(_opt, _plan, _pool, metrics_url);
        if (!_tables.empty())
            log::write(RTE_LOG_INFO, log::Part::service, "flowcop: steady lane code: %s",
                       packet::lane_isa_name(_tables.front()->lane_isa()));
        if (_events)
            log::write(RTE_LOG_INFO, log::Part::service,
                       "flowcop: event ring: %u slots per lcore (%u events, %.1f MiB)", _opt.events_ring,
                       _opt.events_ring - 1, double(_events->ring_bytes()) / (1 << 20));
    }
    // A port the kernel chose (--metrics-addr HOST:0) is known from this line only: printed even
    // under --quiet or a log level that hides the start-up lines, once.
    if (_exporter && _opt.metrics_port == 0 && (_opt.quiet || !log::enabled(RTE_LOG_INFO, log::Part::service)))
        std::fprintf(stderr, "flowcop: metrics at %s\n", metrics_url.c_str());
    log::write(RTE_LOG_DEBUG, log::Part::service, "flowcop: helper threads run on EAL's control CPUs %s",
               describe_control_cpus().c_str());
    const auto t0 = std::chrono::steady_clock::now();

    // The data plane starts now: the file just restored must not be restored a second time (state.h).
    if (_state_read)
        consume_state_file(_opt.state_file);
    std::vector<std::pair<Worker*, const std::atomic<bool>*>> ctx;
    ctx.reserve(_workers.size());
    for (auto& w : _workers)
        ctx.emplace_back(w.get(), &_quit);
    for (size_t i = 1; i < _workers.size(); ++i)
        rte_eal_remote_launch(worker_main, &ctx[i], _workers[i]->lcore());
    std::unique_ptr<ControlThread> keeper = ControlThread::start(
        "flowcop-keeper", [this] { housekeeping(); }, error);
    if (!keeper) {
        log::write(RTE_LOG_ERR, log::Part::service, "flowcop: %s", error.c_str());
        _quit.store(true, std::memory_order_relaxed);
    }
    std::unique_ptr<ControlThread> checkpoints;
    if (_opt.state_checkpoint_s != 0 && _opt.state_file.empty())
        log::write(RTE_LOG_WARNING, log::Part::service,
                   "flowcop: warning: --state-checkpoint-s %u without --state-file: no checkpoints",
                   _opt.state_checkpoint_s);
    if (_opt.state_checkpoint_s != 0 && !_opt.state_file.empty()) {
        checkpoints = ControlThread::start(
            "flowcop-state", [this] { checkpoint_loop(); }, error);
        if (!checkpoints)
            log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: warning: no state checkpoints: %s",
                       error.c_str());
    }
    _workers[0]->run(_quit);
    _quit.store(true, std::memory_order_relaxed);
    rte_eal_mp_wait_lcore();
    _running.store(false, std::memory_order_release);
    if (keeper)
        keeper->join();
    if (checkpoints)
        checkpoints->join();
    // Before the event writer and the IPFIX exporter flush: the flows that were not saved end as usual.
    if (!_opt.state_file.empty())
        save_and_end_flows();

    if (_flowgen)
        _flowgen->stop();
    if (_events)
        _events->stop_and_flush();
    if (_ipfix)
        _ipfix->stop_and_flush();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!_opt.quiet)
        print_summary(_view, _opt.mode, secs);
    return 0;
}

void Service::restore_flows()
{
    if (_opt.state_file.empty())
        return;
    std::vector<conntrack::FlowTable*> tables;
    for (auto& t : _tables)
        tables.push_back(t.get());
    const unsigned n = unsigned(_tables.size());
    const RssOwnerConf rss = rss_owner_conf(_plan);
    const bool by_rss = _plan.rss();
    const uint64_t seed = _owner_seed;
    // Each flow to the worker that will see its packets under this run's plan (architecture.md).
    auto owner = [&](const packet::FlowKey& key) -> unsigned {
        if (n == 1)
            return 0;
        return by_rss ? rss_owner(key, rss) : flow_owner(key, seed, n);
    };
    // A restored flow's IPFIX records continue its earlier ones: the next one is a delta from what the last
    // run's exporter had reported (lib/ipfix/deltas.h), in the domain of its new lcore.
    OnRestored continue_ipfix;
    if (_ipfix)
        continue_ipfix = [this](unsigned w, uint64_t id, const conntrack::FlowImage& im, const conntrack::TimeBase& b) {
            if (im.reported_end_ns == 0)
                return;
            ipfix::DeltaTracker::Reported r;
            for (int d = 0; d < 2; ++d) {
                r.packets[d] = im.reported_packets[d];
                r.bytes[d] = im.reported_bytes[d];
            }
            r.end_ns = b.to_table(im.reported_end_ns);
            _ipfix->seed_reported(w, id, r);
        };
    const RestoreReport r =
        restore_state(_opt, _opt.clock, _clock.now_ns(), tables, owner, _state_stats, continue_ipfix);
    if (!r.line.empty())
        log::write(RTE_LOG_INFO, log::Part::service, "%s", r.line.c_str());
    _state_read = r.read;
}

void Service::checkpoint_loop()
{
    const auto period = std::chrono::seconds(_opt.state_checkpoint_s);
    auto next = std::chrono::steady_clock::now() + period;
    while (!_quit.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (std::chrono::steady_clock::now() < next)
            continue;
        // The newest time any worker has reached: the replay's under --clock packet.
        uint64_t table_now = _clock.now_ns();
        if (_opt.clock == ClockSource::packet) {
            table_now = 0;
            for (auto& w : _workers)
                table_now = std::max(table_now, stats::load_relaxed(w->stats().now_ns));
        }
        std::vector<const conntrack::FlowTable*> tables;
        for (auto& t : _tables)
            tables.push_back(t.get());
        std::string line;
        if (save_state(_opt, state_clock(_opt.clock, table_now), tables, _state_stats, line))
            log::write(RTE_LOG_DEBUG, log::Part::service, "%s (checkpoint)", line.c_str());
        next = std::chrono::steady_clock::now() + period;
    }
}

void Service::save_and_end_flows()
{
    uint64_t table_now = 0;
    for (auto& w : _workers)
        table_now = std::max(table_now, w->stopped_ns());
    std::vector<const conntrack::FlowTable*> tables;
    for (auto& t : _tables)
        tables.push_back(t.get());
    // The IPFIX exporter first sends everything the lcores emitted, so what each flow's records reported
    // is final and goes into the file with the flow (the next run's records are deltas from it).
    Annotate reported;
    if (_ipfix) {
        _ipfix->stop_and_flush();
        reported = [this](unsigned w, const conntrack::TimeBase& b, conntrack::FlowImage& im) {
            ipfix::DeltaTracker::Reported r;
            if (!_ipfix->reported(w, im.flow_id, r))
                return;
            for (int d = 0; d < 2; ++d) {
                im.reported_packets[d] = r.packets[d];
                im.reported_bytes[d] = r.bytes[d];
            }
            im.reported_end_ns = b.to_file(r.end_ns);
        };
    }
    std::string line;
    const bool saved = save_state(_opt, state_clock(_opt.clock, table_now), tables, _state_stats, line, reported);
    log::write(saved ? RTE_LOG_INFO : RTE_LOG_ERR, log::Part::service, "%s", line.c_str());
    // Not saved: the flows end as without --state-file, and their IPFIX records must go out (run() flushes).
    if (!saved && _ipfix)
        _ipfix->start([] { pin_to_control_cpus(); });
    for (size_t w = 0; w < _tables.size(); ++w) {
        // Saved flows go on in the next run under the same ids: no destroy event, no IPFIX end record.
        if (saved)
            _tables[w]->set_events(nullptr);
        _tables[w]->destroy_all(_workers[w]->stopped_ns(), conntrack::Reason::shutdown);
    }
}

void Service::housekeeping()
{
    StatusLine status(_view, !_opt.quiet);
    // Ports, exporter, control socket and workers are up by now; READY=1 waits for each worker's first turn.
    std::vector<unsigned> lcores;
    for (auto& w : _workers)
        lcores.push_back(w->lcore());
    Notifier notifier(lcores);
    std::vector<uint64_t> turns(_workers.size());
    // DPDK's telemetry socket (none with --no-telemetry: the guard then finds no connection).
    TelemetryGuard telemetry_guard(std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2");
    auto next_guard_scan = std::chrono::steady_clock::now();
    const uint64_t idle_cycles = _clock.cycles_from_ns(uint64_t(_opt.stop_when_idle_ms) * 1'000'000);
    const uint64_t started = rte_rdtsc();
    while (!_quit.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        status.tick();
        if (_policy_reload_requested.exchange(false, std::memory_order_relaxed)) {
            std::string error; // logged and counted by reload_policy()
            if (!_opt.policy_path.empty())
                reload_policy(error);
        }
        for (size_t i = 0; i < _workers.size(); ++i)
            turns[i] = stats::load_relaxed(_workers[i]->stats().turns);
        notifier.tick(turns);
        if (const auto now = std::chrono::steady_clock::now(); now >= next_guard_scan) {
            telemetry_guard.scan();
            next_guard_scan = now + std::chrono::milliseconds(TelemetryGuard::kScanIntervalMs);
        }
        if (_opt.stop_when_idle_ms == 0)
            continue;
        uint64_t last = started;
        for (auto& w : _workers)
            last = std::max(last, stats::load_relaxed(w->stats().last_rx_tsc));
        if (rte_rdtsc() - last >= idle_cycles)
            _quit.store(true, std::memory_order_relaxed);
    }
    notifier.stopping();
    status.finish();
}

} // namespace flowcop::app
