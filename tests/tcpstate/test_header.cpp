// SPDX-License-Identifier: BSD-3-Clause
// The public header's types have the layout the flow record relies on. (That it compiles on its
// own is tests/chkincs' job.)
#include <tcpstate/tcp_state.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ts = flowcop::tcpstate;

static_assert(sizeof(ts::Tracker) <= 4);
static_assert(std::is_trivially_copyable_v<ts::Tracker>);
static_assert(std::is_standard_layout_v<ts::Tracker>);
static_assert(sizeof(ts::State) == 1 && sizeof(ts::Dir) == 1 && sizeof(ts::Outcome) == 1);
static_assert(noexcept(ts::step(std::declval<ts::Tracker&>(), ts::Dir::orig, 0)));
static_assert(noexcept(ts::initial_state(0, true)));

// The flow record's readers load the state byte on its own (relaxed), so it must be the first byte,
// and a zeroed record must read as "no flow".
TEST_CASE("A Tracker starts as no flow and keeps its state in its first byte", "[tcpstate][header]")
{
    ts::Tracker t{};
    CHECK(t.state == ts::State::none);
    CHECK(t.flags == 0);
    CHECK_FALSE(t.assured());
    CHECK_FALSE(t.seen_reply());
    CHECK(offsetof(ts::Tracker, state) == 0);
    t = ts::Tracker{ts::State::established};
    CHECK(*reinterpret_cast<const uint8_t*>(&t) == static_cast<uint8_t>(ts::State::established));
}
