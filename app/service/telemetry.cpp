// SPDX-License-Identifier: BSD-3-Clause
#include "telemetry.h"

#include "control_parse.h"
#include "service.h"
#include "status.h"

#include <conntrack/relaxed.h>
#include <packet/flow_key.h>
#include <packet/verdict.h>

#include <rte_ethdev.h>

#include <rte_telemetry.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace flowcop::app {

namespace {

// DPDK's telemetry callbacks carry no user pointer, and a registered command
// cannot be removed: handlers find the service here, under this mutex, so the
// service can detach while a handler runs.
std::mutex g_mu;
Service* g_service = nullptr;

using conntrack::load_relaxed;

// Every string a reply carries goes through here (see telemetry.h: Replies).
void add_dict_text(rte_tel_data* d, const std::string& key, const std::string& value)
{
    rte_tel_data_add_dict_string(d, key.c_str(), reply_text(value, RTE_TEL_MAX_STRING_LEN - 1).c_str());
}

int reply_error(rte_tel_data* d, const std::string& msg)
{
    rte_tel_data_start_dict(d);
    add_dict_text(d, "error", msg);
    return 0;
}

void add_config(rte_tel_data* d, const Options& o)
{
    for (const auto& [k, v] : describe(o))
        add_dict_text(d, k, v);
}

template <typename F>
int with_service(rte_tel_data* d, F&& f)
{
    std::lock_guard<std::mutex> g(g_mu);
    if (g_service == nullptr || !g_service->running())
        return reply_error(d, "flowcop is not running");
    return f(*g_service);
}

// One per-lcore array, e.g. "cop_visited_per_lcore": [..].
template <typename Get>
void per_lcore(rte_tel_data* d, const Service& s, const char* name, Get get)
{
    rte_tel_data* a = rte_tel_data_alloc();
    if (a == nullptr)
        return;
    rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
    for (const auto& w : s.workers())
        rte_tel_data_add_array_u64(a, get(*w));
    rte_tel_data_add_dict_container(d, name, a, 0);
}

// Totals of what /metrics splits by lcore: packets by result (the names of
// flowcop_packets_total's result label), events, and the two histograms' count and sum.
void add_packets_events_and_histograms(rte_tel_data* d, const Service& s)
{
    uint64_t tracked = 0, invalid = 0, no_flow = 0, full = 0;
    uint64_t by_verdict[packet::kVerdictCount] = {};
    uint64_t pass_count = 0, pass_sum = 0, lag_count = 0, lag_sum = 0;
    for (const auto& w : s.workers()) {
        const conntrack::Counters& c = w->table().counters();
        tracked += load_relaxed(c.tcp_tracked);
        invalid += load_relaxed(c.tcp_invalid);
        no_flow += load_relaxed(c.tcp_no_flow);
        full += load_relaxed(c.tcp_table_full);
        for (unsigned v = 0; v < packet::kVerdictCount; ++v)
            by_verdict[v] += load_relaxed(c.packets_by_verdict[v]);
        pass_count += c.cop_pass_ns.total();
        pass_sum += c.cop_pass_ns.sum();
        lag_count += c.timeout_lag_ns.total();
        lag_sum += c.timeout_lag_ns.sum();
    }
    rte_tel_data_add_dict_u64(d, "packets_tracked", tracked);
    rte_tel_data_add_dict_u64(d, "packets_tcp_invalid_for_state", invalid);
    rte_tel_data_add_dict_u64(d, "packets_tcp_no_flow", no_flow);
    rte_tel_data_add_dict_u64(d, "packets_tcp_table_full", full);
    for (unsigned v = 0; v < packet::kVerdictCount; ++v) {
        const auto verdict = static_cast<packet::Verdict>(v);
        if (verdict != packet::Verdict::tcp) // split into the four results above
            rte_tel_data_add_dict_u64(d, ("packets_" + std::string(packet::verdict_name(verdict))).c_str(),
                                      by_verdict[v]);
    }
    rte_tel_data_add_dict_u64(d, "inactivity_cop_pass_duration_count", pass_count);
    rte_tel_data_add_dict_u64(d, "inactivity_cop_pass_duration_sum_ns", pass_sum);
    rte_tel_data_add_dict_u64(d, "timeout_lag_count", lag_count);
    rte_tel_data_add_dict_u64(d, "timeout_lag_sum_ns", lag_sum);
    events::WriterStats ev{};
    if (const events::Writer* wr = s.events())
        for (size_t i = 0; i < s.workers().size(); ++i) {
            const events::WriterStats st = wr->stats(unsigned(i));
            ev.written += st.written;
            ev.dropped_full += st.dropped_full;
            ev.dropped_write += st.dropped_write;
            ev.write_errors += st.write_errors;
        }
    rte_tel_data_add_dict_u64(d, "events_written", ev.written);
    rte_tel_data_add_dict_u64(d, "events_dropped_ring_full", ev.dropped_full);
    rte_tel_data_add_dict_u64(d, "events_dropped_write_error", ev.dropped_write);
    rte_tel_data_add_dict_u64(d, "events_write_errors", ev.write_errors);
}

// One array per port counter, in the order of "ports" (port ids), as /metrics' flowcop_port_*.
void add_ports(rte_tel_data* d, const Service&)
{
    struct Column {
        const char* name;
        uint64_t rte_eth_stats::*field;
    };
    static constexpr Column kColumns[] = {
        {"port_rx_packets", &rte_eth_stats::ipackets}, {"port_tx_packets", &rte_eth_stats::opackets},
        {"port_rx_missed", &rte_eth_stats::imissed},   {"port_rx_errors", &rte_eth_stats::ierrors},
        {"port_rx_nombuf", &rte_eth_stats::rx_nombuf}, {"port_tx_errors", &rte_eth_stats::oerrors},
    };
    std::vector<uint16_t> ids;
    std::vector<rte_eth_stats> stats;
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p)
    {
        rte_eth_stats st{};
        rte_eth_stats_get(p, &st);
        ids.push_back(p);
        stats.push_back(st);
    }
    auto add = [d](const char* name, auto get, size_t n) {
        rte_tel_data* a = rte_tel_data_alloc();
        if (a == nullptr)
            return;
        rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
        for (size_t i = 0; i < n; ++i)
            rte_tel_data_add_array_u64(a, get(i));
        rte_tel_data_add_dict_container(d, name, a, 0);
    };
    add(
        "ports", [&](size_t i) { return uint64_t(ids[i]); }, ids.size());
    for (const Column& c : kColumns)
        add(
            c.name, [&](size_t i) { return stats[i].*c.field; }, ids.size());
}

