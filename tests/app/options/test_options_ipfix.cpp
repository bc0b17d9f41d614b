// SPDX-License-Identifier: BSD-3-Clause
// The IPFIX flags: --ipfix is the one repeatable option (a list of collectors), and its values are
// checked as --metrics-addr's are, plus what makes no sense for a destination.
#include <service/options/options.h>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::parsed;
using flowcop::app::test::rejected;

TEST_CASE("IPFIX export is off by default, with the documented defaults", "[app][options][ipfix]")
{
    const Options o = default_options();
    CHECK(o.ipfix.empty());
    CHECK(o.ipfix_mtu == 1500);
    CHECK(o.ipfix_template_refresh_s == 60);
    CHECK(o.ipfix_template_refresh_messages == 1000);
    CHECK(o.ipfix_max_rate == 10000);
    CHECK(o.ipfix_domain_base == 1);
    CHECK(o.ipfix_active_timeout_s == 1800);
}

// Several collectors are normal (a fleet's two analysis systems): repeating the flag or listing
// them with commas both add, in order.
TEST_CASE("--ipfix adds collectors each time it is given, and takes comma-separated lists", "[app][options][ipfix]")
{
    const Options o = parsed({"--ipfix", "127.0.0.1:4739", "--ipfix=[::1]:9995,localhost:2055"});
    REQUIRE(o.ipfix.size() == 3);
    CHECK(o.ipfix[0] == Options::Collector{"127.0.0.1", 4739});
    CHECK(o.ipfix[1] == Options::Collector{"::1", 9995});
    CHECK(o.ipfix[2] == Options::Collector{"127.0.0.1", 2055});
    // describe() spells the list so that one --ipfix=<value> gives the same options back.
    std::string shown;
    for (const auto& [k, v] : describe(o))
        if (k == "ipfix")
            shown = v;
    CHECK(shown == "127.0.0.1:4739,[::1]:9995,127.0.0.1:2055");
    CHECK(parsed({"--ipfix=" + shown}).ipfix == o.ipfix);
    CHECK(parsed({"--ipfix", "none"}).ipfix.empty());
}

TEST_CASE("--ipfix refuses port 0, names, missing ports and the same collector twice", "[app][options][ipfix]")
{
    CHECK(rejected({"--ipfix", "127.0.0.1:0"}) ==
          "flowcop: --ipfix: '127.0.0.1:0': port 0 is not a collector's port (1..65535; IPFIX's is 4739)");
    CHECK(rejected({"--ipfix", "collector.example:4739"}).find("is not an IPv4 address") != std::string::npos);
    CHECK(rejected({"--ipfix", "127.0.0.1"}).find("missing :PORT") != std::string::npos);
    CHECK(rejected({"--ipfix", "127.0.0.1:4739,"}).find("--ipfix: ") != std::string::npos);
    CHECK(rejected({"--ipfix", "127.0.0.1:4739", "--ipfix", "127.0.0.1:4739"}) ==
          "flowcop: --ipfix: '127.0.0.1:4739' is given twice");
}

TEST_CASE("The IPFIX numbers are range-checked like every number", "[app][options][ipfix]")
{
    CHECK(parsed({"--ipfix-mtu", "9000"}).ipfix_mtu == 9000);
    CHECK(rejected({"--ipfix-mtu", "575"}).rfind("flowcop: --ipfix-mtu: ", 0) == 0);
    CHECK(rejected({"--ipfix-mtu", "65536"}).rfind("flowcop: --ipfix-mtu: ", 0) == 0);
    CHECK(rejected({"--ipfix-template-refresh", "0"}).rfind("flowcop: --ipfix-template-refresh: ", 0) == 0);
    CHECK(parsed({"--ipfix-template-refresh-messages", "1"}).ipfix_template_refresh_messages == 1);
    CHECK(parsed({"--ipfix-max-rate", "0"}).ipfix_max_rate == 0);
    CHECK(parsed({"--ipfix-max-rate", "2500"}).ipfix_max_rate == 2500);
    CHECK(parsed({"--ipfix-domain-base", "0"}).ipfix_domain_base == 0);
    CHECK(parsed({"--ipfix-active-timeout", "0"}).ipfix_active_timeout_s == 0);
    CHECK(parsed({"--ipfix-active-timeout", "86400"}).ipfix_active_timeout_s == 86400);
    CHECK(rejected({"--ipfix-active-timeout", "86401"}).rfind("flowcop: --ipfix-active-timeout: ", 0) == 0);
    // Non-list options take the later value; --ipfix (a list) adds instead.
    CHECK(parsed({"--ipfix-mtu", "1500", "--ipfix-mtu", "1400"}).ipfix_mtu == 1400);
}
