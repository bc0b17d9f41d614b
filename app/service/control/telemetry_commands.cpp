// SPDX-License-Identifier: BSD-3-Clause
#include "telemetry_commands.h"

#include "control_parse.h"
#include "ctl_format.h"
#include "stats_rows.h"

#include <packet/flow_key.h>
#include <stats/telemetry.h>

#include <rte_telemetry.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace flowcop::app {
namespace {

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

constexpr char kNotRunning[] = "flowcop is not running";

// One array of u64 under `key`.
template <typename Get>
void add_u64_array(rte_tel_data* d, const char* key, size_t n, Get get)
{
    rte_tel_data* a = rte_tel_data_alloc();
    if (a == nullptr)
        return;
    rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
    for (size_t i = 0; i < n; ++i)
        rte_tel_data_add_array_u64(a, get(i));
    if (rte_tel_data_add_dict_container(d, key, a, 0) != 0)
        rte_tel_data_free(a);
}

// A text longer than one telemetry string, as an array of strings cut at spaces.
void add_text_array(rte_tel_data* d, const char* key, const std::string& text)
{
    rte_tel_data* a = rte_tel_data_alloc();
    if (a == nullptr)
        return;
    rte_tel_data_start_array(a, RTE_TEL_STRING_VAL);
    constexpr size_t kMax = RTE_TEL_MAX_STRING_LEN - 1;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = std::min(text.size(), at + kMax);
        if (end < text.size())
            if (const size_t space = text.rfind(' ', end); space != std::string::npos && space > at)
                end = space;
        rte_tel_data_add_array_string(a, reply_text(text.substr(at, end - at), kMax).c_str());
        at = end < text.size() && text[end] == ' ' ? end + 1 : end;
    }
    if (rte_tel_data_add_dict_container(d, key, a, 0) != 0)
        rte_tel_data_free(a);
}

void add_field(rte_tel_data* a, const std::string& s)
{
    rte_tel_data_add_array_string(a, reply_text(s, RTE_TEL_MAX_STRING_LEN - 1).c_str());
}

// One flow, conntrack -L style: an array of "key=value" strings.
rte_tel_data* flow_entry(unsigned lcore, const conntrack::FlowSnapshot& f, uint64_t now)
{
    rte_tel_data* a = rte_tel_data_alloc();
    if (a == nullptr)
        return nullptr;
    rte_tel_data_start_array(a, RTE_TEL_STRING_VAL);
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    packet::key_endpoints(f.key, f.orig_is_lo, src, sport, dst, dport);
    char sa[packet::kAddrStrLen], da[packet::kAddrStrLen];
    packet::format_addr(src, sa, sizeof(sa));
    packet::format_addr(dst, da, sizeof(da));
    add_field(a, "lcore=" + std::to_string(lcore));
    const bool v4 = packet::key_is_ipv4(f.key);
    const uint8_t p = f.key.proto;
    add_field(a, std::string("proto=") + (p == 6                              ? "tcp"
                                          : p == 17                           ? "udp"
                                          : f.proto == conntrack::Proto::icmp ? (v4 ? "icmp" : "icmpv6")
                                                                              : std::to_string(p).c_str()));
    add_field(a, std::string("state=") + conntrack::state_name(f));
    add_field(a, std::string("src=") + sa);
    add_field(a, "sport=" + std::to_string(sport));
    add_field(a, std::string("dst=") + da);
    add_field(a, "dport=" + std::to_string(dport));
    // Both IDs of a QinQ flow: the key holds both, and /flowcop/kill needs both to name it.
    if (const uint16_t outer = packet::key_vlan_outer(f.key), inner = packet::key_vlan_inner(f.key); outer || inner)
        add_field(a, "vlan=" + std::to_string(outer) + (inner ? "," + std::to_string(inner) : std::string()));
    add_field(a, "packets_orig=" + std::to_string(f.packets[0]));
    add_field(a, "bytes_orig=" + std::to_string(f.bytes[0]));
    add_field(a, "packets_reply=" + std::to_string(f.packets[1]));
    add_field(a, "bytes_reply=" + std::to_string(f.bytes[1]));
    // Seconds until the deadline on the service's own clock (0 = due).
    add_field(a, "timeout=" + std::to_string(seconds_left(f, now)));
    if (f.proto == conntrack::Proto::icmp) {
        // The key's ports of an ICMP query: the originator's (identifier, query type).
        add_field(a, "icmp_id=" + std::to_string(sport));
        add_field(a, "icmp_type=" + std::to_string(dport));
    }
    if (f.related != 0)
        add_field(a, "related=" + std::to_string(f.related));
    std::string flags;
    for (const char* flag : flow_flags(f))
        flags += (flags.empty() ? "" : ",") + std::string(flag);
    add_field(a, "flags=" + flags);
    return a;
}

} // namespace

