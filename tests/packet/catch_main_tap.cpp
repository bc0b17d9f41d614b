// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for the packet unit tests, with the TAP reporter that meson's
// `protocol: 'tap'` (`-r tap`) needs: Catch2 2.13's single header does not compile
// it in, and tests/catch2_main.cpp does not add it yet. Switch to catch2_main_dep
// once it does (both in one binary would define TAPReporter twice).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>
