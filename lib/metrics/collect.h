// SPDX-License-Identifier: BSD-3-Clause
// Descriptor rows (stats/family.h) into Prometheus metric families, at scrape time.
//
// collect() appends one MetricFamily per row that has a Prometheus name, in row order, with one
// sample per source (in source order) and per combination of label values (first label
// outermost): the source's own labels first (labels_of(source), e.g. lcore), then the row's.
// Counters and gauges are read with the row's read(); histograms become cumulative buckets with
// nanosecond bounds and sum served in seconds (Family::histogram in families.h).
// Same threading and cost as every reader (stats/family.h): relaxed loads, no lock.
#pragma once

#include <metrics/families.h>
#include <stats/family.h>

#include <prometheus/metric_family.h>

#include <span>
#include <vector>

namespace flowcop::metrics {

inline constexpr uint64_t kNsPerSecond = 1'000'000'000;

inline prometheus::MetricType prometheus_type(stats::Kind k) noexcept
{
    switch (k) {
    case stats::Kind::counter: return prometheus::MetricType::Counter;
    case stats::Kind::gauge: return prometheus::MetricType::Gauge;
    case stats::Kind::histogram: return prometheus::MetricType::Histogram;
    }
    return prometheus::MetricType::Untyped;
}

// labels_of(const Source&) -> Labels: the source's own labels.
template <typename Source, typename LabelsOf>
void collect(std::span<const stats::Family<Source>> families, std::span<const Source> sources, LabelsOf&& labels_of,
             std::vector<prometheus::MetricFamily>& out)
{
    for (const stats::Family<Source>& f : families) {
        if (f.prometheus == nullptr)
            continue;
        Family family(f.prometheus, f.help, prometheus_type(f.kind));
        for (const Source& s : sources) {
            const Labels base = labels_of(s);
            if (f.kind == stats::Kind::histogram) {
                const stats::Histogram& h = f.histogram(s);
                std::vector<uint64_t> bounds, counts;
                for (unsigned i = 0; i < h.bounds(); ++i)
                    bounds.push_back(h.bound(i));
                for (unsigned i = 0; i <= h.bounds(); ++i)
                    counts.push_back(h.count_in(i));
                family.histogram(base, bounds, counts, h.sum(), kNsPerSecond);
                continue;
            }
            stats::for_each_index(f, [&](const stats::Index& idx) {
                Labels l = base;
                for (unsigned k = 0; k < stats::label_count(f); ++k)
                    l.emplace_back(f.labels[k].name, f.labels[k].value(idx[k]));
                const double v = double(f.read(s, idx));
                if (f.kind == stats::Kind::counter)
                    family.counter(l, v);
                else
                    family.gauge(l, v);
            });
        }
        out.push_back(family.take());
    }
}

} // namespace flowcop::metrics
