// SPDX-License-Identifier: BSD-3-Clause
// The /flowcop/* handlers on real rte_tel_data objects, without EAL, a socket or a service: a stats
// view over plain counters and a fake Control. tests/app/test_telemetry_commands.py drives the same
// handlers through the running binary's socket.
#include "tel_reader.h"
#include <service/control/control_parse.h>
#include <service/control/stats_rows.h>
#include <service/control/telemetry_commands.h>

#include <conntrack/reason.h>
#include <packet/flow_key.h>
#include <packet/verdict.h>
#include <tcpstate/window.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

using namespace flowcop;
using namespace flowcop::app;
using test::TelData;
using test::TelValue;

namespace {

class FakeControl final : public Control {
public:
    bool running() const noexcept override { return is_running; }
    Options current_options() const override { return current; }
    uint64_t now_ns() const noexcept override { return now; }
    int kill(const packet::FlowKey& key) override
    {
        killed.push_back(key);
        return kill_result;
    }
    bool apply(const Options& o) override
    {
        applied.push_back(o);
        if (apply_ok)
            current = o;
        return apply_ok;
    }
    size_t snapshot(size_t worker, const conntrack::SnapshotFilter&, conntrack::FlowSnapshot* out,
                    size_t max) const override
    {
        size_t n = 0;
        for (; worker < flows.size() && n < flows[worker].size() && n < max; ++n)
            out[n] = flows[worker][n];
        return n;
    }
    // The control socket's calls (ctl_server.h), which these handlers never make.
    uint32_t read_slice(size_t, uint32_t, uint32_t, conntrack::FlowSnapshot*, size_t& n) const override
    {
        n = 0;
        return conntrack::kNoPosition;
    }
    int get(const packet::FlowKey&, conntrack::FlowSnapshot&, size_t&) override { return 0; }
    int set_timeout(const packet::FlowKey&, uint32_t, conntrack::FlowSnapshot&, size_t&) override { return 0; }
    int kill_ids(size_t, const uint64_t*, unsigned) override { return 0; }

    bool is_running = true;
    Options current = default_options();
    uint64_t now = 0;
    int kill_result = 1;
    bool apply_ok = true;
    std::vector<packet::FlowKey> killed;
    std::vector<Options> applied;
    std::vector<std::vector<conntrack::FlowSnapshot>> flows;
};

// Two lcores (3 and 5) and two ports with distinct, known counts.
struct Fixture {
    conntrack::Counters table[2];
    WorkerStats worker[2];
    StatsView view;
    FakeControl control;

