// SPDX-License-Identifier: BSD-3-Clause
// The one translation unit that instantiates Catch2's runner.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>
