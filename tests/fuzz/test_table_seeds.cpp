// SPDX-License-Identifier: BSD-3-Clause
// The flow-table target's seeds reach the paths they are named for, and its model catches a table that
// is wrong: the fuzz target's checks can fail.
#include "corpus_seeds.h"
#include "table_driver.h"
#include "table_model.h"
#include "table_script.h"

#include <catch2/catch.hpp>

#include <map>

using namespace flowcop;
using fuzz::TableRunStats;

namespace {

std::map<std::string, TableRunStats> run_seeds()
{
    std::map<std::string, TableRunStats> out;
    for (const fuzz::Seed& s : fuzz::crafted_table_scripts()) {
        TableRunStats st;
        INFO(s.name);
        CHECK(fuzz::run_table(s.bytes.data(), s.bytes.size(), &st) == "");
        out[s.name] = st;
    }
    return out;
}

} // namespace

TEST_CASE("Each crafted table seed holds and reaches its path", "[fuzz][table]")
{
    const auto r = run_seeds();
    REQUIRE(r.size() == 7);
    CHECK(r.at("handshake_close_reopen").fired >= 2);
    CHECK(r.at("pipeline_stale_candidates").created >= 40);
    CHECK(r.at("probe_window_full").probe_window_full > 0);
    CHECK(r.at("probe_window_full").evicted > 0);
    CHECK(r.at("probe_window_full").refused > 0);
    CHECK(r.at("capacity_full_early_drop").evicted > 0);
    CHECK(r.at("capacity_full_early_drop").refused > 0);
    CHECK(r.at("budgeted_cop_passes").budget_stops > 0);
    CHECK(r.at("kill_rst_arrival_shutdown").created >= 5);
    CHECK(r.at("zone_and_vlan_twins").created == 32); // four flows per tuple, none merged
}

TEST_CASE("The twins key space is each tuple in three zones and a VLAN", "[fuzz][table]")
{
    const auto& keys = fuzz::key_space(fuzz::TableSetup::from_byte(3 << 3));
    REQUIRE(keys.size() == fuzz::kKeys);
    for (size_t t = 0; t + 3 < keys.size(); t += 4) {
        packet::FlowKey plain = keys[t + 1];
        plain.zone = 0;
        CHECK(plain == keys[t]);
        CHECK(keys[t + 1].zone == 1);
        CHECK(keys[t + 2].zone == 0x100);
        CHECK(packet::key_vlan_outer(keys[t + 3]) == 1);
        CHECK(keys[t + 3].zone == 0);
    }
}

TEST_CASE("Every byte string is a script, and odd ones run clean", "[fuzz][table]")
{
    const std::vector<std::vector<uint8_t>> odd = {
        {}, {0xff}, {0x00, 0x00}, {0x1f, 0x7f}, {0x07, 0xa0, 0xa0, 0xd0}, {0x3f, 0xe0, 0xe0, 0x05, 0x01},
    };
    for (const auto& b : odd)
        CHECK(fuzz::run_table(b.data(), b.size()) == "");
}

TEST_CASE("The table model reports a table changed behind its back", "[fuzz][table]")
{
    const fuzz::TableSetup setup = fuzz::TableSetup::from_byte(0x06); // 256 flows, loose, crowd keys
    const auto& keys = fuzz::key_space(setup);
    std::string err;
    auto table = conntrack::FlowTable::create(setup.table_config(), err);
    REQUIRE(table);
    fuzz::TableModel model(setup.table_config(), keys);
    packet::Packet p{};
    p.key = keys[3];
    p.tcp_flags = packet::kTcpSyn;
    p.ip_len = 46;
    p.src_is_lo = true;
    p.verdict = packet::Verdict::tcp;
    const packet::Packet* pp = &p;
    const uint64_t t = fuzz::kTableStartNs;

    SECTION("a flow the model did not create")
    {
        table->process_burst(&pp, 1, t);
        CHECK_THAT(model.check(*table), Catch::Contains("flows created"));
    }
    SECTION("a packet counted twice")
    {
        model.packet(3, p, t);
        table->process_burst(&pp, 1, t);
        CHECK(model.check(*table).empty());
        table->process_burst(&pp, 1, t); // a retransmitted SYN the model never saw
        CHECK_THAT(model.check(*table), Catch::Contains("tcp outcomes"));
    }
    SECTION("a flow killed and reaped")
    {
        model.packet(3, p, t);
        table->process_burst(&pp, 1, t);
        REQUIRE(model.check(*table).empty());
        REQUIRE(table->kill(keys[3]));
        table->run_cop(t + 2 * fuzz::kTableSecNs, UINT64_MAX, UINT64_MAX);
        CHECK_THAT(model.check(*table), Catch::Contains("flows expired 'killed'"));
    }
}