int telemetry_stats(const StatsView& view, const Control& control, const char* params, rte_tel_data* d)
{
    if (std::string e = parse_no_params(params ? params : ""); !e.empty())
        return reply_error(d, e);
    if (!control.running())
        return reply_error(d, kNotRunning);
    rte_tel_data_start_dict(d);
    const std::span<const LcoreView> lcores(view.lcores);
    stats::add_totals(d, lcore_families(), lcores);
    stats::add_arrays(d, lcore_families(), lcores, "_per_lcore");
    add_u64_array(d, "lcores", lcores.size(), [&](size_t i) { return uint64_t(lcores[i].lcore); });
    const std::vector<PortSample> ports = view.port_samples();
    add_u64_array(d, "ports", ports.size(), [&](size_t i) { return uint64_t(ports[i].port); });
    stats::add_arrays(d, port_families(), std::span<const PortSample>(ports), "");
    return 0;
}

int telemetry_config(const Control& control, const char* params, rte_tel_data* d)
{
    if (std::string e = parse_no_params(params ? params : ""); !e.empty())
        return reply_error(d, e);
    if (!control.running())
        return reply_error(d, kNotRunning);
    rte_tel_data_start_dict(d);
    add_config(d, control.current_options());
    return 0;
}

int telemetry_ports(const StatsView& view, const Control& control, const char* params, rte_tel_data* d)
{
    if (std::string e = parse_no_params(params ? params : ""); !e.empty())
        return reply_error(d, e);
    if (!control.running() || view.plan == nullptr)
        return reply_error(d, kNotRunning);
    const PortPlan& plan = *view.plan;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "plan", plan_name(plan.kind));
    rte_tel_data_add_dict_string(d, "reason", reason_name(plan.reason));
    add_text_array(d, "why", plan.why);
    add_u64_array(d, "workers", plan.workers.size(), [&](size_t i) { return uint64_t(plan.workers[i].lcore); });
    rte_tel_data_add_dict_u64(d, "rss_hf", plan.rss_hf);
    add_u64_array(d, "ports", plan.ports.size(), [&](size_t i) { return uint64_t(plan.ports[i].id); });
    add_u64_array(d, "rx_queues", plan.ports.size(), [&](size_t i) { return uint64_t(plan.ports[i].rx_queues); });
    add_u64_array(d, "tx_queues", plan.ports.size(), [&](size_t i) { return uint64_t(plan.ports[i].tx_queues); });
    add_u64_array(d, "symmetric_rss", plan.ports.size(), [&](size_t i) { return uint64_t(plan.ports[i].symmetric); });
    // Per port, the lcore polling each of its RX queues, in queue order.
    for (const PortSetup& ps : plan.ports) {
        std::vector<uint64_t> pollers(ps.rx_queues, 0);
        for (const WorkerPlan& w : plan.workers)
            for (const RxQueueRef& q : w.rx)
                if (q.port == ps.id && q.queue < pollers.size())
                    pollers[q.queue] = w.lcore;
        const std::string key = "port" + std::to_string(ps.id) + "_queue_lcores";
        add_u64_array(d, key.c_str(), pollers.size(), [&](size_t i) { return pollers[i]; });
    }
    return 0;
}

