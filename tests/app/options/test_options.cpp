// SPDX-License-Identifier: BSD-3-Clause
// Command-line syntax: defaults, both spellings of every option, and the syntax errors.
#include <service/dataplane/worker.h>
#include <service/options/options.h>

#include <tcpstate/tcp_state.h>
#include <timerwheel/config.h>

#include <algorithm>
#include <functional>
#include <set>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::parse;
using flowcop::app::test::parsed;
using flowcop::app::test::rejected;

// The defaults are the service's documented behaviour (netfilter's TCP timeouts, the ATS wheel):
// a silent change here changes every deployment that relies on them.
TEST_CASE("default_options holds the documented defaults", "[app][options]")
{
    const Options o = default_options();
    CHECK(o.mode == Mode::monitor);
    CHECK(o.clock == ClockSource::tsc);
    CHECK(o.wheel_buckets == 4096);
    CHECK(o.tick_ms == 1000);
    CHECK(o.check_interval_ms == 1000);
    CHECK(o.timeout_budget == 128);
    CHECK(o.visit_budget_factor == 16);
    CHECK(o.flows_per_lcore == 1048576);
    CHECK(o.mbufs == 0);             // auto: sized for the ports and lcores at start
    CHECK(o.mbuf_data_room == 2176); // RTE_MBUF_DEFAULT_BUF_SIZE
    CHECK(o.tcp_timeout_s == std::array<uint32_t, 9>{120, 60, 432000, 120, 60, 30, 120, 10, 120});
    CHECK(o.default_inactivity_timeout_s == 600);
    CHECK(o.active_timeout_s == 0);
    CHECK(o.metrics_enabled);
    CHECK(o.metrics_host == "127.0.0.1");
    CHECK(o.metrics_port == 9781);
    CHECK(o.events_path.empty());
    CHECK(o.events_ring == 65536);
    CHECK(o.events_invalid_rate == 100);
    CHECK(o.stop_when_idle_ms == 0);
    CHECK(o.loose_pickup);
    CHECK_FALSE(o.tcp_be_liberal); // netfilter's defaults: window tracking as strict as Linux's
    CHECK_FALSE(o.tcp_ignore_invalid_rst);
    CHECK(o.tcp_max_retrans == 3);
    CHECK(o.tcp_timeout_max_retrans_s == 300);
    CHECK(o.tcp_timeout_unacknowledged_s == 300);
    CHECK(o.vlan_key == flowcop::packet::VlanKey::both);
    CHECK(o.flowgen.empty());
    CHECK_FALSE(o.quiet);
}

// One source per default: the options and the worker read the libraries' named defaults, and the TCP
// state names and their index space are tcpstate's, so a change there reaches --help, telemetry,
// config_info and the worker at once.
TEST_CASE("Defaults and state names come from the libraries that own them", "[app][options]")
{
    const Options o = default_options();
    CHECK(o.wheel_buckets == flowcop::timerwheel::kDefaultBuckets);
    CHECK(uint64_t(o.tick_ms) * 1'000'000 == flowcop::timerwheel::kDefaultTickNs);
    CHECK(o.visit_budget_factor == flowcop::timerwheel::kDefaultVisitBudgetFactor);
    const auto netfilter = flowcop::tcpstate::Timeouts::netfilter_defaults();
    CHECK(o.default_inactivity_timeout_s == netfilter.default_inactivity);
    REQUIRE(kTcpStateFlagNames.size() == o.tcp_timeout_s.size());
    for (size_t i = 0; i < kTcpTimeoutStates; ++i) {
        const flowcop::tcpstate::State s = tcp_timeout_state(i);
        CHECK(std::string(kTcpStateFlagNames[i]) == flowcop::tcpstate::state_flag_name(s));
        CHECK(o.tcp_timeout_s[i] == netfilter.seconds[size_t(s)]);
    }
    const WorkerSettings w;
    CHECK(w.check_interval_ns == uint64_t(o.check_interval_ms) * 1'000'000);
    CHECK(w.fire_budget == o.timeout_budget);
    CHECK(w.visit_budget_factor == o.visit_budget_factor);
}

