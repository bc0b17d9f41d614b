// SPDX-License-Identifier: BSD-3-Clause
// --help and describe() against the parser: documentation that cannot drift from the code.
#include <service/options/options.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::parse;
using flowcop::app::test::parsed;

namespace {
std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

std::string heading(const OptionInfo& info)
{
    // A short alias leads the heading ("-h, --help"); a long one is a line of the block.
    const bool short_alias = !info.alias.empty() && info.alias.rfind("--", 0) != 0;
    return "  " + (short_alias ? info.alias + ", " : "") + info.name + (info.metavar.empty() ? "" : " " + info.metavar);
}

// The lines of one option's block in the help text: its heading up to the next heading.
std::vector<std::string> block_of(const std::string& help, const OptionInfo& info)
{
    const std::vector<std::string> lines = lines_of(help);
    std::vector<std::string> block;
    bool in = false;
    for (const std::string& line : lines) {
        const bool is_heading = line.rfind("  -", 0) == 0;
        if (is_heading)
            in = line == heading(info);
        else if (in)
            block.push_back(line);
    }
    return block;
}

// The text after "<label>: " in a block, or "<absent>".
std::string field(const std::vector<std::string>& block, const std::string& label)
{
    const std::string prefix = "      " + label + ": ";
    for (const std::string& line : block)
        if (line.rfind(prefix, 0) == 0)
            return line.substr(prefix.size());
    return "<absent>";
}
} // namespace

TEST_CASE("-h and --help return the help text with the program name", "[app][options]")
{
    for (const std::string flag : {"-h", "--help"}) {
        const ParseOutcome out = parse({flag}, "build/app/flowcop");
        REQUIRE(out.kind == ParseOutcome::help);
        CHECK(out.message == help_text("build/app/flowcop"));
        CHECK(out.message.rfind("Usage: build/app/flowcop [EAL options] -- [flowcop options]\n", 0) == 0);
        CHECK(out.options == default_options());
    }
    // Left to right: help after valid options still helps; an error before it is reported.
    CHECK(parse({"--tick-ms", "5", "--help"}).kind == ParseOutcome::help);
    CHECK(parse({"--mode", "foo", "--help"}).kind == ParseOutcome::error);
    CHECK(parse({"--help=yes"}).kind == ParseOutcome::error);
}

// The list of names comes from the parser's own table, and each is fed back to the parser, so
// an option can be neither undocumented nor documented-but-rejected.
TEST_CASE("--help has a block for every option the parser accepts, and no other", "[app][options]")
{
    const std::string help = help_text("flowcop");
    const std::vector<std::string> lines = lines_of(help);
    std::set<std::string> headings;
    for (const std::string& line : lines)
        if (line.rfind("  -", 0) == 0)
            headings.insert(line);
    CHECK(headings.size() == option_table().size());
    std::size_t value_options = 0;
    for (const OptionInfo& info : option_table()) {
        INFO(info.name);
        CHECK(headings.count(heading(info)) == 1);
        CHECK(block_of(help, info).size() >= 1); // a description line at least
        value_options += info.takes_value ? 1 : 0;
        if (info.takes_value)
            CHECK(parse({info.name + "=" + info.default_text}).kind == ParseOutcome::ok);
        else
            CHECK(parse({info.name}).kind != ParseOutcome::error);
    }
    // The spec's 28 options taking values (19 + 9 TCP states), the 7 --ipfix ones (issue 28:
    // --ipfix-max-rate), the 5 of TCP window tracking, issue 15's 6 (4 timeouts, --track, --port-zone),
    // --events-filter, --events-invalid-rate, --metrics-allow, issue 31's --policy, issue 32's --state-file
    // and --state-checkpoint-s, --quiet and --help.
    CHECK(value_options == 52);
    CHECK(option_table().size() == 54);
    CHECK(headings.count("  -h, --help") == 1);
    for (const char* state : kTcpStateFlagNames) {
        // Hyphens as every other flag; the state machine's spelling is shown as the alias it is.
        std::string flag = std::string("--tcp-timeout-") + state;
        std::replace(flag.begin() + 2, flag.end(), '_', '-');
        CHECK(headings.count("  " + flag + " SECONDS") == 1);
        if (flag != std::string("--tcp-timeout-") + state)
            CHECK(std::count(lines.begin(), lines.end(),
                             std::string("      (also spelled --tcp-timeout-") + state + ")") == 1);
    }
    for (const std::string& line : lines)
        CHECK(line.size() <= 100); // readable in a terminal
}

