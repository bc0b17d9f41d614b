// SPDX-License-Identifier: BSD-3-Clause
#include "rss_config.h"

#include <cstdio>

namespace flowcop::app {

namespace {

std::string hex(uint64_t v)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string key_prefix(const std::vector<uint8_t>& key)
{
    std::string s;
    char b[3];
    for (size_t i = 0; i < key.size() && i < 8; ++i) {
        std::snprintf(b, sizeof b, "%02x", key[i]);
        s += b;
    }
    return s + (key.size() > 8 ? "..." : "");
}

} // namespace

std::vector<rte_eth_rss_reta_entry64> reta_groups(const std::vector<uint16_t>& table)
{
    std::vector<rte_eth_rss_reta_entry64> g((table.size() + RTE_ETH_RETA_GROUP_SIZE - 1) / RTE_ETH_RETA_GROUP_SIZE);
    for (size_t j = 0; j < table.size(); ++j) {
        rte_eth_rss_reta_entry64& e = g[j / RTE_ETH_RETA_GROUP_SIZE];
        e.mask |= uint64_t(1) << (j % RTE_ETH_RETA_GROUP_SIZE);
        e.reta[j % RTE_ETH_RETA_GROUP_SIZE] = table[j];
    }
    return g;
}

std::vector<rte_eth_rss_reta_entry64> reta_query_groups(uint16_t reta_size)
{
    return reta_groups(std::vector<uint16_t>(reta_size, 0));
}

std::vector<uint16_t> reta_entries(const std::vector<rte_eth_rss_reta_entry64>& groups, uint16_t reta_size)
{
    std::vector<uint16_t> t(reta_size);
    for (size_t j = 0; j < reta_size && j / RTE_ETH_RETA_GROUP_SIZE < groups.size(); ++j)
        t[j] = groups[j / RTE_ETH_RETA_GROUP_SIZE].reta[j % RTE_ETH_RETA_GROUP_SIZE];
    return t;
}

std::string rss_mismatch(const PortPlan& plan, const PortSetup& port, const RssReadback& got)
{
    if (!got.conf_read)
        return "cannot read its RSS key and hash fields back";
    std::vector<uint8_t> want(port.key_bytes);
    symmetric_key(want.data(), want.size());
    if (got.key != want)
        return "kept another hash key (it reads back " + key_prefix(got.key) + ", not " + key_prefix(want) + ")";
    if ((got.hf & wanted_rss_fields()) != plan.rss_hf)
        return "hashes other fields (it reads back " + hex(got.hf & wanted_rss_fields()) + ", not " + hex(plan.rss_hf) +
               ")";
    if (!got.reta_read)
        return "cannot read its redirection table back";
    const std::vector<uint16_t> table = redirection_table(plan, port.reta_size);
    for (size_t j = 0; j < table.size(); ++j)
        if (j >= got.table.size() || got.table[j] != table[j])
            return "kept another redirection table (entry " + std::to_string(j) + " reads back queue " +
                   (j < got.table.size() ? std::to_string(got.table[j]) : std::string("none")) + ", not " +
                   std::to_string(table[j]) + ")";
    return {};
}

} // namespace flowcop::app
