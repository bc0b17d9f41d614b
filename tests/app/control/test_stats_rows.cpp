// SPDX-License-Identifier: BSD-3-Clause
// flowcop's stats rows (app/service/control/stats_rows.cpp) are sound and documented: a row without help
// text, with a wrong suffix, or without its line in app/operations.md fails here, so adding a
// counter is one row plus one docs line.
#include <service/control/stats_rows.h>
#include <service/control/status.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace flowcop;
using namespace flowcop::app;

namespace {

std::string operations_md()
{
    const char* path = std::getenv("FLOWCOP_OPERATIONS_MD");
    REQUIRE(path != nullptr);
    std::ifstream in(path);
    REQUIRE(in.good());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `name` appears in backquotes, whole: followed by the closing quote, a label list or "_<label>".
bool names(const std::string& line, const std::string& name)
{
    for (size_t at = line.find("`" + name); at != std::string::npos; at = line.find("`" + name, at + 1)) {
        const size_t end = at + 1 + name.size();
        if (end < line.size() && (line[end] == '`' || line[end] == '{' || line.compare(end, 2, "_<") == 0))
            return true;
    }
    return false;
}

// The rows that have no table line in `doc` naming both their Prometheus name and telemetry key.
template <typename Source>
std::vector<std::string> undocumented(std::span<const stats::Family<Source>> rows, const std::string& doc)
{
    std::vector<std::string> missing;
    for (const auto& f : rows) {
        bool found = false;
        std::istringstream lines(doc);
        for (std::string line; !found && std::getline(lines, line);)
            found = line.starts_with("|") && (f.prometheus == nullptr || names(line, f.prometheus)) &&
                    (f.telemetry == nullptr || names(line, f.telemetry));
        if (!found)
            missing.push_back(f.prometheus ? f.prometheus : f.telemetry);
    }
    return missing;
}

} // namespace

TEST_CASE("Every stats row has help text, a fitting name and a read function", "[app][stats]")
{
    CHECK(stats::problems(lcore_families()) == "");
    CHECK(stats::problems(port_families()) == "");
    CHECK(stats::problems(collector_families()) == "");
    CHECK(stats::problems(ctl_families()) == "");
    CHECK(stats::problems(state_families()) == "");
}

// The docs check itself must be able to fail: a row whose names appear nowhere is reported.
TEST_CASE("A row missing from a document is reported, a documented one is not", "[app][stats]")
{
    static const stats::Family<LcoreView> rows[] = {
        {.prometheus = "flowcop_a_total", .telemetry = "a", .help = "documented", .read = nullptr},
        {.prometheus = "flowcop_b_total", .telemetry = "b", .help = "not documented", .read = nullptr},
        {.telemetry = "c", .help = "telemetry only", .read = nullptr},
    };
    const std::string doc = "| `flowcop_a_total{lcore}` | `a_<reason>` | counter | x |\n"
                            "| `flowcop_b_total` | `bb` | counter | the key differs |\n"
                            "| — | `c` | counter | y |\n";
    CHECK(undocumented(std::span<const stats::Family<LcoreView>>(rows), doc) ==
          std::vector<std::string>{"flowcop_b_total"});
}

TEST_CASE("Every stats row has its line in app/operations.md", "[app][stats]")
{
    const std::string doc = operations_md();
    CHECK(undocumented(lcore_families(), doc) == std::vector<std::string>{});
    CHECK(undocumented(port_families(), doc) == std::vector<std::string>{});
    CHECK(undocumented(collector_families(), doc) == std::vector<std::string>{});
    CHECK(undocumented(ctl_families(), doc) == std::vector<std::string>{});
    CHECK(undocumented(state_families(), doc) == std::vector<std::string>{});
}

TEST_CASE("Every row the status line and the summary read exists", "[app][stats]")
{
    for (const char* key : status_keys()) {
        INFO(key);
        CHECK(stats::find(lcore_families(), key) != nullptr);
    }
}