TEST_CASE("kTcpStateFlagNames lists the states in tcp_timeout_s index order", "[app][options]")
{
    CHECK(std::vector<std::string>(kTcpStateFlagNames.begin(), kTcpStateFlagNames.end()) ==
          std::vector<std::string>{"syn_sent", "syn_recv", "established", "fin_wait", "close_wait", "last_ack",
                                   "time_wait", "close", "syn_sent2"});
}

// EAL leaves argv[0] only when the operator gave no flowcop options.
TEST_CASE("a command line without flowcop options yields the defaults", "[app][options]")
{
    CHECK(parsed({}) == default_options());
    char* argv[] = {nullptr};
    const ParseOutcome none = parse_options(0, argv);
    CHECK(none.kind == ParseOutcome::ok);
    CHECK(none.options == default_options());
}

namespace {
struct Case {
    std::string name;
    std::string value;
    std::function<bool(const Options&)> check;
};

std::vector<Case> one_case_per_option()
{
    std::vector<Case> cases = {
        {"--mode", "inline", [](const Options& o) { return o.mode == Mode::inline_fwd; }},
        {"--state-file", "/var/lib/flowcop/flows.state",
         [](const Options& o) { return o.state_file == "/var/lib/flowcop/flows.state"; }},
        {"--state-checkpoint-s", "300", [](const Options& o) { return o.state_checkpoint_s == 300; }},
        {"--clock", "packet", [](const Options& o) { return o.clock == ClockSource::packet; }},
        {"--wheel-buckets", "512", [](const Options& o) { return o.wheel_buckets == 512; }},
        {"--tick-ms", "250", [](const Options& o) { return o.tick_ms == 250; }},
        {"--check-interval-ms", "20", [](const Options& o) { return o.check_interval_ms == 20; }},
        {"--timeout-budget", "9999999", [](const Options& o) { return o.timeout_budget == 9999999; }},
        {"--visit-budget-factor", "3", [](const Options& o) { return o.visit_budget_factor == 3; }},
        {"--flows-per-lcore", "5000", [](const Options& o) { return o.flows_per_lcore == 5000; }},
        {"--mbufs", "20000", [](const Options& o) { return o.mbufs == 20000; }},
        {"--mbuf-data-room", "192", [](const Options& o) { return o.mbuf_data_room == 192; }},
        {"--default-inactivity-timeout", "7", [](const Options& o) { return o.default_inactivity_timeout_s == 7; }},
        {"--active-timeout", "3600", [](const Options& o) { return o.active_timeout_s == 3600; }},
        {"--metrics-addr", "10.1.2.3:80",
         [](const Options& o) { return o.metrics_enabled && o.metrics_host == "10.1.2.3" && o.metrics_port == 80; }},
        {"--metrics-allow", "192.0.2.0/24",
         [](const Options& o) { return o.metrics_allow == std::vector<std::string>{"192.0.2.0/24"}; }},
        {"--ipfix", "[2001:db8::1]:4739",
         [](const Options& o) {
             return o.ipfix == std::vector<Options::Collector>{{"2001:db8::1", 4739}};
         }},
        {"--ipfix-mtu", "9000", [](const Options& o) { return o.ipfix_mtu == 9000; }},
        {"--ipfix-template-refresh", "300", [](const Options& o) { return o.ipfix_template_refresh_s == 300; }},
        {"--ipfix-template-refresh-messages", "20",
         [](const Options& o) { return o.ipfix_template_refresh_messages == 20; }},
        {"--ipfix-max-rate", "2500", [](const Options& o) { return o.ipfix_max_rate == 2500; }},
        {"--ipfix-domain-base", "100", [](const Options& o) { return o.ipfix_domain_base == 100; }},
        {"--ipfix-active-timeout", "60", [](const Options& o) { return o.ipfix_active_timeout_s == 60; }},
        {"--events", "/tmp/ev.log", [](const Options& o) { return o.events_path == "/tmp/ev.log"; }},
        {"--policy", "/etc/flowcop/policy.nft",
         [](const Options& o) { return o.policy_path == "/etc/flowcop/policy.nft"; }},
        {"--events-ring", "128", [](const Options& o) { return o.events_ring == 128; }},
        {"--events-invalid-rate", "0", [](const Options& o) { return o.events_invalid_rate == 0; }},
        {"--events-filter", "update:udp",
         [](const Options& o) {
             return o.events_filter.kinds == flowcop::events::kind_bit(flowcop::events::Kind::updated) &&
                    o.events_filter.protos.has(17) && !o.events_filter.protos.has(6);
         }},
        {"--stop-when-idle-ms", "1500", [](const Options& o) { return o.stop_when_idle_ms == 1500; }},
        {"--loose-pickup", "off", [](const Options& o) { return !o.loose_pickup; }},
        {"--tcp-be-liberal", "on", [](const Options& o) { return o.tcp_be_liberal; }},
        {"--tcp-ignore-invalid-rst", "on", [](const Options& o) { return o.tcp_ignore_invalid_rst; }},
        {"--tcp-max-retrans", "9", [](const Options& o) { return o.tcp_max_retrans == 9; }},
        {"--tcp-timeout-max-retrans", "0", [](const Options& o) { return o.tcp_timeout_max_retrans_s == 0; }},
        {"--tcp-timeout-unacknowledged", "900", [](const Options& o) { return o.tcp_timeout_unacknowledged_s == 900; }},
        {"--vlan-key", "none", [](const Options& o) { return o.vlan_key == flowcop::packet::VlanKey::none; }},
        {"--flowgen", "flows=10,rate=5", [](const Options& o) { return o.flowgen == "flows=10,rate=5"; }},
        {"--track", "tcp,other",
         [](const Options& o) {
             return o.track == (flowcop::conntrack::track_bit(flowcop::conntrack::Proto::tcp) |
                                flowcop::conntrack::track_bit(flowcop::conntrack::Proto::other));
         }},
        {"--port-zone", "0:7,3:9",
         [](const Options& o) {
             return o.port_zones == std::vector<std::pair<uint16_t, uint16_t>>{{0, 7}, {3, 9}};
         }},
    };
    for (std::size_t i = 0; i < flowcop::protostate::kTimeoutCount; ++i) {
        const uint32_t v = static_cast<uint32_t>(2000 + i);
        cases.push_back({std::string("--") + flowcop::protostate::timeout_flag_name(flowcop::protostate::Timeout(i)),
                         std::to_string(v), [i, v](const Options& o) {
                             auto want = default_options().proto_timeout_s;
                             want[i] = v;
                             return o.proto_timeout_s == want;
                         }});
    }
    for (std::size_t i = 0; i < kTcpStateFlagNames.size(); ++i) {
        const uint32_t v = static_cast<uint32_t>(1000 + i);
        std::string flag = std::string("--tcp-timeout-") + kTcpStateFlagNames[i];
        std::replace(flag.begin(), flag.end(), '_', '-'); // --tcp-timeout-time-wait
        cases.push_back({flag, std::to_string(v), [i, v](const Options& o) {
                             auto want = default_options().tcp_timeout_s;
                             want[i] = v;
                             return o.tcp_timeout_s == want; // and no other state changed
                         }});
    }
    return cases;
}
} // namespace