int cmd_stats(const char*, const char* params, rte_tel_data* d)
{
    if (std::string e = parse_no_params(params ? params : ""); !e.empty())
        return reply_error(d, e);
    return with_service(d, [d](Service& s) {
        const Totals t = totals(s);
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_u64(d, "rx_packets", t.rx_packets);
        rte_tel_data_add_dict_u64(d, "tx_packets", t.tx_packets);
        rte_tel_data_add_dict_u64(d, "flows_active", t.flows_active);
        rte_tel_data_add_dict_u64(d, "flows_created", t.flows_created);
        rte_tel_data_add_dict_u64(d, "flows_expired", t.flows_expired);
        rte_tel_data_add_dict_u64(d, "inactivity_cop_passes", t.cop_passes);
        rte_tel_data_add_dict_u64(d, "inactivity_cop_visited", t.cop_visited);
        rte_tel_data_add_dict_u64(d, "inactivity_cop_fired", t.cop_fired);
        rte_tel_data_add_dict_u64(d, "inactivity_cop_budget_exhausted", t.cop_budget_exhausted);
        rte_tel_data_add_dict_u64(d, "inactivity_cop_lock_acquire_failure", t.cop_lock_failures);
        uint64_t by_reason[conntrack::kReasonCount] = {};
        uint64_t full = 0;
        for (const auto& w : s.workers()) {
            const conntrack::Counters& c = w->table().counters();
            for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
                by_reason[r] += load_relaxed(c.flows_expired[r]);
            full += load_relaxed(c.tcp_table_full);
        }
        for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
            rte_tel_data_add_dict_u64(
                d, ("flows_expired_" + std::string(conntrack::reason_name(static_cast<conntrack::Reason>(r)))).c_str(),
                by_reason[r]);
        rte_tel_data_add_dict_u64(d, "flows_dropped_table_full", full);
        add_packets_events_and_histograms(d, s);
        add_ports(d, s);
        per_lcore(d, s, "lcores", [](const Worker& w) { return uint64_t(w.lcore()); });
        per_lcore(d, s, "flows_active_per_lcore", [](const Worker& w) { return w.table().active(); });
        per_lcore(d, s, "inactivity_cop_visited_per_lcore",
                  [](const Worker& w) { return load_relaxed(w.table().counters().cop_visited); });
        per_lcore(d, s, "inactivity_cop_budget_exhausted_per_lcore",
                  [](const Worker& w) { return load_relaxed(w.table().counters().cop_budget_exhausted); });
        per_lcore(d, s, "inactivity_cop_lock_acquire_failure_per_lcore",
                  [](const Worker& w) { return load_relaxed(w.table().counters().cop_lock_failures); });
        return 0;
    });
}