// The default shown is read back from the help text itself and parsed: it must select exactly
// default_options(). So the help can neither show a stale default nor one the parser rejects.
TEST_CASE("every default --help shows parses back to default_options()", "[app][options]")
{
    const std::string help = help_text("flowcop");
    for (const OptionInfo& info : option_table()) {
        INFO(info.name);
        const std::vector<std::string> block = block_of(help, info);
        if (info.name == "--help") {
            CHECK(field(block, "default") == "<absent>");
            continue;
        }
        const std::string shown = field(block, "default");
        CHECK(shown == info.default_text);
        if (info.takes_value) {
            CHECK(parsed({info.name + "=" + shown}) == default_options());
            CHECK(field(block, "allowed") == info.allowed);
        } else {
            CHECK(info.name == "--quiet");
            CHECK(shown == "off");
            CHECK_FALSE(default_options().quiet);
        }
    }
    // Spot checks against the spec's numbers, independent of the table.
    const auto shown = [&](const std::string& name) {
        for (const OptionInfo& info : option_table())
            if (info.name == name)
                return field(block_of(help, info), "default");
        return std::string("<no such option>");
    };
    CHECK(shown("--wheel-buckets") == "4096");
    CHECK(shown("--tcp-timeout-established") == "432000");
    CHECK(shown("--metrics-addr") == "127.0.0.1:9781");
    CHECK(shown("--events") == "none");
    CHECK(shown("--flowgen") == "off");
    CHECK(shown("--loose-pickup") == "on");
    CHECK(shown("--tcp-be-liberal") == "off");
    CHECK(shown("--tcp-max-retrans") == "3");
    CHECK(shown("--tcp-timeout-unacknowledged") == "300");
    CHECK(shown("--mbufs") == "auto");
    CHECK(shown("--mbuf-data-room") == "2176");
}

TEST_CASE("describe() renders the configuration with label-safe keys", "[app][options]")
{
    const auto pairs = describe(default_options());
    REQUIRE(pairs.size() == 53); // every option but --help
    // Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]*. (std::regex trips GCC 12's
    // -Wmaybe-uninitialized under -fsanitize, so the rule is spelled out.)
    const auto is_label = [](const std::string& k) {
        const auto letter = [](char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
        bool ok = !k.empty() && letter(k[0]);
        for (const char c : k)
            ok = ok && (letter(c) || (c >= '0' && c <= '9'));
        return ok;
    };
    std::set<std::string> keys;
    for (const auto& [k, v] : pairs) {
        CHECK(is_label(k));
        keys.insert(k);
    }
    CHECK_FALSE(is_label("metrics-addr")); // the check itself can fail
    CHECK(keys.size() == pairs.size());
    CHECK(pairs.front() == std::pair<std::string, std::string>{"mode", "monitor"});
    const std::vector<std::pair<std::string, std::string>> expected = {{"wheel_buckets", "4096"},
                                                                       {"timeout_budget", "128"},
                                                                       {"tcp_timeout_syn_sent2", "120"},
                                                                       {"default_inactivity_timeout", "600"},
                                                                       {"metrics_addr", "127.0.0.1:9781"},
                                                                       {"metrics_allow", "any"},
                                                                       {"events", "none"},
                                                                       {"ipfix", "none"},
                                                                       {"ipfix_mtu", "1500"},
                                                                       {"ipfix_active_timeout", "1800"},
                                                                       {"quiet", "off"},
                                                                       {"vlan_key", "both"},
                                                                       {"clock", "tsc"}};
    for (const auto& kv : expected)
        CHECK(std::find(pairs.begin(), pairs.end(), kv) != pairs.end());
}

namespace {
// The flags that describe() says o was made of.
std::vector<std::string> flags_from_describe(const Options& o)
{
    const auto pairs = describe(o);
    std::vector<std::string> args;
    std::size_t p = 0;
    for (const OptionInfo& info : option_table()) {
        if (info.name == "--help")
            continue;
        REQUIRE(p < pairs.size());
        if (info.takes_value)
            args.push_back(info.name + "=" + pairs[p].second);
        else if (pairs[p].second == "on")
            args.push_back(info.name);
        ++p;
    }
    return args;
}
} // namespace

// describe() spells values as the flags take them, so a logged configuration can be replayed.
TEST_CASE("describe() output fed back as flags reproduces the options", "[app][options]")
{
    const std::vector<std::vector<std::string>> command_lines = {
        {},
        {"--mode=inline", "--clock=packet", "--wheel-buckets=1024", "--tcp-timeout-time_wait=7",
         "--metrics-addr=[::1]:0", "--events=/var/log/fc events", "--loose-pickup=off", "--flowgen=flows=3", "--quiet",
         "--active-timeout=60"},
        {"--metrics-addr=none", "--events=-", "--tcp-timeout-close=0"},
        {"--events=./none"},
        {"--mbufs=20000", "--mbuf-data-room=192"},
        {"--metrics-allow=10.0.0.0/8,::1"},
    };
    for (const auto& args : command_lines) {
        const Options o = parsed(args);
        CHECK(parsed(flags_from_describe(o)) == o);
    }
}

TEST_CASE("describe_line is one line of key=value, quoting where needed", "[app][options]")
{
    const std::string def = describe_line(default_options());
    CHECK(def.rfind("mode=monitor clock=tsc wheel_buckets=4096 ", 0) == 0);
    CHECK(def.find("metrics_addr=127.0.0.1:9781") != std::string::npos);
    const std::string odd = describe_line(parsed({"--events=a \"b\"\n", "--flowgen=k=v"}));
    CHECK(odd.find("events=\"a \\\"b\\\"\\x0a\"") != std::string::npos);
    CHECK(odd.find("flowgen=\"k=v\"") != std::string::npos);
    CHECK(odd.find('\n') == std::string::npos);
}