// Operators and unit files use both spellings; they must mean exactly the same thing. The case
// list is checked against the parser's table so a new option cannot go untested.
TEST_CASE("every option is accepted as --opt VALUE and as --opt=VALUE", "[app][options]")
{
    const std::vector<Case> cases = one_case_per_option();
    std::set<std::string> tested;
    for (const Case& c : cases) {
        INFO(c.name << " " << c.value);
        const Options separate = parsed({c.name, c.value});
        const Options joined = parsed({c.name + "=" + c.value});
        CHECK(separate == joined);
        CHECK(c.check(separate));
        CHECK(separate != default_options());
        tested.insert(c.name);
    }
    for (const OptionInfo& info : option_table()) {
        INFO(info.name);
        CHECK((tested.count(info.name) == 1) == info.takes_value);
    }
}

TEST_CASE("--quiet is a flag that sets quiet", "[app][options]")
{
    CHECK(parsed({"--quiet"}).quiet);
    CHECK(rejected({"--quiet=yes"}) == "flowcop: --quiet: takes no value, got 'yes'");
    // A flag never swallows the next argument as its value.
    const Options o = parsed({"--quiet", "--tick-ms", "5"});
    CHECK((o.quiet && o.tick_ms == 5));
}

TEST_CASE("several options combine in one command line", "[app][options]")
{
    const Options o = parsed({"--mode", "inline", "--clock=packet", "--tcp-timeout-close", "0",
                              "--tcp-timeout-established=3", "--events", "-", "--quiet"});
    CHECK(o.mode == Mode::inline_fwd);
    CHECK(o.clock == ClockSource::packet);
    CHECK(o.tcp_timeout_s[7] == 0);
    CHECK(o.tcp_timeout_s[2] == 3);
    CHECK(o.events_path == "-");
    CHECK(o.quiet);
    CHECK(o.tick_ms == default_options().tick_ms);
}

