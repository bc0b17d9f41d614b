// SPDX-License-Identifier: BSD-3-Clause
// lib/text: the one decimal parser behind every number an operator types (options, telemetry
// parameters, flowgen devargs). Each rejected form is one a lenient parser would misread.
#include <text/decimal.h>

#include <catch2/catch.hpp>

using flowcop::text::parse_decimal;
using flowcop::text::parse_decimal_in;

TEST_CASE("Whole decimal numbers up to 2^64-1 parse", "[text][decimal]")
{
    uint64_t v = 7;
    CHECK((parse_decimal("0", v) && v == 0));
    CHECK((parse_decimal("0042", v) && v == 42));
    CHECK((parse_decimal("18446744073709551615", v) && v == UINT64_MAX));
}

TEST_CASE("Anything but digits, and overflow, is rejected and leaves the output alone", "[text][decimal]")
{
    for (const char* bad : {"", "-1", "+1", " 5", "5 ", "5k", "1e6", "0x10", "1.5", "18446744073709551616", "1,000"}) {
        INFO(bad);
        uint64_t v = 7;
        CHECK_FALSE(parse_decimal(bad, v));
        CHECK(v == 7);
    }
}

TEST_CASE("parse_decimal_in also enforces the range, both ends included", "[text][decimal]")
{
    uint64_t v = 0;
    CHECK((parse_decimal_in("10", 10, 20, v) && v == 10));
    CHECK((parse_decimal_in("20", 10, 20, v) && v == 20));
    CHECK_FALSE(parse_decimal_in("9", 10, 20, v));
    CHECK_FALSE(parse_decimal_in("21", 10, 20, v));
    CHECK(v == 20);
}
