// SPDX-License-Identifier: BSD-3-Clause
// The counter model: one descriptor row per counter family, read over a table of sources.
//
// A Family<Source> row says everything every reader needs about one family: its Prometheus name,
// its /flowcop/stats key, its help text, its type, its labels and how to read one value from one
// Source (a per-lcore view, a port). The exporter, telemetry, the status line and the exit summary
// iterate the same rows over the same sources, so a counter is declared once: adding one is adding a
// row (and its line in app/operations.md; tests/stats checks both). In the spirit of grout's
// gr_metrics.h (a static {name, help, type} per metric), with the read function and the labels in
// the row so no reader restates them.
//
// Labels. A Source carries its own labels (lcore="N"; port="N",name="..."), added by the reader.
// Beyond those a family has up to kMaxLabels labels, each a fixed list of values known at compile
// time (reason, result, verdict, proto). The family has one sample per source and combination of
// label values, first label outermost; read() receives the combination as an Index. A label with
// count 1 is a constant label (reason="table_full").
//
// Names. A row may leave `prometheus` or `telemetry` null when the family is served by only one
// of them (the status line's rx_packets is not a Prometheus family). The telemetry key of a
// labelled sample is the key, '_' and each label value in order (flows_expired_reset).
//
// Histograms observe nanoseconds (stats/histogram.h); /metrics shows them in seconds, telemetry as
// <key>_count and <key>_sum_ns.
//
// Threading and cost. Rows are immutable constants. read() runs on a reader thread (exporter,
// telemetry, housekeeping) and must only load single-writer fields with stats::load_relaxed (or
// call a function that does): it takes no lock and writes nothing, so reading costs the data plane
// nothing. Values read in one pass are not one snapshot (see app/operations.md).
#pragma once

#include <stats/histogram.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace flowcop::stats {

enum class Kind : uint8_t { counter, gauge, histogram };

inline constexpr unsigned kMaxLabels = 2;

// One label of a family beyond its source's own: a Prometheus label name and its values by index.
struct Label {
    const char* name = nullptr;                          // nullptr: the slot is unused (and so are the slots after it)
    unsigned count = 1;                                  // how many values
    const char* (*value)(unsigned i) noexcept = nullptr; // the i-th value, i < count
};

// One value of every label of a family, by position in Family::labels.
using Index = std::array<unsigned, kMaxLabels>;

template <typename Source>
struct Family {
    const char* prometheus = nullptr; // exact /metrics name ("flowcop_..._total"), or nullptr
    const char* telemetry = nullptr;  // /flowcop/stats key, or nullptr
    const char* help = nullptr;       // one sentence: the Prometheus HELP text
    Kind kind = Kind::counter;
    std::array<Label, kMaxLabels> labels{};
    uint64_t (*read)(const Source&, Index) noexcept = nullptr;       // counter, gauge
    const Histogram& (*histogram)(const Source&) noexcept = nullptr; // histogram
    // Telemetry also lists an unlabelled counter or gauge per source (stats/telemetry.h's
    // add_arrays): for the few a per-lcore or per-port breakdown is worth a reply's room.
    bool per_source = false;
};

// The number of labels a family uses (its leading non-null slots).
template <typename Source>
constexpr unsigned label_count(const Family<Source>& f) noexcept
{
    unsigned n = 0;
    while (n < kMaxLabels && f.labels[n].name != nullptr)
        ++n;
    return n;
}

// Calls fn(Index) once per combination of label values, first label outermost, last fastest.
template <typename Source, typename Fn>
void for_each_index(const Family<Source>& f, Fn&& fn)
{
    const unsigned n = label_count(f);
    Index idx{};
    while (true) {
        fn(const_cast<const Index&>(idx));
        int k = int(n) - 1;
        while (k >= 0 && ++idx[size_t(k)] == f.labels[size_t(k)].count) {
            idx[size_t(k)] = 0;
            --k;
        }
        if (k < 0)
            return;
    }
}

// The value of a counter or gauge for one label combination, summed over every source.
template <typename Source>
uint64_t sum(const Family<Source>& f, std::span<const Source> sources, Index idx = {}) noexcept
{
    uint64_t t = 0;
    for (const Source& s : sources)
        t += f.read(s, idx);
    return t;
}

// A counter or gauge summed over every source and every label combination.
template <typename Source>
uint64_t total(const Family<Source>& f, std::span<const Source> sources) noexcept
{
    uint64_t t = 0;
    for_each_index(f, [&](const Index& idx) { t += sum(f, sources, idx); });
    return t;
}

