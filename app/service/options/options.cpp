// SPDX-License-Identifier: BSD-3-Clause
// Parsing, --help, describe() and option_table(): all are loops over the one table in option_table.cpp.
#include "options.h"

#include "mbuf_pool.h"
#include "option_table.h"
#include "option_values.h"

#include <conntrack/event_budget.h>
#include <ipfix/defaults.h>
#include <tcpstate/tcp_state.h>
#include <tcpstate/window.h>
#include <timerwheel/config.h>

namespace flowcop::app {
namespace {

using detail::escaped;
using detail::quote;
using detail::Spec;
using detail::specs;

std::string missing_value(const Spec& s, std::string_view spelled)
{
    return format_flag_error(spelled, "missing value (expected " + s.metavar + "; allowed: " + s.allowed + ")");
}

ParseOutcome fail(std::string message)
{
    return {ParseOutcome::error, default_options(), std::move(message)};
}

std::string unknown_option(std::string_view name)
{
    constexpr std::string_view kTcpPrefix = "--tcp-timeout";
    if (name.starts_with(kTcpPrefix)) {
        std::string_view state = name.substr(kTcpPrefix.size());
        if (!state.empty() && state.front() == '-')
            state.remove_prefix(1);
        std::vector<std::string> states;
        for (const char* st : kTcpStateFlagNames)
            states.push_back(detail::hyphenated(st));
        return format_flag_error(escaped(name), "unknown TCP state " + quote(state) +
                                                    " (valid states: " + detail::join(states, ", ") + ")");
    }
    return "flowcop: unknown option " + quote(name) + " (see --help)";
}

} // namespace

Options default_options()
{
    Options o{};
    o.mode = Mode::monitor;
    o.clock = ClockSource::tsc;
    o.wheel_buckets = timerwheel::kDefaultBuckets;
    o.tick_ms = uint32_t(timerwheel::kDefaultTickNs / 1'000'000);
    o.check_interval_ms = kDefaultCheckIntervalMs;
    o.timeout_budget = kDefaultTimeoutBudget;
    o.visit_budget_factor = timerwheel::kDefaultVisitBudgetFactor;
    o.flows_per_lcore = 1u << 20;
    o.mbufs = 0; // auto
    o.mbuf_data_room = kDefaultMbufDataRoom;
    constexpr tcpstate::Timeouts kNetfilter = tcpstate::Timeouts::netfilter_defaults();
    for (size_t i = 0; i < kTcpTimeoutStates; ++i)
        o.tcp_timeout_s[i] = kNetfilter.seconds[size_t(tcp_timeout_state(i))];
    o.default_inactivity_timeout_s = kNetfilter.default_inactivity;
    o.active_timeout_s = 0;
    o.metrics_enabled = true;
    o.metrics_host = "127.0.0.1";
    o.metrics_port = 9781;
    o.events_ring = 65536;
    o.events_filter = EventsFilter{}; // new,destroy, every protocol (events_filter.h)
    o.events_invalid_rate = conntrack::kDefaultInvalidEventRate;
    o.stop_when_idle_ms = 0;
    o.loose_pickup = true;
    o.tcp_be_liberal = tcpstate::WindowPolicy{}.be_liberal;
    o.tcp_ignore_invalid_rst = tcpstate::WindowPolicy{}.ignore_invalid_rst;
    o.tcp_max_retrans = tcpstate::WindowPolicy::kDefaultMaxRetrans;
    o.tcp_timeout_max_retrans_s = tcpstate::Timeouts::kDefaultCapSeconds;
    o.tcp_timeout_unacknowledged_s = tcpstate::Timeouts::kDefaultCapSeconds;
    o.vlan_key = packet::VlanKey::both;
    o.ipfix_mtu = ipfix::kDefaultPathMtu;
    o.ipfix_template_refresh_s = ipfix::kDefaultTemplateRefreshS;
    o.ipfix_template_refresh_messages = ipfix::kDefaultTemplateRefreshMessages;
    o.ipfix_max_rate = ipfix::kDefaultMaxRate;
    o.ipfix_domain_base = ipfix::kDefaultDomainBase;
    o.ipfix_active_timeout_s = ipfix::kDefaultActiveTimeoutS;
    constexpr protostate::Timeouts kProtoDefaults = protostate::Timeouts::netfilter_defaults();
    for (size_t i = 0; i < protostate::kTimeoutCount; ++i)
        o.proto_timeout_s[i] = kProtoDefaults.seconds_by_timeout[i];
    o.track = conntrack::kTrackAll;
    o.state_checkpoint_s = 0;
    o.quiet = false;
    return o;
}

std::string format_flag_error(std::string_view flag, std::string_view detail)
{
    return "flowcop: " + std::string(flag) + ": " + std::string(detail);
}

std::string format_host_port(std::string_view host, uint16_t port)
{
    // Appended piecewise: GCC 12 at -O3 warns -Wrestrict (falsely) on `const char* + std::string`.
    const bool v6 = host.find(':') != std::string_view::npos;
    std::string out;
    if (v6)
        out += '[';
    out += host;
    out += v6 ? "]:" : ":";
    out += std::to_string(port);
    return out;
}

ParseOutcome parse_options(int argc, char** argv)
{
    const auto& table = specs();
    Options o = default_options();
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--" || !arg.starts_with("-") || arg == "-")
            return fail("flowcop: unexpected argument " + quote(arg) +
                        " (flowcop takes no positional arguments; see --help)");
        const auto eq = arg.find('=');
        const std::string_view name = arg.substr(0, eq);
        std::size_t k = 0;
        while (k < table.size() && name != table[k].name && name != table[k].alias)
            ++k;
        if (k == table.size())
            return fail(unknown_option(name));
        // A later occurrence replaces an earlier one (set() overwrites), so a wrapper's defaults,
        // a unit's options and a drop-in's additions compose; a repeatable option adds instead.
        const Spec& s = table[k];
        std::string_view value;
        if (s.metavar.empty()) {
            if (eq != std::string_view::npos)
                return fail(format_flag_error(name, "takes no value, got " + quote(arg.substr(eq + 1))));
        } else if (eq != std::string_view::npos) {
            value = arg.substr(eq + 1);
        } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
            value = argv[++i];
        } else {
            return fail(missing_value(s, name));
        }
        if (s.is_help)
            return {ParseOutcome::help, default_options(),
                    help_text(argc > 0 && argv[0] != nullptr ? argv[0] : "flowcop")};
        if (std::string err = s.set(s, value, o); !err.empty())
            return fail(format_flag_error(name, err)); // as the user spelled it (an alias too)
    }
    return {ParseOutcome::ok, std::move(o), {}};
}

