// SPDX-License-Identifier: BSD-3-Clause
// State names for listings (conntrack -L spelling) and for --tcp-timeout-<name> options.
#include "tcp_test_util.h"

#include <cstring>
#include <string>

using namespace tcptest;
using flowcop::tcpstate::kStateCount;
using flowcop::tcpstate::parse_state_flag_name;
using flowcop::tcpstate::state_flag_name;
using flowcop::tcpstate::state_name;

// Listings must read like conntrack -L so operators can compare them line by line.
TEST_CASE("state_name() spells states as conntrack -L does", "[tcpstate][names]")
{
    const char* const expect[] = {"NONE",       "SYN_SENT", "SYN_RECV",  "ESTABLISHED", "FIN_WAIT",
                                  "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE",       "SYN_SENT2"};
    static_assert(sizeof(expect) / sizeof(expect[0]) == kStateCount);
    for (size_t i = 0; i < kStateCount; ++i)
        CHECK(std::string(state_name(static_cast<State>(i))) == expect[i]);
    CHECK(std::string(state_name(State::count)) == "UNKNOWN");
    CHECK(std::string(state_name(static_cast<State>(255))) == "UNKNOWN");
}

// Option names are the lower-case names netfilter's sysctls use (nf_conntrack_tcp_timeout_<name>),
// and every one parses back to its state.
TEST_CASE("state_flag_name() and parse_state_flag_name() are inverse for every flow state", "[tcpstate][names]")
{
    const char* const expect[] = {"none",       "syn_sent", "syn_recv",  "established", "fin_wait",
                                  "close_wait", "last_ack", "time_wait", "close",       "syn_sent2"};
    for (size_t i = 0; i < kStateCount; ++i)
        CHECK(std::string(state_flag_name(static_cast<State>(i))) == expect[i]);
    CHECK(std::string(state_flag_name(State::count)) == "unknown");
    for (const State s : kFlowStates) {
        State out = State::none;
        CHECK(parse_state_flag_name(state_flag_name(s), out));
        CHECK(out == s);
    }
}

// A typo in --tcp-timeout-<name> must be an error, never a silently different state; "none" is
// refused because no flow is ever in it, so its timeout would do nothing.
TEST_CASE("parse_state_flag_name() rejects anything but an exact flow-state name", "[tcpstate][names]")
{
    const char* const bad[] = {"none",   "",          "ESTABLISHED", "Established", "establishe", "established ",
                               " close", "syn_sent3", "unknown",     "count",       "time-wait",  "closed"};
    for (const char* b : bad) {
        CAPTURE(b);
        State out = State::last_ack;
        CHECK_FALSE(parse_state_flag_name(b, out));
        CHECK(out == State::last_ack);
    }
    // A view that is not NUL-terminated at the name's end: only its own bytes count.
    const char buf[] = "closewait";
    State out = State::none;
    CHECK(parse_state_flag_name(std::string_view(buf, 5), out));
    CHECK(out == State::close);
}
