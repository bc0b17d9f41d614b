// SPDX-License-Identifier: BSD-3-Clause
#include <metrics/families.h>

#include <limits>

namespace flowcop::metrics {

std::string escape_help(std::string_view help)
{
    std::string out;
    out.reserve(help.size());
    for (const char c : help) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence(std::string_view s, size_t i)
{
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi)
        return 0;
    for (size_t k = 2; k < n; ++k)
        if (b(i + k) < 0x80 || b(i + k) > 0xbf)
            return 0;
    return n;
}

} // namespace

std::string valid_utf8(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (size_t i = 0; i < value.size();) {
        const size_t n = utf8_sequence(value, i);
        if (n == 0) {
            out += "\xef\xbf\xbd"; // U+FFFD REPLACEMENT CHARACTER
            ++i;
        } else {
            out.append(value.substr(i, n));
            i += n;
        }
    }
    return out;
}

Family::Family(std::string name, std::string help, prometheus::MetricType type)
{
    _family.name = std::move(name);
    _family.help = escape_help(help);
    _family.type = type;
}

prometheus::ClientMetric& Family::add(const Labels& labels)
{
    prometheus::ClientMetric m;
    for (const auto& [k, v] : labels)
        m.label.push_back({k, valid_utf8(v)});
    _family.metric.push_back(std::move(m));
    return _family.metric.back();
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
                          const std::vector<uint64_t>& counts, uint64_t sum, uint64_t per_unit)
{
    prometheus::ClientMetric& m = add(labels);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds.size(); ++i) {
        if (i < counts.size())
            cumulative += counts[i];
        m.histogram.bucket.push_back({cumulative, double(bounds[i]) / double(per_unit)});
    }
    if (counts.size() > bounds.size())
        cumulative += counts[bounds.size()];
    m.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = double(sum) / double(per_unit);
    return *this;
}

} // namespace flowcop::metrics
