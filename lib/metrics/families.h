// SPDX-License-Identifier: BSD-3-Clause
// Building Prometheus metric families at scrape time from plain counters.
//
// flowcop's data plane never touches a prometheus-cpp object: it bumps plain
// per-lcore fields, and a custom Collectable turns them into MetricFamily
// values only when a scraper asks. These helpers make that conversion short
// and uniform: one Family per metric name, one sample per label set, counters
// and gauges as doubles, histograms converted from per-bucket counts to
// Prometheus' cumulative buckets with bounds scaled to base units (seconds).
// Pure functions on value types: no global registry, no locks, no EAL.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace flowcop::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Family {
public:
    Family(std::string name, std::string help, prometheus::MetricType type);
    Family& counter(const Labels& labels, double value);
    Family& gauge(const Labels& labels, double value);
    // counts[i] = samples in bucket i (not cumulative), i in [0, bounds.size()]; the last is +Inf.
    // Bounds and sum are multiplied by `scale` (e.g. 1e-9 for nanoseconds to seconds).
    Family& histogram(const Labels& labels, const std::vector<uint64_t>& bounds, const std::vector<uint64_t>& counts,
                      uint64_t sum, double scale);
    prometheus::MetricFamily take() { return std::move(family_); }

private:
    prometheus::ClientMetric& add(const Labels& labels);
    prometheus::MetricFamily family_;
};

} // namespace flowcop::metrics
