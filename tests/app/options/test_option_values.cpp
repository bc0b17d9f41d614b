// SPDX-License-Identifier: BSD-3-Clause
// Value rules: number syntax and ranges, the metrics address, and the "not set" spellings.
#include <service/options/options.h>

#include <algorithm>
#include <set>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::described;
using flowcop::app::test::parsed;
using flowcop::app::test::rejected;

namespace {
struct Range {
    std::string name;
    uint64_t min;
    uint64_t max;
    bool pow2;
    std::string word = {}; // a word accepted besides the numbers ("auto"), listed first in allowed
};

// The ranges the spec sets, written out independently of the parser's table.
std::vector<Range> numeric_options()
{
    std::vector<Range> r = {
        {"--wheel-buckets", 256, 16777216, true},
        {"--tick-ms", 1, 60000, false},
        {"--check-interval-ms", 1, 60000, false},
        {"--timeout-budget", 1, 10000000, false},
        {"--visit-budget-factor", 1, 1024, false},
        {"--flows-per-lcore", 1024, 134217728, false},
        {"--mbufs", 7168, 1073741823, false, "auto"},
        {"--mbuf-data-room", 192, 65535, false},
        {"--default-inactivity-timeout", 1, 31536000, false},
        {"--active-timeout", 0, 31536000, false},
        {"--ipfix-mtu", 576, 65535, false},
        {"--ipfix-template-refresh", 1, 86400, false},
        {"--ipfix-template-refresh-messages", 1, 1000000, false},
        {"--ipfix-max-rate", 0, 1000000, false},
        {"--ipfix-domain-base", 0, 4294966271, false},
        {"--ipfix-active-timeout", 0, 86400, false},
        {"--events-ring", 64, 4194304, true},
        {"--events-invalid-rate", 0, 1000000, false},
        {"--stop-when-idle-ms", 0, 86400000, false},
        {"--state-checkpoint-s", 0, 86400, false},
        {"--tcp-max-retrans", 1, 127, false},
        {"--tcp-timeout-max-retrans", 0, 31536000, false},
        {"--tcp-timeout-unacknowledged", 0, 31536000, false},
    };
    for (std::string state : kTcpStateFlagNames) {
        std::replace(state.begin(), state.end(), '_', '-'); // the flag's spelling: --tcp-timeout-time-wait
        r.push_back({"--tcp-timeout-" + state, 0, 31536000, false});
    }
    for (size_t i = 0; i < flowcop::protostate::kTimeoutCount; ++i)
        r.push_back({std::string("--") + flowcop::protostate::timeout_flag_name(flowcop::protostate::Timeout(i)), 1,
                     31536000, false});
    return r;
}

std::string key_of(std::string name)
{
    name.erase(0, 2);
    for (char& c : name)
        c = c == '-' ? '_' : c;
    return name;
}
} // namespace

// Both ends of every range are accepted and one past each end is rejected with the bound named;
// the help's "allowed" text shows the same bounds the parser enforces.
TEST_CASE("every numeric option accepts both ends of its range and rejects one past", "[app][options]")
{
    std::set<std::string> covered;
    for (const Range& r : numeric_options()) {
        INFO(r.name);
        covered.insert(r.name);
        for (const uint64_t v : {r.min, r.max})
            CHECK(described(parsed({r.name, std::to_string(v)}), key_of(r.name)) == std::to_string(v));
        const uint64_t below = r.pow2 ? r.min / 2 : r.min - 1;
        const uint64_t above = r.pow2 ? r.max * 2 : r.max + 1;
        if (r.min > 0)
            CHECK(rejected({r.name, std::to_string(below)}) ==
                  format_flag_error(r.name,
                                    "must be at least " + std::to_string(r.min) + ", got " + std::to_string(below)));
        CHECK(rejected({r.name, std::to_string(above)}) ==
              format_flag_error(r.name, "must be at most " + std::to_string(r.max) + ", got " + std::to_string(above)));
        const std::string range = std::to_string(r.min) + ".." + std::to_string(r.max);
        for (const OptionInfo& info : option_table()) {
            if (info.name != r.name)
                continue;
            if (!r.word.empty())
                CHECK(info.allowed.rfind(r.word + ", or " + range + " ", 0) == 0);
            else
                CHECK(info.allowed == (r.pow2 ? "a power of two in " + range : range));
        }
    }
    // Every option whose value is a number is in the list above.
    for (const OptionInfo& info : option_table())
        if (info.metavar == "N" || info.metavar == "MS" || info.metavar == "SECONDS" || info.metavar == "BYTES")
            CHECK(covered.count(info.name) == 1);
}