TEST_CASE("an unknown option is rejected with a pointer to --help", "[app][options]")
{
    CHECK(rejected({"--bogus"}) == "flowcop: unknown option '--bogus' (see --help)");
    CHECK(rejected({"--bogus=5"}) == "flowcop: unknown option '--bogus' (see --help)");
    CHECK(rejected({"-x"}) == "flowcop: unknown option '-x' (see --help)");
    // No getopt-style prefix abbreviation: "--mod" must not silently mean --mode.
    CHECK(rejected({"--mod", "inline"}) == "flowcop: unknown option '--mod' (see --help)");
}

TEST_CASE("an unknown TCP state names the flag and lists the valid states", "[app][options]")
{
    const std::string msg = rejected({"--tcp-timeout-bogus", "5"});
    CHECK(msg.rfind("flowcop: --tcp-timeout-bogus: unknown TCP state 'bogus'", 0) == 0);
    for (std::string state : kTcpStateFlagNames) {
        std::replace(state.begin(), state.end(), '_', '-');
        CHECK(msg.find(state) != std::string::npos);
    }
    CHECK(msg.find("(valid states: syn-sent, syn-recv, ") != std::string::npos); // as the flags spell them
}

TEST_CASE("a TCP state's flag is spelled with hyphens, and the state's underscore spelling is the same flag",
          "[app][options]")
{
    const Options hyphens = parsed({"--tcp-timeout-time-wait=7", "--tcp-timeout-syn-sent2", "9"});
    const Options underscores = parsed({"--tcp-timeout-time_wait=7", "--tcp-timeout-syn_sent2", "9"});
    CHECK(hyphens == underscores);
    CHECK(hyphens != default_options());
    // Later wins across the two spellings: they are one option.
    CHECK(parsed({"--tcp-timeout-close-wait=5", "--tcp-timeout-close_wait=6"}) ==
          parsed({"--tcp-timeout-close-wait=6"}));
    // An error names the flag as it was typed.
    CHECK(rejected({"--tcp-timeout-last_ack=x"}).rfind("flowcop: --tcp-timeout-last_ack: ", 0) == 0);
    CHECK(rejected({"--tcp-timeout-last-ack=x"}).rfind("flowcop: --tcp-timeout-last-ack: ", 0) == 0);
    CHECK(rejected({"--tcp-timeout-last_ack"}).rfind("flowcop: --tcp-timeout-last_ack: missing value", 0) == 0);
}

TEST_CASE("a positional argument or a second '--' is rejected", "[app][options]")
{
    CHECK(rejected({"inline"}) ==
          "flowcop: unexpected argument 'inline' (flowcop takes no positional arguments; see --help)");
    CHECK(rejected({"--", "--quiet"}).find("unexpected argument '--'") != std::string::npos);
    CHECK(rejected({"-"}).find("unexpected argument '-'") != std::string::npos);
}

TEST_CASE("an option without its value is rejected naming what was expected", "[app][options]")
{
    CHECK(rejected({"--tick-ms"}) == "flowcop: --tick-ms: missing value (expected MS; allowed: 1..60000)");
    // The next option is not taken as the value: that would write events to a file "--quiet".
    CHECK(rejected({"--events", "--quiet"}).rfind("flowcop: --events: missing value", 0) == 0);
    // ... unless the operator says so with the = form; "-" alone is a value (stdout).
    CHECK(parsed({"--events=--quiet"}).events_path == "--quiet");
    CHECK(parsed({"--events", "-"}).events_path == "-");
}

