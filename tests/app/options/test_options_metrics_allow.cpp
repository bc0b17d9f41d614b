// SPDX-License-Identifier: BSD-3-Clause
// --metrics-allow: who may connect to the exporter. Every network is checked and spelled one way
// (the exporter hands it to civetweb, which compares the client's masked address with the network
// as written, so a network with host bits set would silently match nobody).
#include <service/options/options.h>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::parsed;
using flowcop::app::test::rejected;

namespace {
std::string shown_allow(const Options& o)
{
    for (const auto& [k, v] : describe(o))
        if (k == "metrics_allow")
            return v;
    return "<missing>";
}
} // namespace

TEST_CASE("--metrics-allow lets everyone in by default, as before it existed", "[app][options]")
{
    CHECK(default_options().metrics_allow.empty());
    CHECK(shown_allow(default_options()) == "any");
    CHECK(parsed({"--metrics-allow", "10.0.0.0/8", "--metrics-allow", "any"}).metrics_allow.empty());
}

TEST_CASE("--metrics-allow takes IPv4 and IPv6 networks and hosts, in canonical form", "[app][options]")
{
    const Options o = parsed({"--metrics-allow", "127.0.0.1/32,10.0.0.0/8,192.0.2.7,[2001:DB8::]/32,::1,0.0.0.0/0"});
    CHECK(o.metrics_allow == std::vector<std::string>{"127.0.0.1/32", "10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32",
                                                      "::1/128", "0.0.0.0/0"});
    // describe() spells it so that --metrics-allow=<shown> gives the same options back.
    CHECK(shown_allow(o) == "127.0.0.1/32,10.0.0.0/8,192.0.2.7/32,2001:db8::/32,::1/128,0.0.0.0/0");
    CHECK(parsed({"--metrics-allow=" + shown_allow(o)}).metrics_allow == o.metrics_allow);
    CHECK(parsed({"--metrics-allow", "fe80::/10"}).metrics_allow == std::vector<std::string>{"fe80::/10"});
    CHECK(parsed({"--metrics-allow", "10.1.2.4/30"}).metrics_allow == std::vector<std::string>{"10.1.2.4/30"});
}

TEST_CASE("a later --metrics-allow replaces an earlier one", "[app][options]")
{
    CHECK(parsed({"--metrics-allow", "10.0.0.0/8", "--metrics-allow", "127.0.0.1"}).metrics_allow ==
          std::vector<std::string>{"127.0.0.1/32"});
}

TEST_CASE("--metrics-allow refuses each malformed network with the reason", "[app][options]")
{
    CHECK(rejected({"--metrics-allow", "10.1.2.3/8"}) ==
          "flowcop: --metrics-allow: '10.1.2.3/8' has host bits set: the IPv4 network is 10.0.0.0/8");
    CHECK(rejected({"--metrics-allow", "2001:db8::1/32"}) ==
          "flowcop: --metrics-allow: '2001:db8::1/32' has host bits set: the IPv6 network is 2001:db8::/32");
    CHECK(rejected({"--metrics-allow", "10.0.0.0/33"}) ==
          "flowcop: --metrics-allow: '10.0.0.0/33': the prefix length must be a number in 0..32 for an IPv4 network");
    CHECK(rejected({"--metrics-allow", "::/129"}) ==
          "flowcop: --metrics-allow: '::/129': the prefix length must be a number in 0..128 for an IPv6 network");
    const std::string not_network = " is not an IPv4 or IPv6 network (ADDRESS/LENGTH, e.g. 192.0.2.0/24 or "
                                    "2001:db8::/32)";
    CHECK(rejected({"--metrics-allow", "10.0.0.256/32"}) == "flowcop: --metrics-allow: '10.0.0.256/32'" + not_network);
    CHECK(rejected({"--metrics-allow", "prometheus.example"}) ==
          "flowcop: --metrics-allow: 'prometheus.example'" + not_network);
    CHECK(rejected({"--metrics-allow", "2001:db8:::/48"}) ==
          "flowcop: --metrics-allow: '2001:db8:::/48'" + not_network);
    CHECK(rejected({"--metrics-allow", "/8"}) == "flowcop: --metrics-allow: '/8'" + not_network);
    CHECK(rejected({"--metrics-allow", "+10.0.0.0/8"}) == "flowcop: --metrics-allow: '+10.0.0.0/8'" + not_network);
    for (const char* length : {"10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8/8", "10.0.0.0/ 8", "10.0.0.0/0x8"})
        CHECK(rejected({"--metrics-allow", length}).find("the prefix length must be a number in 0..32") !=
              std::string::npos);
    CHECK(rejected({"--metrics-allow", "10.0.0.0/8,,127.0.0.1"}) ==
          "flowcop: --metrics-allow: '10.0.0.0/8,,127.0.0.1': an empty network between commas");
    CHECK(rejected({"--metrics-allow", "10.0.0.0/8,"}).find("an empty network between commas") != std::string::npos);
    CHECK(rejected({"--metrics-allow", "127.0.0.1,127.0.0.1/32"}) ==
          "flowcop: --metrics-allow: '127.0.0.1/32' is given twice (as 127.0.0.1/32)");
    CHECK(rejected({"--metrics-allow", ""}) == "flowcop: --metrics-allow: must not be empty (allowed: any, or "
                                               "IPv4/LENGTH and IPv6/LENGTH networks, comma-separated)");
}