std::string help_text(const char* prog)
{
    std::string out = "Usage: " + std::string(prog ? prog : "flowcop") +
                      " [EAL options] -- [flowcop options]\n\n"
                      "Tracks TCP, UDP, ICMP and other IP flows on DPDK ports and expires idle\n"
                      "ones through a per-lcore timer wheel. flowcop options follow EAL's '--'.\n"
                      "Write --opt VALUE or --opt=VALUE (the = form for a VALUE starting with\n"
                      "'--'). An option given again replaces its earlier value (later wins), but\n"
                      "--ipfix, which adds a collector each time. Numbers are decimal digits,\n"
                      "without sign.\n\n"
                      "Exit status: 0 after a clean stop (a signal, --stop-when-idle-ms); 1 when EAL,\n"
                      "the ports or memory fail (the line says why); 2 for a bad flowcop option or\n"
                      "configuration, a flowcop option before '--' included (one line naming it).\n"
                      "--help (-h) and --version (-V) are answered without starting EAL.\n\n"
                      "Logging: once EAL runs, flowcop's lines go through DPDK's log, so EAL's\n"
                      "--log-level governs them: --log-level=flowcop:debug (every flowcop type),\n"
                      "--log-level=flowcop.*:warning, or one type: flowcop.service (start-up lines,\n"
                      "warnings, errors), flowcop.events, flowcop.exporter, flowcop.telemetry; each\n"
                      "starts at info, and the last --log-level matching a type wins. The live\n"
                      "status line and the summary are output, silenced by --quiet only. With\n"
                      "--metrics-addr HOST:0 the chosen port is printed at any level, even --quiet.\n\n"
                      "Options:\n";
    const Options defaults = default_options();
    for (const Spec& s : specs()) {
        const bool long_alias = s.alias.starts_with("--");
        out += "  " + (s.alias.empty() || long_alias ? "" : s.alias + ", ") + s.name;
        out += (s.metavar.empty() ? "" : " " + s.metavar) + "\n";
        if (long_alias)
            out += "      (also spelled " + s.alias + ")\n";
        std::size_t start = 0;
        for (std::size_t nl; (nl = s.help.find('\n', start)) != std::string::npos; start = nl + 1)
            out += "      " + s.help.substr(start, nl - start) + "\n";
        out += "      " + s.help.substr(start) + "\n";
        if (s.show != nullptr)
            out += "      default: " + s.show(s, defaults) + "\n";
        if (!s.allowed.empty())
            out += "      allowed: " + s.allowed + "\n";
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> describe(const Options& o)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const Spec& s : specs()) {
        if (s.show == nullptr)
            continue;
        std::string key = s.name.substr(2);
        for (char& c : key)
            c = c == '-' ? '_' : c;
        out.emplace_back(std::move(key), s.show(s, o));
    }
    return out;
}

std::string describe_line(const Options& o)
{
    std::string out;
    for (const auto& [key, value] : describe(o)) {
        bool plain = !value.empty();
        for (const char c : value)
            plain = plain && detail::printable(c) && c != ' ' && c != '"' && c != '=' && c != '\\';
        out += (out.empty() ? "" : " ") + key + "=";
        if (plain) {
            out += value;
            continue;
        }
        out += '"';
        for (const char c : value) {
            if (c == '"' || c == '\\')
                out += '\\';
            detail::append_escaped(out, c);
        }
        out += '"';
    }
    return out;
}

std::span<const OptionInfo> option_table()
{
    static const std::vector<OptionInfo> infos = [] {
        std::vector<OptionInfo> v;
        const Options defaults = default_options();
        for (const Spec& s : specs())
            v.push_back({s.name, s.alias, s.metavar, s.show ? s.show(s, defaults) : std::string(), s.allowed,
                         !s.metavar.empty()});
        return v;
    }();
    return infos;
}

} // namespace flowcop::app
