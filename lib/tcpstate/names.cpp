// SPDX-License-Identifier: BSD-3-Clause
// State names: conntrack -L spelling for display, lower-case spelling for option names.
#include <tcpstate/tcp_state.h>

namespace flowcop::tcpstate {
namespace {

struct Names {
    const char* display;
    const char* flag;
};

// Indexed by State. The display names are netfilter's tcp_conntrack_names, so flowcop's listings
// and conntrack -L read the same.
constexpr Names kNames[kStateCount] = {
    {"NONE", "none"},         {"SYN_SENT", "syn_sent"},     {"SYN_RECV", "syn_recv"}, {"ESTABLISHED", "established"},
    {"FIN_WAIT", "fin_wait"}, {"CLOSE_WAIT", "close_wait"}, {"LAST_ACK", "last_ack"}, {"TIME_WAIT", "time_wait"},
    {"CLOSE", "close"},       {"SYN_SENT2", "syn_sent2"},
};

} // namespace

const char* state_name(State s) noexcept
{
    const auto i = static_cast<size_t>(s);
    return i < kStateCount ? kNames[i].display : "UNKNOWN";
}

const char* state_flag_name(State s) noexcept
{
    const auto i = static_cast<size_t>(s);
    return i < kStateCount ? kNames[i].flag : "unknown";
}

bool parse_state_flag_name(std::string_view name, State& out) noexcept
{
    // Starts at 1: State::none is not a state a flow can be in (see the header).
    for (size_t i = 1; i < kStateCount; ++i) {
        if (name == kNames[i].flag) {
            out = static_cast<State>(i);
            return true;
        }
    }
    return false;
}

} // namespace flowcop::tcpstate
