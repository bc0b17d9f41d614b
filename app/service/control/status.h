// SPDX-License-Identifier: BSD-3-Clause
// What a person at the terminal sees: the startup lines, a one-line live status
// refreshed every second (only when stderr is a TTY and not --quiet), and the
// summary at exit. The startup lines are log lines (type flowcop.service at INFO,
// log.h: --log-level governs them); the status line and the summary are output,
// written to stderr as they are. Nothing goes to stdout, so `--events -` keeps it
// pure JSON lines. Every number is a total of a stats row (stats_rows.h) over the stats
// view, read with relaxed loads; nothing here touches the data plane or sums
// counters of its own.
#pragma once

#include "stats_view.h"
#include <service/options/options.h>
#include <service/plan/port_plan.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

struct rte_mempool;

namespace flowcop::app {

class StatusLine {
public:
    StatusLine(const StatsView& view, bool enabled);
    void tick();   // call often; prints at most once a second
    void finish(); // ends the line so the summary starts on its own
private:
    struct Reading {
        uint64_t rx_packets = 0, flows_active = 0, flows_expired = 0, cop_visited = 0, cop_budget_exhausted = 0;
    };
    Reading read() const;
    const StatsView& _view;
    bool _enabled;
    bool _printed = false;
    Reading _last;
    std::chrono::steady_clock::time_point _last_at;
};

// The stats rows (telemetry keys) the status line and the summary read: each must exist.
std::span<const char* const> status_keys();

// pool may be nullptr; metrics_url "" when no exporter runs.
void print_startup(const Options& o, const PortPlan& plan, rte_mempool* pool, const std::string& metrics_url);
void print_summary(const StatsView& view, Mode mode, double seconds);

} // namespace flowcop::app
