// SPDX-License-Identifier: BSD-3-Clause
// app/service/log.h without EAL: the umbrella rewrite and the levels DPDK's patterns give each type.
#include <service/log.h>

#include <catch2/catch.hpp>

#include <rte_log.h>

namespace fclog = flowcop::app::log;

TEST_CASE("umbrella_log_level widens flowcop:LEVEL to every flowcop.* type, and only that", "[app][log]")
{
    CHECK(fclog::umbrella_log_level("flowcop:debug") == "flowcop*:debug");
    CHECK(fclog::umbrella_log_level("flowcop:8") == "flowcop*:8");
    CHECK(fclog::umbrella_log_level("flowcop.*:warning") == "flowcop.*:warning");
    CHECK(fclog::umbrella_log_level("flowcop.events:debug") == "flowcop.events:debug");
    CHECK(fclog::umbrella_log_level("flowcopx:debug") == "flowcopx:debug");
    CHECK(fclog::umbrella_log_level("flowcop,debug") == "flowcop,debug"); // a regex already matches them all
    CHECK(fclog::umbrella_log_level("*:error") == "*:error");
    CHECK(fclog::umbrella_log_level("7") == "7");
    CHECK(fclog::umbrella_log_level("") == "");
}

TEST_CASE("each part's lines follow DPDK's level for its type", "[app][log]")
{
    using fclog::Part;
    // Registered at INFO on first use.
    CHECK(fclog::enabled(RTE_LOG_INFO, Part::service));
    CHECK_FALSE(fclog::enabled(RTE_LOG_DEBUG, Part::service));
    CHECK(fclog::enabled(RTE_LOG_WARNING, Part::exporter));

    REQUIRE(rte_log_set_level_pattern("flowcop*", RTE_LOG_DEBUG) == 0); // what flowcop:debug becomes
    CHECK(fclog::enabled(RTE_LOG_DEBUG, Part::service));
    CHECK(fclog::enabled(RTE_LOG_DEBUG, Part::exporter));
    CHECK(fclog::enabled(RTE_LOG_DEBUG, Part::telemetry));

    REQUIRE(rte_log_set_level_pattern("flowcop.exporter", RTE_LOG_ERR) == 0);
    CHECK_FALSE(fclog::enabled(RTE_LOG_WARNING, Part::exporter));
    CHECK(fclog::enabled(RTE_LOG_ERR, Part::exporter));
    CHECK(fclog::enabled(RTE_LOG_DEBUG, Part::service));

    // write() with the level off formats nothing and prints nothing; on, any length is printed
    // (rte_log's stream is stderr before EAL: not captured here, the integration test reads it).
    fclog::write(RTE_LOG_DEBUG, Part::exporter, "flowcop: %s", "not printed");
    const std::string long_text(3000, 'x');
    fclog::write(RTE_LOG_DEBUG, Part::service, "flowcop: test_log: a long line %s", long_text.c_str());

    rte_log_set_level_pattern("flowcop*", RTE_LOG_INFO); // as registered, for the other tests
}
