// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for the tcpstate tests, with the TAP reporter that meson's `protocol: 'tap'`
// (`-r tap`) needs: Catch2 2.13's single header does not compile it in and tests/catch2_main.cpp does
// not add it yet. Switch to catch2_main_dep once it does (both in one binary would define TAPReporter
// twice).
//
// This TU holds only Catch2's own code. GCC 12 with -fsanitize=address -O2 reports a false
// -Wmaybe-uninitialized inside libstdc++'s std::function as Catch2's std::regex uses it, which
// -Werror turns into a failed sanitizer build; silencing it here touches no code of ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>
