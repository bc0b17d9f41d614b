// SPDX-License-Identifier: BSD-3-Clause
// metrics::Family through prometheus-cpp's real TextSerializer: what a scraper reads.
#include <metrics/families.h>

#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using flowcop::metrics::escape_help;
using flowcop::metrics::Family;
using flowcop::metrics::valid_utf8;
using prometheus::MetricType;

namespace {

std::string text_of(std::vector<prometheus::MetricFamily> families)
{
    return prometheus::TextSerializer().Serialize(families);
}

} // namespace

// The exposed names must be exactly the documented ones: if prometheus-cpp appended
// _total itself (as some client libraries do), every counter would read _total_total.
TEST_CASE("Counter names are serialised exactly as given, without an added _total", "[metrics][families]")
{
    Family f("flowcop_inactivity_cop_visited_total", "Flows visited", MetricType::Counter);
    f.counter({{"lcore", "3"}}, 42);
    const std::string t = text_of({f.take()});
    CHECK(t == "# HELP flowcop_inactivity_cop_visited_total Flows visited\n"
               "# TYPE flowcop_inactivity_cop_visited_total counter\n"
               "flowcop_inactivity_cop_visited_total{lcore=\"3\"} 42\n");
}

// One sample per label set, in call order, with every label kept.
TEST_CASE("Each call adds one sample with its labels", "[metrics][families]")
{
    Family f("flowcop_flows_expired_total", "Ended", MetricType::Counter);
    f.counter({{"lcore", "0"}, {"reason", "reset"}}, 5).counter({{"lcore", "0"}, {"reason", "killed"}}, 0);
    const prometheus::MetricFamily m = f.take();
    REQUIRE(m.metric.size() == 2);
    CHECK(m.metric[0].label.size() == 2);
    CHECK(m.metric[0].label[1].value == "reset");
    CHECK(m.metric[0].counter.value == 5);
    CHECK(m.metric[1].label[1].value == "killed");
    CHECK(m.type == MetricType::Counter);
}

TEST_CASE("Gauges without labels serialise as a bare sample", "[metrics][families]")
{
    Family f("flowcop_up", "1 while running", MetricType::Gauge);
    f.gauge({}, 1);
    CHECK(text_of({f.take()}) == "# HELP flowcop_up 1 while running\n# TYPE flowcop_up gauge\nflowcop_up 1\n");
}

// Per-bucket counts become Prometheus' cumulative buckets; ns bounds become seconds.
TEST_CASE("A histogram is cumulative, ends in +Inf and is scaled to seconds", "[metrics][families]")
{
    Family f("flowcop_timeout_lag_seconds", "Lag", MetricType::Histogram);
    f.histogram({{"lcore", "0"}}, {1'000'000, 60'000'000'000}, {2, 3, 4}, 7'500'000'000, 1'000'000'000);
    const prometheus::MetricFamily m = f.take();
    const auto& h = m.metric.at(0).histogram;
    REQUIRE(h.bucket.size() == 3);
    CHECK(h.bucket[0].upper_bound == 0.001);
    CHECK(h.bucket[0].cumulative_count == 2);
    CHECK(h.bucket[1].upper_bound == 60.0); // exactly: le="60", not "60.00000000000001"
    CHECK(h.bucket[1].cumulative_count == 5);
    CHECK(h.bucket[2].upper_bound == std::numeric_limits<double>::infinity());
    CHECK(h.bucket[2].cumulative_count == 9);
    CHECK(h.sample_count == 9);
    CHECK(h.sample_sum == 7.5);
    const std::string t = text_of({m});
    CHECK(t.find("flowcop_timeout_lag_seconds_bucket{lcore=\"0\",le=\"60\"} 5\n") != std::string::npos);
    CHECK(t.find("flowcop_timeout_lag_seconds_bucket{lcore=\"0\",le=\"+Inf\"} 9\n") != std::string::npos);
    CHECK(t.find("flowcop_timeout_lag_seconds_count{lcore=\"0\"} 9\n") != std::string::npos);
}

// A caller that passes fewer counts than bounds (no +Inf count) still gets every bucket.
TEST_CASE("Missing bucket counts are zero and every bound is still emitted", "[metrics][families]")
{
    Family f("x_seconds", "x", MetricType::Histogram);
    f.histogram({}, {1'000, 2'000, 3'000}, {1}, 0, 1'000);
    const prometheus::MetricFamily family = f.take(); // a reference into the temporary would dangle
    const auto& h = family.metric.at(0).histogram;
    REQUIRE(h.bucket.size() == 4);
    CHECK(h.bucket[2].cumulative_count == 1);
    CHECK(h.bucket[3].cumulative_count == 1);
    CHECK(h.sample_count == 1);
}

// prometheus-cpp 1.0 writes HELP raw: an unescaped newline would break the line.
TEST_CASE("Help text is escaped the way the exposition format requires", "[metrics][families]")
{
    CHECK(escape_help("a\\b\nc") == "a\\\\b\\nc");
    Family f("y_total", "two\nlines \\ here", MetricType::Counter);
    f.counter({}, 1);
    CHECK(text_of({f.take()}) == "# HELP y_total two\\nlines \\\\ here\n# TYPE y_total counter\ny_total 1\n");
}

// Prometheus rejects a scrape with a non-UTF-8 label value; quotes and backslashes are the
// serializer's job and must survive exactly once.
TEST_CASE("Label values are made valid UTF-8 and escaped once", "[metrics][families]")
{
    CHECK(valid_utf8("plain") == "plain");
    CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    CHECK(valid_utf8("a\xff"
                     "b") == "a\xef\xbf\xbd"
                             "b");
    CHECK(valid_utf8("\xc3") == "\xef\xbf\xbd");                                 // truncated sequence
    CHECK(valid_utf8("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");                 // overlong '/'
    CHECK(valid_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); // UTF-16 surrogate
    CHECK(valid_utf8("\xf4\x90\x80\x80").find("\xef\xbf\xbd") == 0);             // above U+10FFFF
    Family f("z_info", "z", MetricType::Gauge);
    f.gauge({{"events", "/tmp/a \"b\" \\ \xff"}}, 1);
    CHECK(text_of({f.take()}).find("z_info{events=\"/tmp/a \\\"b\\\" \\\\ \xef\xbf\xbd\"} 1\n") != std::string::npos);
}
