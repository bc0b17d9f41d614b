// SPDX-License-Identifier: BSD-3-Clause
// Private to the options library: the one table every option lives in. The parser, --help,
// describe() and option_table() all iterate it, so adding an option here is the whole job.
// The table is built on first use, never changes and is never freed; reading it is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowcop::app {
struct Options; // options.h: what the setters fill and the showers read
}

namespace flowcop::app::detail {

struct Spec;
// A setter stores a valid value and returns "", or returns the error detail without the flag name
// and leaves Options untouched.
using Setter = std::string (*)(const Spec&, std::string_view value, Options&);
// A shower spells the current value as the flag accepts it, so `--name=<shown>` round-trips.
using Shower = std::string (*)(const Spec&, const Options&);

struct Spec {
    std::string name;    // "--tick-ms"
    std::string alias;   // another accepted spelling: "-h" for --help, "--tcp-timeout-time_wait"; else empty
    std::string metavar; // empty = a flag that takes no value
    std::string help;    // meaning, lines separated by '\n'
    std::string allowed; // the allowed values as --help shows them; empty for flags
    Setter set = nullptr;
    Shower show = nullptr; // nullptr only for --help, which has no state or default
    uint64_t min = 0;      // numbers only
    uint64_t max = 0;
    bool pow2 = false;
    std::vector<std::string> choices; // choice options: index = enum value
    std::size_t index = 0;            // --tcp-timeout-<state>: index into tcp_timeout_s
    bool is_help = false;
    bool repeatable = false; // each occurrence adds to the value (others: a later one replaces it)
};

const std::vector<Spec>& specs();

// name with every '_' spelled '-': how flags spell what the code names with underscores.
std::string hyphenated(std::string name);

} // namespace flowcop::app::detail