TEST_CASE("a power-of-two option rejects other numbers inside its range", "[app][options]")
{
    CHECK(rejected({"--wheel-buckets", "1000"}) ==
          "flowcop: --wheel-buckets: 1000 is not a power of two (256, 512, ..., 16777216)");
    CHECK(rejected({"--events-ring=100"}) ==
          "flowcop: --events-ring: 100 is not a power of two (64, 128, ..., 4194304)");
    CHECK(parsed({"--wheel-buckets=65536"}).wheel_buckets == 65536);
}

TEST_CASE("a zero timeout budget is rejected", "[app][options]")
{
    CHECK(rejected({"--timeout-budget", "0"}) == "flowcop: --timeout-budget: must be at least 1, got 0");
}

// Decimal only: no sign, no hex, no exponent, no unit, no spaces, no empty value, no wrap-around.
TEST_CASE("a number that is not plain decimal digits is rejected", "[app][options]")
{
    CHECK(rejected({"--timeout-budget", "99999999999999999999"}) ==
          "flowcop: --timeout-budget: '99999999999999999999' is not a number in 1..10000000");
    for (const std::string bad : {"+5", "-5", " 5", "5 ", "0x10", "1e3", "5s", "", "5.0"}) {
        INFO("'" << bad << "'");
        CHECK(rejected({"--tick-ms=" + bad}) == "flowcop: --tick-ms: '" + bad + "' is not a number in 1..60000");
    }
    // 2^64 wraps to 0 in a naive parser; 2^32 + 5 wraps to 5 in a uint32_t one.
    CHECK(rejected({"--tick-ms=18446744073709551616"}).find("is not a number") != std::string::npos);
    CHECK(rejected({"--tick-ms=4294967301"}) == "flowcop: --tick-ms: must be at most 60000, got 4294967301");
    CHECK(parsed({"--tick-ms", "007"}).tick_ms == 7); // leading zeros are still decimal
}

TEST_CASE("a zero TCP state timeout means the default inactivity timeout applies", "[app][options]")
{
    const Options o = parsed({"--tcp-timeout-established", "0"});
    CHECK(o.tcp_timeout_s[2] == 0);
    CHECK(o.default_inactivity_timeout_s == 600);
    CHECK(rejected({"--default-inactivity-timeout=0"}) ==
          "flowcop: --default-inactivity-timeout: must be at least 1, got 0");
}

TEST_CASE("--metrics-addr accepts IPv4, bracketed IPv6, localhost and none", "[app][options]")
{
    Options o = parsed({"--metrics-addr", "[::1]:9781"});
    CHECK((o.metrics_enabled && o.metrics_host == "::1" && o.metrics_port == 9781));
    o = parsed({"--metrics-addr=localhost:0"});
    CHECK((o.metrics_enabled && o.metrics_host == "127.0.0.1" && o.metrics_port == 0));
    o = parsed({"--metrics-addr", "none"});
    CHECK_FALSE(o.metrics_enabled);
    CHECK((o.metrics_host.empty() && o.metrics_port == 0));
    o = parsed({"--metrics-addr", "0.0.0.0:65535"});
    CHECK((o.metrics_host == "0.0.0.0" && o.metrics_port == 65535));
    o = parsed({"--metrics-addr", "[fe80::1:2]:1"});
    CHECK((o.metrics_host == "fe80::1:2" && o.metrics_port == 1));
}

