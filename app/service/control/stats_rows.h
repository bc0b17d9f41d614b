// SPDX-License-Identifier: BSD-3-Clause
// flowcop's counter families: the one table of descriptor rows every reader iterates.
//
// lcore_families() are read over StatsView::lcores (one sample per worker lcore, labelled
// lcore="N"), port_families() over StatsView::port_samples() (port="N",name="<device>"). The
// exporter serves every row with a Prometheus name, in row order; /flowcop/stats every row with a
// telemetry key; the status line and the exit summary sum rows they look up by key. Adding a
// counter is adding a row here (see lib/stats/stats.md) and its line in app/operations.md;
// tests/app/control/test_stats_rows.cpp fails when either is missing.
#pragma once

#include "stats_view.h"

#include <metrics/families.h>
#include <stats/family.h>

#include <span>

namespace flowcop::app {

std::span<const stats::Family<LcoreView>> lcore_families();
std::span<const stats::Family<PortSample>> port_families();
// Read over StatsView::collectors (collector="HOST:PORT"); Prometheus only.
std::span<const stats::Family<CollectorView>> collector_families();
// Read over StatsView::ctl, one source without labels: the control socket's counters (ctl_stats.h),
// in /metrics and the last line of the socket's `stats` verb.
std::span<const stats::Family<CtlView>> ctl_families();
metrics::Labels ctl_labels(const CtlView& v);
// Read over StatsView::state, one source without labels: the state file's restore and saves
// (state_stats.h), in /metrics.
std::span<const stats::Family<StateView>> state_families();
metrics::Labels state_labels(const StateView& v);

metrics::Labels lcore_labels(const LcoreView& v);
metrics::Labels port_labels(const PortSample& p);
metrics::Labels collector_labels(const CollectorView& c);

// The total of lcore row `key` (a telemetry key) over every lcore and label value.
// A key no row has is a programming error: it reads 0 (status_keys() lists those the readers use,
// and the unit test checks that each one has a row).
uint64_t lcore_total(const StatsView& v, const char* key, stats::Index idx = {}, bool all_labels = true);

} // namespace flowcop::app
