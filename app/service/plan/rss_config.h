// SPDX-License-Identifier: BSD-3-Clause
// The rss plan's configuration in the shapes DPDK's ethdev calls take (the redirection table in
// rte_eth_rss_reta_entry64 groups of 64), and the check of what a port reads back after start. Pure:
// ports.cpp makes the device calls (rte_eth_dev_rss_reta_update/query, rte_eth_dev_rss_hash_conf_get)
// and hands the results here; the unit tests give read-backs of ports that keep or ignore the plan.
//
// Why read back: a driver may accept a key or table and use another (a NIC that ignores the key, a
// virtual device that stores nothing). Only what the port reports is trusted; anything else makes the plan handoff (port_plan.h).
#pragma once

#include "port_plan.h"

#include <rte_ethdev.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::app {

// A table as groups for rte_eth_dev_rss_reta_update: every entry's mask bit set.
std::vector<rte_eth_rss_reta_entry64> reta_groups(const std::vector<uint16_t>& table);
// Groups for rte_eth_dev_rss_reta_query of a `reta_size`-entry table: every mask bit set, entries 0.
std::vector<rte_eth_rss_reta_entry64> reta_query_groups(uint16_t reta_size);
// The table a query filled in.
std::vector<uint16_t> reta_entries(const std::vector<rte_eth_rss_reta_entry64>& groups, uint16_t reta_size);

// What one port reported after start.
struct RssReadback {
    bool conf_read = false;   // rte_eth_dev_rss_hash_conf_get succeeded
    std::vector<uint8_t> key; // the key it reported (PortSetup::key_bytes long)
    uint64_t hf = 0;          // the hash fields it reported
    bool reta_read = false;   // rte_eth_dev_rss_reta_query succeeded
    std::vector<uint16_t> table;
};

// "" when the port kept the plan's key, hash fields and redirection table; otherwise what it did not
// keep, as the end of a sentence that starts with the port's name.
std::string rss_mismatch(const PortPlan& plan, const PortSetup& port, const RssReadback& got);

} // namespace flowcop::app