// The telemetry key of one sample: the family's key, then "_<value>" per label.
template <typename Source>
std::string telemetry_key(const Family<Source>& f, const Index& idx)
{
    std::string key = f.telemetry;
    for (unsigned k = 0; k < label_count(f); ++k)
        (key += '_') += f.labels[k].value(idx[k]);
    return key;
}

// Calls fn(key, value) for every telemetry sample of the rows over `sources`, in row order: a
// counter or gauge's total when it has labels (flows_expired), then one sample per label
// combination (flows_expired_reset), each summed over the sources; a histogram's <key>_count and
// <key>_sum_ns. Rows without a telemetry key are skipped. /flowcop/stats and flowcopctl -S list these.
template <typename Source, typename Fn>
void for_each_telemetry_sample(std::span<const Family<Source>> families, std::span<const Source> sources, Fn&& fn)
{
    for (const Family<Source>& f : families) {
        if (f.telemetry == nullptr)
            continue;
        if (f.kind == Kind::histogram) {
            uint64_t count = 0, sum_ns = 0;
            for (const Source& s : sources) {
                count += f.histogram(s).total();
                sum_ns += f.histogram(s).sum();
            }
            fn(std::string(f.telemetry) + "_count", count);
            fn(std::string(f.telemetry) + "_sum_ns", sum_ns);
            continue;
        }
        if (label_count(f) > 0)
            fn(std::string(f.telemetry), total(f, sources));
        for_each_index(f, [&](const Index& idx) { fn(telemetry_key(f, idx), sum(f, sources, idx)); });
    }
}

// The row with this telemetry key, or nullptr.
template <typename Source>
const Family<Source>* find(std::span<const Family<Source>> families, std::string_view telemetry) noexcept
{
    for (const Family<Source>& f : families)
        if (f.telemetry != nullptr && telemetry == f.telemetry)
            return &f;
    return nullptr;
}

// What is wrong with a table of rows, one line per problem ("" when every row is sound): a row
// without help text or without any name, a Prometheus name that is not flowcop_* or whose suffix
// does not fit its type (_total for counters), a missing read or histogram function, a label
// without values, or a name or key used twice.
template <typename Source>
std::string problems(std::span<const Family<Source>> families)
{
    std::string out;
    auto fail = [&](const Family<Source>& f, const std::string& what) {
        out += f.prometheus ? f.prometheus : (f.telemetry ? f.telemetry : "(unnamed row)");
        out += ": " + what + "\n";
    };
    for (size_t i = 0; i < families.size(); ++i) {
        const Family<Source>& f = families[i];
        const std::string_view name = f.prometheus ? f.prometheus : "";
        if (f.prometheus == nullptr && f.telemetry == nullptr)
            fail(f, "neither a Prometheus name nor a telemetry key");
        if (f.help == nullptr || std::string_view(f.help).size() < 8)
            fail(f, "no help text");
        if (!name.empty() && !name.starts_with("flowcop_"))
            fail(f, "Prometheus name does not start with flowcop_");
        if (f.kind == Kind::counter && !name.empty() && !name.ends_with("_total"))
            fail(f, "a counter's name must end in _total");
        if (f.kind != Kind::counter && name.ends_with("_total"))
            fail(f, "only counters end in _total");
        if (f.kind == Kind::histogram && !name.empty() && !name.ends_with("_seconds"))
            fail(f, "histograms observe nanoseconds and are served in seconds: end the name in _seconds");
        if (f.kind == Kind::histogram ? f.histogram == nullptr : f.read == nullptr)
            fail(f, "no function to read it");
        if (f.kind == Kind::histogram && label_count(f) > 0)
            fail(f, "a histogram has no labels of its own");
        if (f.per_source && (f.kind == Kind::histogram || label_count(f) > 0))
            fail(f, "only an unlabelled counter or gauge is listed per source");
        for (unsigned k = 0; k < label_count(f); ++k)
            if (f.labels[k].count == 0 || f.labels[k].value == nullptr)
                fail(f, std::string("label ") + f.labels[k].name + " has no values");
        for (size_t j = 0; j < i; ++j) {
            const Family<Source>& g = families[j];
            if (f.prometheus && g.prometheus && name == g.prometheus)
                fail(f, "Prometheus name used twice");
            if (f.telemetry && g.telemetry && std::string_view(f.telemetry) == g.telemetry)
                fail(f, "telemetry key used twice");
        }
    }
    return out;
}

} // namespace flowcop::stats
