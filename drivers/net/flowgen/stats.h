// SPDX-License-Identifier: BSD-3-Clause
// Contract: the generator's counters, as returned by Core::stats(), Generator::stats() and
// Port::stats(). A plain value: copying it is the snapshot. Every counter only grows, except
// active_flows. A flow is counted in exactly one of flows_fin, flows_rst, flows_idle, wave_flows once it
// has ended, and in active_flows until then, so flows_started == fin + rst + idle + wave + active.
#pragma once

#include <cstdint>

namespace flowcop::flowgen {

struct Stats {
    uint64_t packets = 0;        // frames generated (Port: frames placed in the rx ring)
    uint64_t flows_started = 0;  // SYNs sent
    uint64_t flows_fin = 0;      // FIN exchanges completed (the last ACK sent)
    uint64_t flows_rst = 0;      // RSTs sent
    uint64_t flows_idle = 0;     // flows that went silent as planned (idle_pct)
    uint64_t wave_flows = 0;     // flows silenced by the wave (not also in flows_idle)
    uint64_t virtual_now_us = 0; // timestamp of the last frame generated; `start` before the first
    bool finished = false;       // packets= or duration= reached: no frame will follow
    // Additions to the brief's list, each a degraded-behaviour counter or a cross-check:
    uint64_t active_flows = 0;     // started and not yet ended (in handshake, data or close)
    uint64_t arrivals_dropped = 0; // new flows not started because ~flows*17/16 were already active
    uint64_t alloc_failures = 0;   // mbuf allocations that failed (Generator/Port: pool exhausted)
    uint64_t tx_freed = 0;         // Port: mbufs the application sent to the port, freed by the generator
    uint64_t rx_dropped = 0;       // Port, overflow=drop: frames freed because the rx ring was full
};

} // namespace flowcop::flowgen
