// SPDX-License-Identifier: BSD-3-Clause
// The RSS read-back check (app/service/plan/rss_config.h): what a port reports after start decides whether
// the rss plan stands. No EAL: read-backs of ports that keep the plan and of ports that ignore it.
#include <service/plan/rss_config.h>

#include <catch2/catch.hpp>

using namespace flowcop::app;

namespace {

PortPlan rss_plan()
{
    PortCaps a, b;
    a.id = 0;
    b.id = 1;
    a.name = "nic0";
    b.name = "nic1";
    a.max_rx_queues = b.max_rx_queues = a.max_tx_queues = b.max_tx_queues = 8;
    a.rss_offloads = b.rss_offloads = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP;
    a.hash_key_size = 40;
    b.hash_key_size = 52;
    a.reta_size = 128;
    b.reta_size = 512;
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports({a, b}, {0, 1, 2}, Mode::monitor, plan, error));
    REQUIRE(plan.rss());
    return plan;
}

// What a port that kept everything reports.
RssReadback kept(const PortPlan& plan, const PortSetup& ps)
{
    RssReadback r;
    r.conf_read = r.reta_read = true;
    r.key.resize(ps.key_bytes);
    symmetric_key(r.key.data(), r.key.size());
    r.hf = plan.rss_hf | RTE_ETH_RSS_L2_PAYLOAD; // fields outside those flowcop asks for do not matter
    r.table = redirection_table(plan, ps.reta_size);
    return r;
}

} // namespace

TEST_CASE("a redirection table survives the trip through rte_eth_rss_reta_entry64 groups", "[rss_config]")
{
    const PortPlan plan = rss_plan();
    const std::vector<uint16_t> t = redirection_table(plan, 512);
    const auto groups = reta_groups(t);
    REQUIRE(groups.size() == 512 / RTE_ETH_RETA_GROUP_SIZE);
    for (const auto& g : groups)
        CHECK(g.mask == ~uint64_t(0));
    CHECK(reta_entries(groups, 512) == t);
    const auto query = reta_query_groups(128);
    REQUIRE(query.size() == 2);
    CHECK(query[1].mask == ~uint64_t(0));
    CHECK(reta_entries(query, 128) == std::vector<uint16_t>(128, 0));
    // Entry j names queue (j mod 128) mod 3 on every port.
    CHECK(t[0] == 0);
    CHECK(t[127] == 127 % 3);
    CHECK(t[128] == 0);
    CHECK(t[130] == 2);
}

TEST_CASE("a port that kept the key, the hash fields and the table passes the read-back", "[rss_config]")
{
    const PortPlan plan = rss_plan();
    for (const PortSetup& ps : plan.ports)
        CHECK(rss_mismatch(plan, ps, kept(plan, ps)).empty());
}

// Each way a port can fail to keep the configuration, as a NIC that ignores the key or a virtual
// device that stores nothing (DPDK 22.11's net_null reads back a zero key, no fields and a zero table).
TEST_CASE("a port that did not keep the configuration is named with what it did not keep", "[rss_config]")
{
    const PortPlan plan = rss_plan();
    const PortSetup& ps = plan.ports[1];
    RssReadback r = kept(plan, ps);

    r.conf_read = false;
    CHECK(rss_mismatch(plan, ps, r) == "cannot read its RSS key and hash fields back");
    r = kept(plan, ps);
    r.key.assign(ps.key_bytes, 0);
    CHECK(rss_mismatch(plan, ps, r) ==
          "kept another hash key (it reads back 0000000000000000..., not 6d5a6d5a6d5a6d5a...)");
    r = kept(plan, ps);
    r.key[51] ^= 1; // past the 40 bytes the hash uses, but not what flowcop set
    CHECK(rss_mismatch(plan, ps, r).find("kept another hash key") == 0);
    r = kept(plan, ps);
    r.hf = RTE_ETH_RSS_IPV4;
    CHECK(rss_mismatch(plan, ps, r).find("hashes other fields (it reads back 0x4, not 0x") == 0);
    r = kept(plan, ps);
    r.reta_read = false;
    CHECK(rss_mismatch(plan, ps, r) == "cannot read its redirection table back");
    r = kept(plan, ps);
    r.table[300] = 7;
    CHECK(rss_mismatch(plan, ps, r) == "kept another redirection table (entry 300 reads back queue 7, not 2)");
    r = kept(plan, ps);
    r.table.assign(ps.reta_size, 0);
    CHECK(rss_mismatch(plan, ps, r) == "kept another redirection table (entry 1 reads back queue 0, not 1)");
    r.table.resize(10);
    r.table[1] = 1;
    r.table[2] = 2;
    r.table[4] = 1;
    r.table[5] = 2;
    r.table[7] = 1;
    r.table[8] = 2;
    CHECK(rss_mismatch(plan, ps, r) == "kept another redirection table (entry 10 reads back queue none, not 1)");
}
