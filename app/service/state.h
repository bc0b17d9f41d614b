// SPDX-License-Identifier: BSD-3-Clause
// --state-file (issue 32): restoring every lcore's flows at start and saving them at stop and at each
// checkpoint. The file's format is lib/statefile's; a flow's image and its conversion are
// lib/conntrack's (flow_image.h). This file decides what goes where: which lcore owns a restored flow
// under the new plan, which old keys the new options can no longer produce, how the table's clock
// relates to the file's time base, and what is logged and counted.
//
// Time. Under --clock tsc the tables run on TscClock: Unix ns taken from one CLOCK_REALTIME reading at
// start and advanced by the TSC since (clock.h), so over a long run they drift from the wall clock by
// the TSC's error. The file stores wall-clock ns: a save measures (realtime now - table clock now) and
// adds it to every time; a restore subtracts the same difference measured on the new clock, so a flow's
// idle time across the downtime is the wall clock's. Under --clock packet the tables run on a replay's
// packet time, which the file stores as it is (time base "packet"), and a restore places the tables'
// clocks at the time the file was saved at (the replay's time when it stopped).
//
// Threading: restore() on the main thread before any worker runs (the tables are quiescent); save()
// on any one control thread at a time, over tables that are running (export_slice's bounded slices
// under one shard lock at a time, as the listing reads them) or stopped.
#pragma once

#include <service/control/state_stats.h>
#include <service/options/options.h>

#include <conntrack/flow_table.h>
#include <statefile/statefile.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flowcop::app {

// The tables' clock now, and the file time base it maps to.
struct StateClock {
    statefile::TimeBase base = statefile::TimeBase::wall;
    uint64_t table_now_ns = 0;    // the tables' clock (TscClock, or the replay's time)
    int64_t file_minus_table = 0; // file ns = table ns + this
};
// Under --clock tsc: realtime minus the TSC clock's now, measured now. Under packet: offset 0.
StateClock state_clock(ClockSource clock, uint64_t table_now_ns);

struct RestoreReport {
    std::string line; // the one summary line (empty without --state-file)
    uint64_t restored = 0;
    bool read = false; // the file was read whole (consume_state_file() applies)
};

// A file is restored once: once the data plane runs, the file just restored is renamed PATH.restored, so a
// crash before the next save cannot bring back flows that have ended since (their end would be reported
// twice, as events and IPFIX records); the next save (or checkpoint) writes PATH anew. False, logged, if
// the rename failed.
bool consume_state_file(const std::string& path);

// Restores opt.state_file into `tables` (index = worker). owner(key) says which worker owns a key under
// the running plan. Counts into `stats`; never fails the start: a bad file or flow is logged and counted.
// on_restored(worker, id, image, base), when given, is called for each flow restored, with its id in its
// new table (the IPFIX exporter takes the flow's reported totals from it).
using OnRestored =
    std::function<void(unsigned worker, uint64_t flow_id, const conntrack::FlowImage&, const conntrack::TimeBase&)>;
RestoreReport restore_state(const Options& opt, ClockSource clock, uint64_t tsc_now_ns,
                            const std::vector<conntrack::FlowTable*>& tables,
                            const std::function<unsigned(const packet::FlowKey&)>& owner, StateStats& stats,
                            const OnRestored& on_restored = {});

// Saves every flow of `tables` to opt.state_file, atomically. False (logged, counted) on failure; the
// previous file is then intact.
// annotate(worker, base, image), when given, completes each image before it is written (the IPFIX
// exporter's reported totals, at stop).
using Annotate = std::function<void(unsigned worker, const conntrack::TimeBase&, conntrack::FlowImage&)>;
bool save_state(const Options& opt, const StateClock& clock, const std::vector<const conntrack::FlowTable*>& tables,
                StateStats& stats, std::string& line, const Annotate& annotate = {});

} // namespace flowcop::app
