// SPDX-License-Identifier: BSD-3-Clause
// The control socket's counters (ctl_server.h), and the view readers read them through.
//
// Ownership: the service owns CtlServerStats, so that readers started before the server (the
// exporter) read valid memory, and read zeros when no control socket could be made. Threading: the
// server thread alone writes each field (stats/relaxed.h bump/store_relaxed); any thread reads them
// with relaxed loads, through the rows of stats_rows.h (ctl_families()): /metrics, and the last line
// of the socket's own `stats` verb (flowcopctl -S -o json), which names them by their telemetry keys.
#pragma once

#include <events/stream.h>

#include <cstdint>

namespace flowcop::app {

struct CtlServerStats {
    uint64_t connections = 0;     // connections given a client slot
    uint64_t requests = 0;        // request lines answered (any verb, including errors)
    uint64_t refused_busy = 0;    // connections refused: every client slot was taken
    uint64_t refused_bad = 0;     // malformed or oversized requests
    uint64_t refused_timeout = 0; // no complete request line in time
    uint64_t refused_slow = 0;    // clients dropped for not reading their output
    uint64_t sent_bytes = 0;      // reply bytes the kernel took (flow lines, events, errors)
    uint64_t followers = 0;       // gauge: clients following events now
    uint64_t events_sent = 0;     // event lines queued for followers (one per follower and event)
    uint64_t events_lost = 0;     // events a follower lost: its output was full
};

// What ctl_families() read: the server's counters, and its follow subscription (events an lcore's
// ring had no room for, for every follower), or nullptr for none.
struct CtlView {
    const CtlServerStats* stats = nullptr;
    const events::Subscription* follow = nullptr;
};

} // namespace flowcop::app
