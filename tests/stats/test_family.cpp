// SPDX-License-Identifier: BSD-3-Clause
// lib/stats: descriptor rows over sources, without any flowcop counter: the iteration order every
// reader relies on, sums, keys, and the checks that keep a row table sound.
#include <stats/family.h>
#include <stats/relaxed.h>

#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

using namespace flowcop::stats;

namespace {

struct Src {
    uint64_t hits = 0;
    std::array<std::array<uint64_t, 3>, 2> by_proto_reason{}; // [proto][reason]
    Histogram lag{10, 100};
};

const char* proto_name(unsigned i) noexcept
{
    static const char* const kNames[] = {"tcp", "udp"};
    return kNames[i];
}

const char* reason_name(unsigned i) noexcept
{
    static const char* const kNames[] = {"a", "b", "c"};
    return kNames[i];
}

constexpr Label kProto{"proto", 2, proto_name};
constexpr Label kReason{"reason", 3, reason_name};

const Family<Src> kRows[] = {
    {.prometheus = "flowcop_hits_total",
     .telemetry = "hits",
     .help = "Hits, unlabelled",
     .read = [](const Src& s, Index) noexcept { return load_relaxed(s.hits); },
     .per_source = true},
    {.prometheus = "flowcop_ends_total",
     .telemetry = "ends",
     .help = "Ends by protocol and reason",
     .labels = {kProto, kReason},
     .read = [](const Src& s, Index i) noexcept { return load_relaxed(s.by_proto_reason[i[0]][i[1]]); }},
    {.prometheus = "flowcop_lag_seconds",
     .telemetry = "lag",
     .help = "Lag in nanoseconds, served in seconds",
     .kind = Kind::histogram,
     .histogram = [](const Src& s) noexcept -> const Histogram& { return s.lag; }},
};

} // namespace

// The exporter emits samples in this order and tests compare scrapes: it must be stable.
TEST_CASE("Label combinations are visited first label outermost, last fastest", "[stats][family]")
{
    std::vector<std::string> seen;
    for_each_index(kRows[1], [&](const Index& i) { seen.push_back(telemetry_key(kRows[1], i)); });
    CHECK(seen ==
          std::vector<std::string>{"ends_tcp_a", "ends_tcp_b", "ends_tcp_c", "ends_udp_a", "ends_udp_b", "ends_udp_c"});
    seen.clear();
    for_each_index(kRows[0], [&](const Index& i) { seen.push_back(telemetry_key(kRows[0], i)); });
    CHECK(seen == std::vector<std::string>{"hits"});
}

// A labelled counter is one row: per-protocol, per-reason counts sum per combination and in total.
TEST_CASE("sum() adds one combination over every source, total() every combination", "[stats][family]")
{
    Src s[2];
    s[0].hits = 3;
    s[1].hits = 4;
    s[0].by_proto_reason[1][2] = 5;
    s[1].by_proto_reason[1][2] = 6;
    s[1].by_proto_reason[0][0] = 1;
    const std::span<const Src> all(s);
    CHECK(sum(kRows[0], all) == 7);
    CHECK(sum(kRows[1], all, Index{1, 2}) == 11);
    CHECK(sum(kRows[1], all, Index{0, 0}) == 1);
    CHECK(total(kRows[1], all) == 12);
    CHECK(label_count(kRows[0]) == 0);
    CHECK(label_count(kRows[1]) == 2);
}

TEST_CASE("find() looks a row up by its telemetry key", "[stats][family]")
{
    const std::span<const Family<Src>> rows(kRows);
    CHECK(find(rows, "ends") == &kRows[1]);
    CHECK(find(rows, "end") == nullptr);
    CHECK(find(rows, "flowcop_ends_total") == nullptr);
}

TEST_CASE("A sound table has no problems", "[stats][family]")
{
    CHECK(problems(std::span<const Family<Src>>(kRows)) == "");
}

// Each rule the row check enforces, broken once: the check must see it.
TEST_CASE("problems() names each broken row and what is wrong with it", "[stats][family]")
{
    auto read = [](const Src&, Index) noexcept -> uint64_t { return 0; };
    const Family<Src> bad[] = {
        {.prometheus = "flowcop_no_help_total", .telemetry = "x1", .help = nullptr, .read = read},
        {.prometheus = "flowcop_short_total", .telemetry = "x2", .help = "short", .read = read},
        {.prometheus = "other_thing_total", .telemetry = "x3", .help = "not ours by name", .read = read},
        {.prometheus = "flowcop_counter", .telemetry = "x4", .help = "a counter without _total", .read = read},
        {.prometheus = "flowcop_gauge_total", .help = "a gauge with _total", .kind = Kind::gauge, .read = read},
        {.prometheus = "flowcop_unread_total", .help = "no read function"},
        {.prometheus = "flowcop_h_bytes",
         .help = "histogram not in seconds",
         .kind = Kind::histogram,
         .histogram = [](const Src& s) noexcept -> const Histogram& { return s.lag; }},
        {.help = "no name at all", .read = read},
        {.prometheus = "flowcop_dup_total", .telemetry = "x1", .help = "key used twice", .read = read},
        {.prometheus = "flowcop_dup_total", .help = "name used twice", .read = read},
        {.prometheus = "flowcop_empty_label_total",
         .help = "a label without values",
         .labels = {Label{"reason", 0, nullptr}},
         .read = read},
        {.prometheus = "flowcop_labelled_total",
         .help = "per source but labelled",
         .labels = {kProto},
         .read = read,
         .per_source = true},
    };
    const std::string p = problems(std::span<const Family<Src>>(bad));
    for (const char* want :
         {"flowcop_no_help_total: no help text", "flowcop_short_total: no help text",
          "other_thing_total: Prometheus name does not start with flowcop_",
          "flowcop_counter: a counter's name must end in _total", "flowcop_gauge_total: only counters end in _total",
          "flowcop_unread_total: no function to read it", "flowcop_h_bytes: histograms observe nanoseconds",
          "(unnamed row): neither a Prometheus name nor a telemetry key", "flowcop_dup_total: telemetry key used twice",
          "flowcop_dup_total: Prometheus name used twice", "flowcop_empty_label_total: label reason has no values",
          "flowcop_labelled_total: only an unlabelled counter or gauge is listed per source"}) {
        INFO(want);
        CHECK(p.find(want) != std::string::npos);
    }
}
