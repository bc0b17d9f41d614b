// SPDX-License-Identifier: BSD-3-Clause
// Per-state timeouts: the netfilter defaults, the catch-all fallback, and which expiries are closes.
#include "tcp_test_util.h"

using namespace tcptest;
using flowcop::tcpstate::expiry_is_closed;
using flowcop::tcpstate::kStateCount;
using flowcop::tcpstate::Timeouts;

namespace {
size_t idx(State s)
{
    return static_cast<size_t>(s);
}
} // namespace

// Operators compare flowcop with conntrack; the defaults must be netfilter's own
// (nf_conntrack_tcp_timeout_*), and the catch-all is netfilter's generic timeout.
TEST_CASE("netfilter_defaults() holds netfilter's TCP timeouts and a 600 s catch-all", "[tcpstate][timeouts]")
{
    const Timeouts t = Timeouts::netfilter_defaults();
    CHECK(t.seconds[idx(State::none)] == 0);
    CHECK(t.seconds[idx(State::syn_sent)] == 120);
    CHECK(t.seconds[idx(State::syn_recv)] == 60);
    CHECK(t.seconds[idx(State::established)] == 5 * 24 * 3600);
    CHECK(t.seconds[idx(State::fin_wait)] == 120);
    CHECK(t.seconds[idx(State::close_wait)] == 60);
    CHECK(t.seconds[idx(State::last_ack)] == 30);
    CHECK(t.seconds[idx(State::time_wait)] == 120);
    CHECK(t.seconds[idx(State::close)] == 10);
    CHECK(t.seconds[idx(State::syn_sent2)] == t.seconds[idx(State::syn_sent)]);
    CHECK(t.default_inactivity == 600);
    for (const State s : kFlowStates)
        CHECK(t.effective(s) == t.seconds[idx(s)]);
    static_assert(Timeouts::netfilter_defaults().effective(State::established) == 432000);
}

// 0 is how an operator says "no timeout of its own for this state"; such a flow must still expire,
// after the catch-all, or it would never be scheduled and never leave the table.
TEST_CASE("effective() falls back to default_inactivity for a state whose timeout is 0", "[tcpstate][timeouts]")
{
    Timeouts t = Timeouts::netfilter_defaults();
    t.default_inactivity = 900;
    t.seconds[idx(State::established)] = 0;
    CHECK(t.effective(State::established) == 900);
    CHECK(t.effective(State::none) == 900);
    CHECK(t.effective(State::syn_sent) == 120);
    t.seconds[idx(State::established)] = 7;
    CHECK(t.effective(State::established) == 7);
}

// A zero deadline would mean "not scheduled" to the timer wheel, so even a broken configuration (all
// zeros) or a corrupt state value must yield a positive timeout rather than an immortal flow.
TEST_CASE("effective() never returns 0, even for an all-zero Timeouts or an out-of-range state", "[tcpstate][timeouts]")
{
    Timeouts zero{};
    for (size_t i = 0; i < 256; ++i)
        CHECK(zero.effective(static_cast<State>(i)) == Timeouts::kDefaultInactivity);
    Timeouts t = Timeouts::netfilter_defaults();
    t.default_inactivity = 42;
    CHECK(t.effective(State::count) == 42);
    CHECK(t.effective(static_cast<State>(200)) == 42);
}

// The reason a flow is destroyed at expiry: TIME_WAIT (FIN exchange finished) and CLOSE (reset, or
// trailing packets after it) are ends of a closed connection; anything else went idle.
TEST_CASE("expiry_is_closed is true for TIME_WAIT and CLOSE only", "[tcpstate][timeouts]")
{
    for (size_t i = 0; i <= kStateCount; ++i) {
        const auto s = static_cast<State>(i);
        CAPTURE(i);
        CHECK(expiry_is_closed(s) == (s == State::time_wait || s == State::close));
    }
}