int telemetry_flows(const StatsView& view, const Control& control, const char* params, rte_tel_data* d)
{
    FlowQuery q;
    if (std::string e = parse_flow_query(params ? params : "", q); !e.empty())
        return reply_error(d, e);
    if (!control.running())
        return reply_error(d, kNotRunning);
    std::vector<conntrack::FlowSnapshot> snaps(q.limit);
    std::vector<std::pair<unsigned, conntrack::FlowSnapshot>> all;
    for (size_t w = 0; w < view.lcores.size(); ++w) {
        const unsigned lcore = view.lcores[w].lcore;
        if (q.match_lcore && lcore != q.lcore)
            continue;
        const size_t n = control.snapshot(w, q.filter, snaps.data(), q.limit);
        for (size_t i = 0; i < n; ++i)
            all.emplace_back(lcore, snaps[i]);
    }
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.second.last_seen_ns > b.second.last_seen_ns; });
    if (all.size() > q.limit)
        all.resize(q.limit);
    rte_tel_data_start_array(d, RTE_TEL_CONTAINER);
    const uint64_t now = control.now_ns();
    for (const auto& [lcore, f] : all) {
        rte_tel_data* a = flow_entry(lcore, f, now);
        if (a == nullptr)
            break;
        if (rte_tel_data_add_array_container(d, a, 0) != 0) {
            rte_tel_data_free(a);
            break;
        }
    }
    return 0;
}

int telemetry_kill(Control& control, const char* params, rte_tel_data* d)
{
    packet::FlowKey key;
    if (std::string e = parse_flow_tuple(params ? params : "", key); !e.empty())
        return reply_error(d, e);
    if (!control.running())
        return reply_error(d, kNotRunning);
    const int found = control.kill(key);
    if (found < 0)
        return reply_error(d, "a worker lcore did not answer");
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "killed", uint64_t(found));
    return 0;
}

int telemetry_policy_reload(Control& control, const char* params, rte_tel_data* d)
{
    if (params != nullptr && *params != '\0')
        return reply_error(d, "/flowcop/policy/reload takes no parameters");
    if (!control.running())
        return reply_error(d, kNotRunning);
    std::string error;
    if (!control.reload_policy(error))
        return reply_error(d, "policy reload failed, the running policy stays: " + error);
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "reloaded", 1);
    rte_tel_data_add_dict_u64(d, "rules", uint64_t(control.policy_listing().rules.size() - 1));
    return 0;
}

int telemetry_policy(const Control& control, const char*, rte_tel_data* d)
{
    if (!control.running())
        return reply_error(d, kNotRunning);
    const PolicyListing l = control.policy_listing();
    if (!l.active)
        return reply_error(d, "flowcop runs without --policy");
    rte_tel_data_start_dict(d);
    add_dict_text(d, "path", l.path);
    rte_tel_data_add_dict_u64(d, "enforced", l.enforced ? 1 : 0);
    rte_tel_data_add_dict_u64(d, "reloads", l.reloads_ok);
    rte_tel_data_add_dict_u64(d, "reload_failures", l.reloads_failed);
    // Per rule (the default last): packets and bytes, as arrays indexed by rule.
    rte_tel_data* packets = rte_tel_data_alloc();
    rte_tel_data* bytes = rte_tel_data_alloc();
    if (packets != nullptr && bytes != nullptr) {
        rte_tel_data_start_array(packets, RTE_TEL_U64_VAL);
        rte_tel_data_start_array(bytes, RTE_TEL_U64_VAL);
        for (const PolicyRuleRow& r : l.rules) {
            rte_tel_data_add_array_u64(packets, r.packets);
            rte_tel_data_add_array_u64(bytes, r.bytes);
        }
    }
    if (packets == nullptr || rte_tel_data_add_dict_container(d, "packets", packets, 0) != 0)
        rte_tel_data_free(packets);
    if (bytes == nullptr || rte_tel_data_add_dict_container(d, "bytes", bytes, 0) != 0)
        rte_tel_data_free(bytes);
    return 0;
}

int telemetry_set(Control& control, const char* params, rte_tel_data* d)
{
    if (!control.running())
        return reply_error(d, kNotRunning);
    Options o = control.current_options();
    if (std::string e = apply_setting(params ? params : "", o); !e.empty()) {
        reply_error(d, e);
        rte_tel_data* names = rte_tel_data_alloc();
        if (names != nullptr) {
            rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
            for (const std::string& n : settable_names())
                rte_tel_data_add_array_string(names, n.c_str());
            if (rte_tel_data_add_dict_container(d, "settable", names, 0) != 0)
                rte_tel_data_free(names);
        }
        return 0;
    }
    if (!control.apply(o))
        return reply_error(d, "a worker lcore did not answer");
    rte_tel_data_start_dict(d);
    add_config(d, o);
    return 0;
}

} // namespace flowcop::app