int cmd_config(const char*, const char* params, rte_tel_data* d)
{
    if (std::string e = parse_no_params(params ? params : ""); !e.empty())
        return reply_error(d, e);
    return with_service(d, [d](Service& s) {
        rte_tel_data_start_dict(d);
        add_config(d, s.current_options());
        return 0;
    });
}

void add_field(rte_tel_data* a, const std::string& s)
{
    rte_tel_data_add_array_string(a, reply_text(s, RTE_TEL_MAX_STRING_LEN - 1).c_str());
}

int cmd_flows(const char*, const char* params, rte_tel_data* d)
{
    FlowQuery q;
    if (std::string e = parse_flow_query(params ? params : "", q); !e.empty())
        return reply_error(d, e);
    return with_service(d, [d, &q](Service& s) {
        std::vector<conntrack::FlowSnapshot> snaps(q.limit);
        std::vector<std::pair<unsigned, conntrack::FlowSnapshot>> all;
        for (const auto& w : s.workers()) {
            if (q.match_lcore && w->lcore() != q.lcore)
                continue;
            const size_t n = w->table().snapshot(q.filter, snaps.data(), q.limit);
            for (size_t i = 0; i < n; ++i)
                all.emplace_back(w->lcore(), snaps[i]);
        }
        std::sort(all.begin(), all.end(),
                  [](const auto& a, const auto& b) { return a.second.last_seen_ns > b.second.last_seen_ns; });
        if (all.size() > q.limit)
            all.resize(q.limit);
        rte_tel_data_start_array(d, RTE_TEL_CONTAINER);
        const uint64_t now = s.clock().now_ns();
        for (const auto& [lcore, f] : all) {
            rte_tel_data* a = rte_tel_data_alloc();
            if (a == nullptr)
                break;
            rte_tel_data_start_array(a, RTE_TEL_STRING_VAL);
            uint8_t src[16], dst[16];
            uint16_t sport, dport;
            packet::key_endpoints(f.key, f.orig_is_lo, src, sport, dst, dport);
            char sa[packet::kAddrStrLen], da[packet::kAddrStrLen];
            packet::format_addr(src, sa, sizeof(sa));
            packet::format_addr(dst, da, sizeof(da));
            add_field(a, "lcore=" + std::to_string(lcore));
            add_field(a, "proto=tcp");
            add_field(a, std::string("state=") + tcpstate::state_name(f.state));
            add_field(a, std::string("src=") + sa);
            add_field(a, "sport=" + std::to_string(sport));
            add_field(a, std::string("dst=") + da);
            add_field(a, "dport=" + std::to_string(dport));
            if (const uint16_t v = packet::key_vlan_outer(f.key))
                add_field(a, "vlan=" + std::to_string(v));
            add_field(a, "packets_orig=" + std::to_string(f.packets[0]));
            add_field(a, "bytes_orig=" + std::to_string(f.bytes[0]));
            add_field(a, "packets_reply=" + std::to_string(f.packets[1]));
            add_field(a, "bytes_reply=" + std::to_string(f.bytes[1]));
            // Seconds until the deadline on the service's own clock (0 = due).
            const uint64_t left = f.deadline_ns > now ? (f.deadline_ns - now) / 1'000'000'000ull : 0;
            add_field(a, "timeout=" + std::to_string(left));
            std::string flags = f.assured ? "ASSURED" : "UNREPLIED";
            if (f.reset)
                flags += ",RESET";
            if (f.killed)
                flags += ",KILLED";
            add_field(a, "flags=" + flags);
            rte_tel_data_add_array_container(d, a, 0);
        }
        return 0;
    });
}

