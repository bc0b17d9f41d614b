// SPDX-License-Identifier: BSD-3-Clause
#include "exporter.h"

#include "control.h"
#include "process_metrics.h"
#include "stats_rows.h"
#include <service/log.h>

#include <metrics/collect.h>
#include <metrics/families.h>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <CivetServer.h>

#include <rte_log.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace flowcop::app {

using metrics::Family;
using metrics::Labels;
using prometheus::MetricType;

namespace {

// Connections civetweb closed as they connected, their source outside --metrics-allow. civetweb
// has no hook for this but its error log: its accepting thread reports each one, "<address> is
// not allowed to connect", through the log_message callback (civetweb 1.15, accept_new_connection;
// tests/hostile/test_faults.py checks the count against the connections it made). One exporter
// per process; written by civetweb's accepting thread, read by scrapes.
std::atomic<uint64_t> refused_connections{0};
constexpr char kRefusedMessage[] = " is not allowed to connect";

int on_civetweb_log(const mg_connection*, const char* message)
{
    if (std::strstr(message, kRefusedMessage) == nullptr)
        return 0; // civetweb's own handling: no error log is configured, so it writes nothing
    refused_connections.fetch_add(1, std::memory_order_relaxed);
    return 1;
}

} // namespace

class Collector : public prometheus::Collectable {
public:
    Collector(const StatsView& view, const Control& control) : _view(view), _control(control) {}
    std::vector<prometheus::MetricFamily> Collect() const override;

private:
    void config_family(std::vector<prometheus::MetricFamily>& out) const;
    // --policy: per-rule packets and bytes (labels rule = index and comment, action) and reloads; none
    // without a policy. Dynamic labels (the rules are the file's), so not rows of stats_rows.cpp.
    void policy_families(std::vector<prometheus::MetricFamily>& out) const;
    const StatsView& _view;
    const Control& _control;
};

void Collector::config_family(std::vector<prometheus::MetricFamily>& out) const
{
    Family info("flowcop_config_info", "The running configuration (value is always 1)", MetricType::Gauge);
    Labels l;
    for (auto& [k, v] : describe(_control.current_options()))
        l.emplace_back(k, v);
    info.gauge(l, 1);
    out.push_back(info.take());
    if (_view.plan != nullptr) {
        Family plan("flowcop_ownership_plan_info",
                    "How flows get one owner lcore: plan rss, handoff or single_lcore, and the rule that decided it "
                    "(value is always 1)",
                    MetricType::Gauge);
        plan.gauge({{"plan", plan_name(_view.plan->kind)}, {"reason", reason_name(_view.plan->reason)}}, 1);
        out.push_back(plan.take());
    }
    policy_families(out);
    Family up("flowcop_up", "1 while the data plane runs", MetricType::Gauge);
    up.gauge({}, _control.running() ? 1 : 0);
    out.push_back(up.take());
}

void Collector::policy_families(std::vector<prometheus::MetricFamily>& out) const
{
    const PolicyListing l = _control.policy_listing();
    if (!l.active)
        return;
    Family packets("flowcop_policy_packets_total",
                   "Packets --policy's rule judged (rule = its index, then its comment; the last is the default "
                   "policy), summed over the lcores; carried over reloads that keep the rule",
                   MetricType::Counter);
    Family bytes("flowcop_policy_bytes_total", "IP bytes of the packets --policy's rule judged", MetricType::Counter);
    for (const PolicyRuleRow& r : l.rules) {
        std::string rule = std::to_string(r.index);
        if (!r.comment.empty())
            rule += " " + r.comment;
        else if (r.index + 1 == l.rules.size())
            rule += " policy";
        const Labels labels{{"rule", rule}, {"action", r.drop ? "drop" : "accept"}};
        packets.counter(labels, double(r.packets));
        bytes.counter(labels, double(r.bytes));
    }
    out.push_back(packets.take());
    out.push_back(bytes.take());
    Family reloads("flowcop_policy_reloads_total",
                   "Reloads of --policy (SIGHUP, /flowcop/policy/reload, flowcopctl --policy-reload) by result; a "
                   "failed one kept the running policy",
                   MetricType::Counter);
    reloads.counter({{"result", "ok"}}, double(l.reloads_ok));
    reloads.counter({{"result", "failed"}}, double(l.reloads_failed));
    out.push_back(reloads.take());
}

std::vector<prometheus::MetricFamily> Collector::Collect() const
{
    std::vector<prometheus::MetricFamily> out;
    metrics::collect(lcore_families(), std::span<const LcoreView>(_view.lcores), lcore_labels, out);
    const std::vector<PortSample> ports = _view.port_samples();
    metrics::collect(port_families(), std::span<const PortSample>(ports), port_labels, out);
    metrics::collect(collector_families(), std::span<const CollectorView>(_view.collectors), collector_labels, out);
    metrics::collect(ctl_families(), std::span<const CtlView>(&_view.ctl, 1), ctl_labels, out);
    metrics::collect(state_families(), std::span<const StateView>(&_view.state, 1), state_labels, out);
    config_family(out);
    Family refused("flowcop_exporter_connections_refused_total",
                   "Connections to this exporter closed as they connected: their source is outside --metrics-allow",
                   MetricType::Counter);
    refused.counter({}, double(refused_connections.load(std::memory_order_relaxed)));
    out.push_back(refused.take());
    collect_process_families(out);
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

// civetweb's access_control_list: any entry makes it deny by default, so "+NET" per allowed
// network is the whole list. civetweb wants IPv6 networks in brackets ("+[2001:db8::]/32").
std::string access_control_list(const std::vector<std::string>& allow)
{
    std::string acl;
    for (const std::string& net : allow) {
        if (!acl.empty())
            acl += ',';
        const std::size_t slash = net.find('/');
        acl += net.find(':') == std::string::npos ? "+" + net : "+[" + net.substr(0, slash) + "]" + net.substr(slash);
    }
    return acl;
}

const std::string* first_ipv6(const std::vector<std::string>& allow)
{
    for (const std::string& net : allow)
        if (net.find(':') != std::string::npos)
            return &net;
    return nullptr;
}

} // namespace

