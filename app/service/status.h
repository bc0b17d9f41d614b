// SPDX-License-Identifier: BSD-3-Clause
// What a person at the terminal sees: the startup lines, a one-line live status
// refreshed every second (only when stderr is a TTY and not --quiet), and the
// summary at exit. All of it goes to stderr, so `--events -` keeps stdout pure
// JSON lines. Reads counters with relaxed loads; never touches the data plane.
#pragma once

#include <chrono>
#include <cstdint>

namespace flowcop::app {

class Service;

struct Totals {
    uint64_t rx_packets = 0, tx_packets = 0, tx_dropped = 0, no_timestamp = 0;
    uint64_t flows_active = 0, flows_created = 0, flows_expired = 0;
    uint64_t cop_passes = 0, cop_visited = 0, cop_fired = 0, cop_budget_exhausted = 0, cop_lock_failures = 0;
};
Totals totals(const Service& s);

class StatusLine {
public:
    StatusLine(const Service& s, bool enabled);
    void tick();   // call often; prints at most once a second
    void finish(); // ends the line so the summary starts on its own
private:
    const Service& _s;
    bool _enabled;
    bool _printed = false;
    Totals _last;
    std::chrono::steady_clock::time_point _last_at;
};

void print_startup(const Service& s);
void print_summary(const Service& s, double seconds);

} // namespace flowcop::app