    Fixture()
    {
        for (unsigned i = 0; i < 2; ++i) {
            conntrack::Counters& c = table[i];
            c.flows_created = 10 + i;
            c.flows_expired[unsigned(conntrack::Reason::reset)] = 2 + i;
            c.flows_expired[unsigned(conntrack::Reason::inactivity)] = 1;
            c.tcp_tracked = 100 + i;
            c.tcp_invalid = 1;
            c.tcp_table_full = 4;
            c.packets_by_verdict[unsigned(packet::Verdict::tcp)] = 105 + i;
            c.packets_by_verdict[unsigned(packet::Verdict::udp)] = 7;
            c.cop_visited = 20 * (i + 1);
            c.cop_budget_exhausted = i;
            c.cop_pass_ns.observe(1'500);
            c.cop_pass_ns.observe(3'000'000);
            worker[i].rx_packets = 112 + i;
            view.lcores.push_back({.lcore = 3 + 2 * i, .table = &c, .worker = &worker[i], .capacity = 1024});
        }
        view.ports = {{0, "net_pcap0"}, {1, "net_null0"}};
        view.read_port = [](uint16_t port, rte_eth_stats& s) noexcept {
            s = rte_eth_stats{};
            s.ipackets = 1000 + port;
            s.imissed = port;
            return true;
        };
    }
};

uint64_t u64(const std::map<std::string, TelValue>& d, const std::string& key)
{
    INFO(key);
    REQUIRE(d.count(key) == 1);
    REQUIRE(d.at(key).kind == TelValue::u64);
    return d.at(key).number;
}

std::vector<uint64_t> u64s(const std::map<std::string, TelValue>& d, const std::string& key)
{
    INFO(key);
    REQUIRE(d.count(key) == 1);
    REQUIRE(d.at(key).kind == TelValue::container);
    return test::u64_array_of(d.at(key).nested);
}

std::string error_of(const TelData& r)
{
    const auto d = test::dict_of(r.get());
    return d.count("error") ? d.at("error").text : std::string();
}

packet::FlowKey key_of(const char* tuple)
{
    packet::FlowKey k;
    REQUIRE(parse_flow_tuple(tuple, k) == "");
    return k;
}

} // namespace

// If a DPDK upgrade changed rte_tel_data's private layout, every other case here would misread.
TEST_CASE("The reader reads back what the public API wrote", "[app][telemetry]")
{
    TelData r;
    rte_tel_data_start_dict(r.get());
    rte_tel_data_add_dict_u64(r.get(), "a", 42);
    rte_tel_data_add_dict_string(r.get(), "s", "text");
    rte_tel_data* arr = rte_tel_data_alloc();
    rte_tel_data_start_array(arr, RTE_TEL_U64_VAL);
    rte_tel_data_add_array_u64(arr, 7);
    rte_tel_data_add_array_u64(arr, 8);
    rte_tel_data_add_dict_container(r.get(), "arr", arr, 0);
    const auto d = test::dict_of(r.get());
    REQUIRE(d.size() == 3);
    CHECK(u64(d, "a") == 42);
    CHECK(d.at("s").text == "text");
    CHECK(u64s(d, "arr") == std::vector<uint64_t>{7, 8});
}

TEST_CASE("/flowcop/stats sums every row over the lcores and splits labelled rows", "[app][telemetry]")
{
    Fixture f;
    TelData r;
    REQUIRE(telemetry_stats(f.view, f.control, nullptr, r.get()) == 0);
    const auto d = test::dict_of(r.get());
    CHECK(u64(d, "flows_created") == 21);
    CHECK(u64(d, "flows_expired_reset") == 5);
    CHECK(u64(d, "flows_expired_inactivity") == 2);
    CHECK(u64(d, "flows_expired") == 7);
    CHECK(u64(d, "flows_active") == 14);
    CHECK(u64(d, "flows_dropped_table_full") == 8);
    CHECK(u64(d, "packets_tracked") == 201);
    CHECK(u64(d, "packets_tcp_invalid_for_state") == 2);
    CHECK(u64(d, "packets_tcp_table_full") == 8);
    CHECK(u64(d, "packets_udp") == 14);
    CHECK(d.count("packets_tcp") == 0); // tcp is split into the four results
    CHECK(u64(d, "rx_packets") == 225);
    CHECK(u64(d, "inactivity_cop_visited") == 60);
    CHECK(u64(d, "inactivity_cop_pass_duration_count") == 4);
    CHECK(u64(d, "inactivity_cop_pass_duration_sum_ns") == 2 * 3'001'500);
    CHECK(u64(d, "events_written") == 0); // no --events: zero, not absent
    CHECK(u64s(d, "lcores") == std::vector<uint64_t>{3, 5});
    CHECK(u64s(d, "flows_active_per_lcore") == std::vector<uint64_t>{7, 7});
    CHECK(u64s(d, "inactivity_cop_visited_per_lcore") == std::vector<uint64_t>{20, 40});
    CHECK(u64s(d, "inactivity_cop_budget_exhausted_per_lcore") == std::vector<uint64_t>{0, 1});
    CHECK(u64s(d, "ports") == std::vector<uint64_t>{0, 1});
    CHECK(u64s(d, "port_rx_packets") == std::vector<uint64_t>{1000, 1001});
    CHECK(u64s(d, "port_rx_missed") == std::vector<uint64_t>{0, 1});
}

// Every key the handler served before the stats rows existed is still served (monitoring reads them).
TEST_CASE("/flowcop/stats keeps every key it has always had", "[app][telemetry]")
{
    Fixture f;
    TelData r;
    telemetry_stats(f.view, f.control, "", r.get());
    const auto d = test::dict_of(r.get());
    std::vector<std::string> keys = {"rx_packets",
                                     "tx_packets",
                                     "flows_active",
                                     "flows_created",
                                     "flows_expired",
                                     "inactivity_cop_passes",
                                     "inactivity_cop_visited",
                                     "inactivity_cop_fired",
                                     "inactivity_cop_budget_exhausted",
                                     "inactivity_cop_lock_acquire_failure",
                                     "flows_dropped_table_full",
                                     "packets_tracked",
                                     "packets_tcp_invalid_for_state",
                                     "packets_tcp_no_flow",
                                     "packets_tcp_table_full",
                                     "packets_tcp_out_of_window",
                                     "tcp_out_of_window",
                                     "inactivity_cop_pass_duration_count",
                                     "inactivity_cop_pass_duration_sum_ns",
                                     "timeout_lag_count",
                                     "timeout_lag_sum_ns",
                                     "events_written",
                                     "events_dropped_ring_full",
                                     "events_dropped_write_error",
                                     "events_write_errors",
                                     "ports",
                                     "port_rx_packets",
                                     "port_tx_packets",
                                     "port_rx_missed",
                                     "port_rx_errors",
                                     "port_rx_nombuf",
                                     "port_tx_errors",
                                     "lcores",
                                     "flows_active_per_lcore",
                                     "inactivity_cop_visited_per_lcore",
                                     "inactivity_cop_budget_exhausted_per_lcore",
                                     "inactivity_cop_lock_acquire_failure_per_lcore"};
    for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
        keys.push_back(std::string("flows_expired_") + conntrack::reason_name(conntrack::Reason(r)));
    for (unsigned v = 1; v < packet::kVerdictCount; ++v)
        keys.push_back(std::string("packets_") + packet::verdict_name(packet::Verdict(v)));
    for (unsigned r = 1; r < tcpstate::kWindowReasonCount; ++r)
        keys.push_back(std::string("tcp_out_of_window_") + tcpstate::window_reason_name(tcpstate::WindowReason(r)));
    for (const std::string& k : keys) {
        INFO(k);
        CHECK(d.count(k) == 1);
    }
}

TEST_CASE("/flowcop/stats and /flowcop/config take no parameters and answer only while running", "[app][telemetry]")
{
    Fixture f;
    {
        TelData r;
        telemetry_stats(f.view, f.control, "x", r.get());
        CHECK(error_of(r).find("no parameters") != std::string::npos);
    }
    {
        TelData r;
        telemetry_config(f.control, "a,b", r.get());
        CHECK(error_of(r).find("no parameters") != std::string::npos);
    }
    f.control.is_running = false;
    for (auto call : {+[](Fixture&x, rte_tel_data*d) { return telemetry_stats(x.view, x.control, "", d); },
                      +[](Fixture&x, rte_tel_data*d) { return telemetry_config(x.control, "", d); },
                      +[](Fixture&x, rte_tel_data*d) { return telemetry_flows(x.view, x.control, "", d); },
                      +[](Fixture&x, rte_tel_data*d) { return telemetry_ports(x.view, x.control, "", d); },
                      +[](Fixture&x, rte_tel_data*d) { return telemetry_kill(x.control, "10.0.0.1,1,10.0.0.2,2", d); },
                      +[](Fixture&x, rte_tel_data*d) { return telemetry_set(x.control, "timeout_budget,5", d); }}) {
        TelData r;
        CHECK(call(f, r.get()) == 0);
        CHECK(error_of(r) == "flowcop is not running");
    }
    CHECK(f.control.killed.empty());
    CHECK(f.control.applied.empty());
}

TEST_CASE("/flowcop/config is the current configuration, keyed as flowcop_config_info", "[app][telemetry]")
{
    Fixture f;
    f.control.current.timeout_budget = 77;
    TelData r;
    telemetry_config(f.control, "", r.get());
    const auto d = test::dict_of(r.get());
    const auto want = describe(f.control.current);
    REQUIRE(d.size() == want.size());
    for (const auto& [k, v] : want) {
        INFO(k);
        CHECK(d.at(k).text == v);
    }
    CHECK(d.at("timeout_budget").text == "77");
}

TEST_CASE("/flowcop/kill posts the canonical key and answers how many lcores had it", "[app][telemetry]")
{
    Fixture f;
    {
        TelData r;
        telemetry_kill(f.control, "10.0.0.2,80,10.0.0.1,40000", r.get());
        REQUIRE(f.control.killed.size() == 1);
        CHECK(f.control.killed[0] == key_of("10.0.0.1,40000,10.0.0.2,80")); // either direction: one key
        CHECK(u64(test::dict_of(r.get()), "killed") == 1);
    }
    {
        f.control.kill_result = -1;
        TelData r;
        telemetry_kill(f.control, "10.0.0.2,80,10.0.0.1,40000", r.get());
        CHECK(error_of(r) == "a worker lcore did not answer");
    }
    {
        TelData r;
        telemetry_kill(f.control, "10.0.0.1,80", r.get());
        CHECK_FALSE(error_of(r).empty());
        CHECK(f.control.killed.size() == 2); // the malformed tuple posted nothing
    }
}

TEST_CASE("/flowcop/set applies a valid setting and refuses a bad one with the settable names", "[app][telemetry]")
{
    Fixture f;
    {
        TelData r;
        telemetry_set(f.control, "timeout_budget,64", r.get());
        REQUIRE(f.control.applied.size() == 1);
        CHECK(f.control.applied[0].timeout_budget == 64);
        CHECK(test::dict_of(r.get()).at("timeout_budget").text == "64");
    }
    {
        TelData r;
        telemetry_set(f.control, "timeout_budget,0", r.get());
        const auto d = test::dict_of(r.get());
        CHECK(d.at("error").text.find("at least 1") != std::string::npos);
        REQUIRE(d.count("settable") == 1);
        CHECK(test::string_array_of(d.at("settable").nested) == settable_names());
        CHECK(f.control.applied.size() == 1); // nothing applied
    }
    {
        f.control.apply_ok = false;
        TelData r;
        telemetry_set(f.control, "active_timeout,30", r.get());
        CHECK(error_of(r) == "a worker lcore did not answer");
        CHECK(f.control.current.active_timeout_s == 0); // not recorded as current
    }
}

TEST_CASE("/flowcop/flows lists the most recently seen flows of every lcore, within the limit", "[app][telemetry]")
{
    Fixture f;
    auto flow = [](const char* tuple, uint64_t last_seen) {
        conntrack::FlowSnapshot s{};
        s.key = key_of(tuple);
        s.orig_is_lo = true;
        s.state = tcpstate::State::established;
        s.tcp = tcpstate::Tracker{s.state, uint8_t(tcpstate::detail::kSeenReply | tcpstate::detail::kAssured)};
        s.assured = true;
        s.last_seen_ns = last_seen;
        s.deadline_ns = last_seen + 5'000'000'000;
        s.packets[0] = 3;
        return s;
    };
    f.control.flows = {{flow("10.0.0.1,1000,10.0.0.2,80", 10), flow("10.0.0.1,1001,10.0.0.2,80", 30)},
                       {flow("10.0.0.1,1002,10.0.0.2,80", 20)}};
    f.control.now = 12;
    {
        TelData r;
        telemetry_flows(f.view, f.control, "limit=2", r.get());
        const auto rows = test::container_array_of(r.get());
        REQUIRE(rows.size() == 2);
        const auto first = test::string_array_of(rows[0]);
        CHECK(first.at(0) == "lcore=3");
        CHECK(first.at(4) == "sport=1001");
        CHECK(test::string_array_of(rows[1]).at(0) == "lcore=5");
        CHECK(std::find(first.begin(), first.end(), "flags=SEEN_REPLY,ASSURED") != first.end());
    }
    {
        // conntrack's flags: a replied flow that is not assured yet is SEEN_REPLY, not UNREPLIED; a QinQ
        // flow lists both VLAN IDs, as /flowcop/kill needs them.
        conntrack::FlowSnapshot replied = flow("10.0.0.1,1003,10.0.0.2,80,10,20", 40);
        replied.state = tcpstate::State::syn_recv;
        replied.tcp = tcpstate::Tracker{replied.state, tcpstate::detail::kSeenReply};
        replied.assured = false;
        conntrack::FlowSnapshot unreplied = flow("10.0.0.1,1004,10.0.0.2,80", 35);
        unreplied.tcp = tcpstate::Tracker{tcpstate::State::syn_sent, 0};
        unreplied.state = tcpstate::State::syn_sent;
        unreplied.assured = false;
        unreplied.killed = true;
        f.control.flows[0].push_back(replied);
        f.control.flows[0].push_back(unreplied);
        TelData r;
        telemetry_flows(f.view, f.control, "lcore=3", r.get());
        const auto rows = test::container_array_of(r.get());
        REQUIRE(rows.size() == 4);
        const auto a = test::string_array_of(rows[0]); // most recent first
        CHECK(std::find(a.begin(), a.end(), "flags=SEEN_REPLY") != a.end());
        CHECK(std::find(a.begin(), a.end(), "vlan=10,20") != a.end());
        const auto b = test::string_array_of(rows[1]);
        CHECK(std::find(b.begin(), b.end(), "flags=UNREPLIED,KILLED") != b.end());
        f.control.flows[0].resize(2);
    }
    {
        TelData r;
        telemetry_flows(f.view, f.control, "lcore=5", r.get());
        const auto rows = test::container_array_of(r.get());
        REQUIRE(rows.size() == 1);
        CHECK(test::string_array_of(rows[0]).at(4) == "sport=1002");
    }
    {
        TelData r;
        telemetry_flows(f.view, f.control, "limit=99", r.get());
        CHECK(error_of(r).find("limit") != std::string::npos);
    }
}

TEST_CASE("/flowcop/ports says which plan runs, why, and which lcore polls each queue of each port", "[app][telemetry]")
{
    Fixture f;
    // Two af_packet ports with qpairs=2 on lcores 3 and 5: no RSS, so the handoff plan.
    std::vector<PortCaps> caps(2);
    for (uint16_t i = 0; i < 2; ++i) {
        caps[i].id = i;
        caps[i].name = "net_af_packet" + std::to_string(i);
        caps[i].max_rx_queues = caps[i].max_tx_queues = caps[i].own_rx_queues = 2;
    }
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports(caps, {3, 5}, Mode::inline_fwd, plan, error));
    f.view.plan = &plan;
    {
        TelData r;
        telemetry_ports(f.view, f.control, "x", r.get());
        CHECK(error_of(r).find("no parameters") != std::string::npos);
    }
    TelData r;
    REQUIRE(telemetry_ports(f.view, f.control, "", r.get()) == 0);
    const auto d = test::dict_of(r.get());
    CHECK(d.at("plan").text == "handoff");
    CHECK(d.at("reason").text == "no_rss");
    REQUIRE(d.at("why").kind == TelValue::container);
    std::string why;
    for (const std::string& part : test::string_array_of(d.at("why").nested)) {
        CHECK(part.size() < RTE_TEL_MAX_STRING_LEN);
        why += (why.empty() ? "" : " ") + part;
    }
    CHECK(why == plan.why);
    CHECK(u64s(d, "workers") == std::vector<uint64_t>{3, 5});
    CHECK(u64s(d, "ports") == std::vector<uint64_t>{0, 1});
    CHECK(u64s(d, "rx_queues") == std::vector<uint64_t>{2, 2});
    CHECK(u64s(d, "tx_queues") == std::vector<uint64_t>{2, 2});
    CHECK(u64s(d, "symmetric_rss") == std::vector<uint64_t>{0, 0});
    CHECK(u64(d, "rss_hf") == 0);
    // The four queues dealt to the two lcores in turn.
    CHECK(u64s(d, "port0_queue_lcores") == std::vector<uint64_t>{3, 5});
    CHECK(u64s(d, "port1_queue_lcores") == std::vector<uint64_t>{3, 5});
}