std::unique_ptr<Exporter> Exporter::start(const StatsView& view, const Control& control, const std::string& address,
                                          uint16_t port_wanted, const std::vector<std::string>& allow,
                                          std::string& error, std::string& error_flag)
{
    const bool v6 = address.find(':') != std::string::npos;
    const std::string host = v6 ? "[" + address + "]" : address;
    const std::string bind = host + ":" + std::to_string(port_wanted);
    std::unique_ptr<Exporter> e(new Exporter());
    error_flag = "--metrics-addr";
    try {
        // civetweb gives each connection a thread until it is served, and waits 30 s for a
        // request by default: two idle connections blocked every scrape (exporter.h: the bound).
        std::vector<std::string> options{"listening_ports",    bind,
                                         "num_threads",        std::to_string(kHttpThreads),
                                         "request_timeout_ms", std::to_string(kRequestTimeoutMs)};
        if (!allow.empty()) {
            options.emplace_back("access_control_list");
            options.push_back(access_control_list(allow));
        }
        CivetCallbacks callbacks;
        callbacks.log_message = on_civetweb_log;
        e->_exposer = std::make_unique<prometheus::Exposer>(std::move(options), &callbacks);
    } catch (const std::exception&) {
        const std::string why = bind_error(address, port_wanted, v6);
        const std::string* v6_network = first_ipv6(allow);
        if (!why.empty()) {
            error = bind + ": cannot listen: " + why;
        } else if (v6_network != nullptr && !v6) {
            error_flag = "--metrics-allow";
            error = *v6_network + ": the HTTP server prometheus-cpp uses (civetweb) was built without IPv6 (as "
                                  "Debian 12's is), so it cannot check IPv6 clients; list IPv4 networks only";
        } else if (v6)
            error = bind + ": cannot listen on IPv6: the HTTP server prometheus-cpp uses (civetweb) was built "
                           "without IPv6 (as Debian 12's is); use an IPv4 address such as 127.0.0.1";
        else
            error = bind + ": cannot listen (the HTTP server refused the address)";
        return nullptr;
    }
    const std::vector<int> ports = e->_exposer->GetListeningPorts();
    const int port = ports.empty() ? port_wanted : ports.front();
    e->_url = "http://" + host + ":" + std::to_string(port) + "/metrics";
    e->_wake_host = address == "0.0.0.0" ? "127.0.0.1" : address == "::" ? "::1" : address;
    e->_port = uint16_t(port);
    e->_collector = std::make_shared<Collector>(view, control);
    e->_exposer->RegisterCollectable(e->_collector);
    log::write(RTE_LOG_DEBUG, log::Part::exporter,
               "flowcop: exporter: %s, %u HTTP threads, %u ms request timeout, clients allowed: %s", e->_url.c_str(),
               kHttpThreads, kRequestTimeoutMs, allow.empty() ? "any" : access_control_list(allow).c_str());
    return e;
}

namespace {

// One connection to the exporter's own address, closed at once: it wakes civetweb's accept loop,
// which otherwise notices the stop only when its 2 s poll() times out. A worker handed this
// connection reads EOF and is free at once.
void knock(const std::string& host, uint16_t port)
{
    sockaddr_storage ss{};
    socklen_t len;
    if (host.find(':') != std::string::npos) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
        len = sizeof(*a);
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        inet_pton(AF_INET, host.c_str(), &a->sin_addr);
        len = sizeof(*a);
    }
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    connect(fd, reinterpret_cast<sockaddr*>(&ss), len); // non-blocking: the SYN is what matters
    close(fd);
}

} // namespace

Exporter::~Exporter()
{
    if (!_exposer)
        return;
    _exposer->RemoveCollectable(_collector);
    // civetweb's mg_stop() sets its stop flag and waits; its accept loop sees the flag only after a
    // poll() of up to 2 s. Knock until the Exposer is gone: the first knock after the flag is set
    // ends the loop (measured: 1-2 s to stop before, tests/app/process/test_exporter_stop.py).
    std::atomic<bool> stopped{false};
    std::thread knocker([&] {
        while (!stopped.load(std::memory_order_acquire)) {
            knock(_wake_host, _port);
            std::this_thread::sleep_for(std::chrono::milliseconds(kStopKnockMs));
        }
    });
    const auto t0 = std::chrono::steady_clock::now();
    _exposer.reset();
    stopped.store(true, std::memory_order_release);
    knocker.join();
    log::write(RTE_LOG_DEBUG, log::Part::exporter, "flowcop: exporter stopped in %.1f ms",
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

} // namespace flowcop::app
