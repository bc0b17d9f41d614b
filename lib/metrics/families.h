// SPDX-License-Identifier: BSD-3-Clause
// Building Prometheus metric families at scrape time from plain counters.
//
// flowcop's data plane never touches a prometheus-cpp object: it bumps plain
// per-lcore fields, and a custom Collectable turns them into MetricFamily
// values only when a scraper asks. These helpers make that conversion short
// and uniform: one Family per metric name, one sample per label set, counters
// and gauges as doubles, histograms converted from per-bucket counts to
// Prometheus' cumulative buckets with bounds scaled to base units (seconds).
// Pure functions on value types: no global registry, no locks, no EAL; a
// Family is used by one thread (the scraping one) and then moved out by take().
//
// Names are emitted exactly as given: prometheus-cpp 1.0's TextSerializer
// appends nothing (no "_total" on counters; checked by tests/metrics/test_families.cpp), so a
// counter's name must already end in "_total" and a histogram's in its unit.
//
// What prometheus-cpp 1.0 does not guard, this does, so one odd value can never
// make the whole scrape unparsable (Prometheus drops a scrape that fails to parse):
//   - HELP text: the serializer writes it raw, so a newline would end the line
//     mid-sentence; help is stored with '\' escaped as "\\" and a newline as
//     "\n", as the exposition format requires.
//   - label values: the serializer escapes '"', '\' and newlines, but Prometheus
//     also rejects label values that are not UTF-8 (an --events path may be any
//     bytes), so invalid UTF-8 sequences are replaced by U+FFFD.
// Label names are the caller's constants and must match [a-zA-Z_][a-zA-Z0-9_]*.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <string>
#include <string_view>
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
    // A missing +Inf count is taken as 0; counts beyond it are ignored. Bounds and sum are
    // divided by `per_unit` (1e9 for nanoseconds to seconds): a division of exact integers
    // gives the double nearest the decimal bound, so le="60" rather than the
    // le="60.00000000000001" a multiplication by 1e-9 produces. _count is the sum of the
    // buckets (not a separate total), so _count always equals the +Inf bucket.
    Family& histogram(const Labels& labels, const std::vector<uint64_t>& bounds, const std::vector<uint64_t>& counts,
                      uint64_t sum, uint64_t per_unit);
    prometheus::MetricFamily take() { return std::move(_family); }

private:
    prometheus::ClientMetric& add(const Labels& labels);
    prometheus::MetricFamily _family;
};

// The help text as the exposition format wants it on a HELP line (see above).
std::string escape_help(std::string_view help);
// `value` with every invalid UTF-8 sequence replaced by U+FFFD (valid input is returned as is).
std::string valid_utf8(std::string_view value);

} // namespace flowcop::metrics
