// SPDX-License-Identifier: BSD-3-Clause
// Binding the handlers (telemetry_commands.h) to DPDK's argument-less callbacks.
#include "telemetry.h"

#include "control.h"
#include "stats_view.h"
#include "telemetry_commands.h"
#include <service/log.h>

#include <rte_telemetry.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace flowcop::app {
namespace {

// What the callbacks run against: attached by Telemetry, under this mutex, so the service can
// detach while a handler runs.
std::mutex g_mu;
const StatsView* g_view = nullptr;
Control* g_control = nullptr;

int not_running(rte_tel_data* d)
{
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "error", "flowcop is not running");
    return 0;
}

template <typename Handler>
int bound(rte_tel_data* d, Handler&& h)
{
    std::lock_guard<std::mutex> g(g_mu);
    if (g_view == nullptr || g_control == nullptr)
        return not_running(d);
    return h(*g_view, *g_control);
}

int cmd_stats(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView& v, Control& c) { return telemetry_stats(v, c, params, d); });
}

int cmd_config(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView&, Control& c) { return telemetry_config(c, params, d); });
}

int cmd_ports(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView& v, Control& c) { return telemetry_ports(v, c, params, d); });
}

int cmd_flows(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView& v, Control& c) { return telemetry_flows(v, c, params, d); });
}

int cmd_kill(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView&, Control& c) { return telemetry_kill(c, params, d); });
}

int cmd_set(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView&, Control& c) { return telemetry_set(c, params, d); });
}

int cmd_policy(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView&, Control& c) { return telemetry_policy(c, params, d); });
}

int cmd_policy_reload(const char*, const char* params, rte_tel_data* d)
{
    return bound(d, [&](const StatsView&, Control& c) { return telemetry_policy_reload(c, params, d); });
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
        {"/flowcop/ports", cmd_ports, "The ownership plan: which lcore polls which queue, and why. No parameters"},
        {"/flowcop/flows", cmd_flows, "Most recently seen flows. Parameters: addr=IP,port=N,lcore=N,limit=N (max 32)"},
        {"/flowcop/kill", cmd_kill, "Reap a TCP flow on the next tick. Parameters: IP,PORT,IP,PORT[,VLAN[,VLAN]]"},
        {"/flowcop/set", cmd_set,
         "Change a setting at run time. Parameters: NAME,VALUE (an error reply lists the names)"},
        {"/flowcop/policy", cmd_policy, "--policy: packets and bytes by rule (the default last). No parameters"},
        {"/flowcop/policy/reload", cmd_policy_reload, "Re-read --policy (a bad file keeps the running one)"},
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

Telemetry::Telemetry(const StatsView& view, Control& control)
{
    {
        std::lock_guard<std::mutex> g(g_mu);
        g_view = &view;
        g_control = &control;
    }
    if (std::string refused = register_telemetry_commands(); !refused.empty())
        log::write(RTE_LOG_WARNING, log::Part::telemetry, "flowcop: warning: DPDK telemetry refused the commands %s",
                   refused.c_str());
}

Telemetry::~Telemetry()
{
    std::lock_guard<std::mutex> g(g_mu);
    g_view = nullptr;
    g_control = nullptr;
}

} // namespace flowcop::app