int cmd_kill(const char*, const char* params, rte_tel_data* d)
{
    packet::FlowKey key;
    if (std::string e = parse_flow_tuple(params ? params : "", key); !e.empty())
        return reply_error(d, e);
    return with_service(d, [d, &key](Service& s) {
        Command c;
        c.type = Command::Type::kill;
        c.key = key;
        const int found = s.broadcast(c);
        if (found < 0)
            return reply_error(d, "a worker lcore did not answer");
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_u64(d, "killed", uint64_t(found));
        return 0;
    });
}

int cmd_set(const char*, const char* params, rte_tel_data* d)
{
    return with_service(d, [d, params](Service& s) {
        Options o = s.current_options();
        if (std::string e = apply_setting(params ? params : "", o); !e.empty()) {
            reply_error(d, e);
            rte_tel_data* names = rte_tel_data_alloc();
            if (names != nullptr) {
                rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
                for (const std::string& n : settable_names())
                    rte_tel_data_add_array_string(names, n.c_str());
                rte_tel_data_add_dict_container(d, "settable", names, 0);
            }
            return 0;
        }
        Command budgets;
        budgets.type = Command::Type::set_budgets;
        budgets.fire_budget = o.timeout_budget;
        budgets.visit_budget_factor = o.visit_budget_factor;
        Command timeouts;
        timeouts.type = Command::Type::set_timeouts;
        timeouts.timeouts = timeouts_from(o);
        timeouts.active_timeout_s = o.active_timeout_s;
        if (s.broadcast(budgets) < 0 || s.broadcast(timeouts) < 0)
            return reply_error(d, "a worker lcore did not answer");
        s.update_options(o);
        rte_tel_data_start_dict(d);
        add_config(d, o);
        return 0;
    });
}

} // namespace

std::string register_telemetry_commands()
{
    struct Cmd {
        const char* name;
        telemetry_cb fn;
        const char* help;
    };
    // DPDK 22.11 refuses a help text of RTE_TEL_MAX_STRING_LEN (128) bytes or more.
    static const Cmd cmds[] = {
        {"/flowcop/stats", cmd_stats, "Counters: totals and per-lcore arrays. No parameters"},
        {"/flowcop/config", cmd_config, "The running configuration. No parameters"},
        {"/flowcop/flows", cmd_flows, "Most recently seen flows. Parameters: addr=IP,port=N,lcore=N,limit=N (max 32)"},
        {"/flowcop/kill", cmd_kill, "Reap a TCP flow on the next tick. Parameters: IP,PORT,IP,PORT[,VLAN[,VLAN]]"},
        {"/flowcop/set", cmd_set,
         "Change a setting at run time. Parameters: NAME,VALUE (an error reply lists the names)"},
    };
    static std::once_flag once;
    static std::string refused;
    std::call_once(once, [] {
        for (const Cmd& c : cmds)
            if (rte_telemetry_register_cmd(c.name, c.fn, c.help) != 0)
                refused += refused.empty() ? c.name : std::string(" ") + c.name;
    });
    return refused;
}

Telemetry::Telemetry(Service& s)
{
    {
        std::lock_guard<std::mutex> g(g_mu);
        g_service = &s;
    }
    if (std::string refused = register_telemetry_commands(); !refused.empty())
        std::fprintf(stderr, "flowcop: warning: DPDK telemetry refused the commands %s\n", refused.c_str());
}

Telemetry::~Telemetry()
{
    std::lock_guard<std::mutex> g(g_mu);
    g_service = nullptr;
}

} // namespace flowcop::app
