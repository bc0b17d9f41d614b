// SPDX-License-Identifier: BSD-3-Clause
// Descriptor rows (stats/family.h) into a DPDK telemetry reply.
//
// add_totals() adds one u64 per row with a telemetry key and per combination of its label values:
// the sum over every source (flows_expired_reset). A labelled row also gets its unlabelled total
// (flows_expired), and a histogram <key>_count and <key>_sum_ns. add_arrays() adds, per row marked
// per_source, one array of its value per source, in source order, keyed <key><suffix>
// (flows_active_per_lcore; port_rx_packets with an empty suffix).
//
// Needs DPDK's rte_telemetry.h (the data API works without EAL: tests build replies on
// rte_tel_data_alloc() objects). The caller has started `d` as a dict. DPDK 22.11 holds at most
// RTE_TEL_MAX_DICT_ENTRIES (256) entries per dict and refuses more: the return value is the number
// of entries DPDK refused (0 when the reply is whole), so a table outgrowing one reply is seen in
// tests, never silently cut. Runs on a telemetry thread; reads like every reader (family.h).
#pragma once

#include <stats/family.h>

#include <rte_telemetry.h>

#include <span>
#include <string>

namespace flowcop::stats {

template <typename Source>
unsigned add_totals(rte_tel_data* d, std::span<const Family<Source>> families, std::span<const Source> sources)
{
    unsigned refused = 0;
    for_each_telemetry_sample(families, sources, [&](const std::string& key, uint64_t v) {
        refused += rte_tel_data_add_dict_u64(d, key.c_str(), v) != 0 ? 1 : 0;
    });
    return refused;
}

template <typename Source>
unsigned add_arrays(rte_tel_data* d, std::span<const Family<Source>> families, std::span<const Source> sources,
                    const char* suffix)
{
    unsigned refused = 0;
    for (const Family<Source>& f : families) {
        if (f.telemetry == nullptr || !f.per_source || f.kind == Kind::histogram || label_count(f) > 0)
            continue;
        rte_tel_data* a = rte_tel_data_alloc();
        if (a == nullptr) {
            ++refused;
            continue;
        }
        rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
        for (const Source& s : sources)
            refused += rte_tel_data_add_array_u64(a, f.read(s, Index{})) != 0 ? 1 : 0;
        if (rte_tel_data_add_dict_container(d, (std::string(f.telemetry) + suffix).c_str(), a, 0) != 0) {
            rte_tel_data_free(a);
            ++refused;
        }
    }
    return refused;
}

} // namespace flowcop::stats
