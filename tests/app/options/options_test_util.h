// SPDX-License-Identifier: BSD-3-Clause
// Shared by the options tests: run parse_options() on a list of strings as a shell would pass them.
#pragma once

#include <catch2/catch.hpp>

#include <service/options/options.h>

#include <string>
#include <vector>

namespace flowcop::app::test {

inline ParseOutcome parse(const std::vector<std::string>& args, const char* prog = "flowcop")
{
    std::vector<std::string> storage{prog};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    return parse_options(static_cast<int>(storage.size()), argv.data());
}

// The options from a command line that must parse.
inline Options parsed(const std::vector<std::string>& args)
{
    const ParseOutcome out = parse(args);
    INFO("message: " << out.message);
    REQUIRE(out.kind == ParseOutcome::ok);
    REQUIRE(out.message.empty());
    return out.options;
}

// The error line from a command line that must fail; every error is one "flowcop: " line.
inline std::string rejected(const std::vector<std::string>& args)
{
    const ParseOutcome out = parse(args);
    REQUIRE(out.kind == ParseOutcome::error);
    CHECK(out.message.rfind("flowcop: ", 0) == 0);
    CHECK(out.message.find('\n') == std::string::npos);
    CHECK(out.options == default_options());
    return out.message;
}

inline std::string described(const Options& o, const std::string& key)
{
    for (const auto& [k, v] : describe(o))
        if (k == key)
            return v;
    FAIL("describe() has no key " << key);
    return {};
}

} // namespace flowcop::app::test