// Later wins (issue 13): a wrapper's defaults, a unit's FLOWCOP_OPTS and an operator's additions
// compose without editing each other. Each occurrence is still checked on its own.
TEST_CASE("an option given again replaces its earlier value; each value is still checked", "[app][options]")
{
    CHECK(parsed({"--tick-ms", "5", "--tick-ms=7"}).tick_ms == 7);
    CHECK(parsed({"--quiet", "--quiet"}).quiet);
    CHECK(parsed({"--events", "a.jsonl", "--events", "-"}).events_path == "-");
    CHECK(parsed({"--mode", "inline", "--mode", "monitor"}).mode == default_options().mode);
    // Different states are different options.
    const Options o = parsed({"--tcp-timeout-close=1", "--tcp-timeout-close_wait=2", "--tcp-timeout-close", "3"});
    CHECK((o.tcp_timeout_s[7] == 3 && o.tcp_timeout_s[4] == 2));
    // A bad later value is an error even after a good one, and a bad earlier one is not hidden.
    CHECK(rejected({"--tick-ms", "5", "--tick-ms", "0"}).rfind("flowcop: --tick-ms:", 0) == 0);
    CHECK(rejected({"--tick-ms", "0", "--tick-ms", "5"}).rfind("flowcop: --tick-ms:", 0) == 0);
}

TEST_CASE("a value outside a fixed set is rejected listing the set", "[app][options]")
{
    CHECK(rejected({"--mode", "foo"}) == "flowcop: --mode: 'foo' is not one of monitor, inline");
    CHECK(rejected({"--clock=wall"}) == "flowcop: --clock: 'wall' is not one of tsc, packet");
    CHECK(rejected({"--loose-pickup", "yes"}) == "flowcop: --loose-pickup: 'yes' is not one of on, off");
    // Case matters: the set is exact.
    CHECK(rejected({"--mode=Inline"}) == "flowcop: --mode: 'Inline' is not one of monitor, inline");
    CHECK(rejected({"--mode="}) == "flowcop: --mode: '' is not one of monitor, inline");
    CHECK(parsed({"--mode=monitor"}).mode == Mode::monitor);
    CHECK(parsed({"--clock", "tsc"}).clock == ClockSource::tsc);
    CHECK(parsed({"--loose-pickup=on"}).loose_pickup);
}

// An operator's typo must produce one readable line, whatever bytes it contains.
TEST_CASE("an error stays one line and short whatever the bad value holds", "[app][options]")
{
    CHECK(rejected({"--mode", "in\nline"}) == "flowcop: --mode: 'in\\x0aline' is not one of monitor, inline");
    const std::string msg = rejected({"--mode", std::string(5000, 'x')});
    CHECK(msg.size() < 200);
    CHECK(msg.find("xxx...'") != std::string::npos);
    CHECK(rejected({"--bo\x1bgus"}) == "flowcop: unknown option '--bo\\x1bgus' (see --help)");
}

// Parsing stops at the first bad argument, left to right, and never returns half-parsed options.
TEST_CASE("the first error wins and no partial options are returned", "[app][options]")
{
    const ParseOutcome out = parse({"--tick-ms", "5", "--mode", "foo", "--bogus"});
    CHECK(out.kind == ParseOutcome::error);
    CHECK(out.message == "flowcop: --mode: 'foo' is not one of monitor, inline");
    CHECK(out.options == default_options());
    // No state survives between calls (no getopt optind).
    CHECK(parsed({"--tick-ms", "5"}).tick_ms == 5);
}

TEST_CASE("format_flag_error is the one error format, also for errors found later", "[app][options]")
{
    CHECK(format_flag_error("--metrics-addr", "127.0.0.1:9781: address already in use") ==
          "flowcop: --metrics-addr: 127.0.0.1:9781: address already in use");
}
