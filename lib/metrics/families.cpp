// SPDX-License-Identifier: BSD-3-Clause
#include <metrics/families.h>

#include <limits>

namespace flowcop::metrics {

Family::Family(std::string name, std::string help, prometheus::MetricType type)
{
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
}

prometheus::ClientMetric& Family::add(const Labels& labels)
{
    prometheus::ClientMetric m;
    for (const auto& [k, v] : labels)
        m.label.push_back({k, v});
    family_.metric.push_back(std::move(m));
    return family_.metric.back();
}

Family& Family::counter(const Labels& labels, double value)
{
    add(labels).counter.value = value;
    return *this;
}

Family& Family::gauge(const Labels& labels, double value)
{
    add(labels).gauge.value = value;
    return *this;
}

Family& Family::histogram(const Labels& labels, const std::vector<uint64_t>& bounds,
                          const std::vector<uint64_t>& counts, uint64_t sum, double scale)
{
    prometheus::ClientMetric& m = add(labels);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds.size() && i < counts.size(); ++i) {
        cumulative += counts[i];
        m.histogram.bucket.push_back({cumulative, double(bounds[i]) * scale});
    }
    if (counts.size() > bounds.size())
        cumulative += counts[bounds.size()];
    m.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = double(sum) * scale;
    return *this;
}

} // namespace flowcop::metrics