TEST_CASE("--metrics-addr rejects each malformed address with the reason", "[app][options]")
{
    const auto err = [](const std::string& v) { return rejected({"--metrics-addr", v}); };
    CHECK(err("1.2.3") == "flowcop: --metrics-addr: '1.2.3': missing :PORT (expected HOST:PORT, e.g. "
                          "127.0.0.1:9781, or none)");
    CHECK(err("1.2.3.4") == "flowcop: --metrics-addr: '1.2.3.4': missing :PORT (expected HOST:PORT, e.g. "
                            "127.0.0.1:9781, or none)");
    CHECK(err("1.2.3.4:") ==
          "flowcop: --metrics-addr: '1.2.3.4:': missing PORT after ':' (0..65535, 0 = any free port)");
    CHECK(err("1.2.3.4:65536") == "flowcop: --metrics-addr: '1.2.3.4:65536': port '65536' is not a number in 0..65535");
    CHECK(err("1.2.3.4:70000") == "flowcop: --metrics-addr: '1.2.3.4:70000': port '70000' is not a number in 0..65535");
    CHECK(err("::1:9781") ==
          "flowcop: --metrics-addr: '::1:9781': an IPv6 address must be in brackets, e.g. [::1]:9781");
    CHECK(err("1.2.3:80") == "flowcop: --metrics-addr: '1.2.3:80': '1.2.3' is not an IPv4 address, [IPv6] address or "
                             "localhost");
    CHECK(err("example.com:80").find("'example.com' is not an IPv4 address") != std::string::npos);
    CHECK(err("256.1.1.1:80").find("'256.1.1.1' is not an IPv4 address") != std::string::npos);
    CHECK(err(":9781") == "flowcop: --metrics-addr: ':9781': missing HOST before ':PORT'");
    CHECK(err("1.2.3.4:+80").find("port '+80' is not a number") != std::string::npos);
    CHECK(err("1.2.3.4:80x").find("port '80x' is not a number") != std::string::npos);
    CHECK(err("[::1]").find("missing :PORT after ']'") != std::string::npos);
    CHECK(err("[::1]9781").find("missing :PORT after ']'") != std::string::npos);
    CHECK(err("[::1:9781").find("'[' without ']'") != std::string::npos);
    CHECK(err("[1.2.3.4]:80").find("'1.2.3.4' is not an IPv6 address") != std::string::npos);
    CHECK(err("[]:80").find("missing HOST") != std::string::npos);
    CHECK(err("").find("missing :PORT") != std::string::npos);
    CHECK(err("None").find("missing :PORT") != std::string::npos); // the off word is exact
}

TEST_CASE("format_host_port brackets IPv6 hosts", "[app][options]")
{
    CHECK(format_host_port("127.0.0.1", 9781) == "127.0.0.1:9781");
    CHECK(format_host_port("::1", 0) == "[::1]:0");
}

// The defaults --help shows ("none", "off") are values that select them, so a copied default is
// never a file named "none" or a flowgen spec "off".
TEST_CASE("--events and --flowgen take their off word and reject an empty value", "[app][options]")
{
    CHECK(parsed({"--events", "-"}).events_path == "-");
    CHECK(parsed({"--events", "none"}).events_path.empty());
    CHECK(parsed({"--events", "./none"}).events_path == "./none");
    CHECK(rejected({"--events="}) == "flowcop: --events: must not be empty (allowed: a file path, - (stdout), or none "
                                     "(./none for a file named none))");
    // A program that builds Options by hand with a file named "none" is shown one that keeps it.
    Options hand = default_options();
    hand.events_path = "none";
    CHECK(flowcop::app::test::described(hand, "events") == "./none");
    CHECK(parsed({"--flowgen", "off"}).flowgen.empty());
    // Parse-only: the flowgen port validates keys; any non-empty text is kept verbatim.
    CHECK(parsed({"--flowgen=a=1,b"}).flowgen == "a=1,b");
    CHECK(rejected({"--flowgen", ""}) == "flowcop: --flowgen: must not be empty (allowed: KEY=VAL,... or off)");
}
