// SPDX-License-Identifier: BSD-3-Clause
// A worker lcore's own counters, beside its flow table's (conntrack/counters.h).
//
// Written only by the owning lcore with stats::bump/store_relaxed, read by the exporter, telemetry
// and the housekeeping thread with stats::load_relaxed (stats/relaxed.h). Cache-line aligned and
// never shared with another writer. The stats rows (stats_rows.cpp) say what each one means.
#pragma once

#include <cstdint>

namespace flowcop::app {

struct alignas(64) WorkerStats {
    uint64_t rx_packets = 0;
    uint64_t tx_packets = 0;
    uint64_t tx_dropped = 0;       // inline: the peer port's TX queue was full
    uint64_t policy_dropped = 0;   // inline with --policy: packets the policy dropped (freed, not forwarded)
    uint64_t no_timestamp = 0;     // --clock packet: packets without a timestamp (time did not move)
    uint64_t handed_off = 0;       // handoff plan: packets passed to the worker that owns their flow
    uint64_t handoff_dropped = 0;  // handoff plan: packets dropped because the ring to their owner was full
    uint64_t handoff_received = 0; // handoff plan: packets other workers passed to this one
    uint64_t last_rx_tsc = 0;      // TSC of the last burst that carried packets
    uint64_t now_ns = 0;           // the lcore's clock at its last turn
    uint64_t turns = 0;            // loop turns completed: the watchdog's proof of progress (notify.h)
    uint64_t steady_lane = 0;      // packets read through the steady lane (worker.h, lite_lane())
};

} // namespace flowcop::app
