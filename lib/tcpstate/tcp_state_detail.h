// SPDX-License-Identifier: BSD-3-Clause
// Implementation detail of lib/tcpstate (namespace detail): packet classes and state sets shared by
// the transition code and by window_inline.h's steady fast path, which callers inline. It is
// include-checked (tests/chkincs) with the public headers for that reason; nothing outside
// lib/tcpstate names what it declares.
#pragma once

#include <tcpstate/tcp_state.h>

#include <cstdint>

namespace flowcop::tcpstate::detail {

// What the state machine sees of a packet: netfilter's TCP_*_SET index, plus `invalid` for the
// combinations its tcp_valid_flags table rejects before the state machine runs.
enum class Klass : uint8_t { syn, synack, fin, ack, rst, invalid };
inline constexpr unsigned kKlassCount = 5; // classes with a column in the transition table

inline constexpr uint8_t bit(Flag f) noexcept
{
    return static_cast<uint8_t>(f);
}

constexpr Klass classify(uint8_t tcp_flags) noexcept
{
    constexpr uint8_t kFin = bit(Flag::fin), kSyn = bit(Flag::syn), kRst = bit(Flag::rst);
    constexpr uint8_t kAck = bit(Flag::ack), kUrg = bit(Flag::urg);
    // PSH, ECE (0x40) and CWR (0x80) never change a class: they carry data or congestion signals.
    switch (tcp_flags & (kFin | kSyn | kRst | kAck | kUrg)) {
    case kSyn:
    case kSyn | kUrg: return Klass::syn;
    case kSyn | kAck: return Klass::synack;
    case kRst:
    case kRst | kAck: return Klass::rst;
    case kFin | kAck:
    case kFin | kAck | kUrg: return Klass::fin;
    case kAck:
    case kAck | kUrg: return Klass::ack;
    default: return Klass::invalid;
    }
}

// A set of states as a bit mask, so rules read as in_state(s, of(A, B)) (seastar's tcp style) rather
// than as chains of comparisons. The public State stays a plain index: it numbers arrays and matches
// netfilter's values.
template <typename... S>
constexpr uint16_t of(S... s) noexcept
{
    return static_cast<uint16_t>(((1u << static_cast<unsigned>(s)) | ...));
}
constexpr bool in_state(State s, uint16_t set) noexcept
{
    return static_cast<unsigned>(s) < kStateCount && ((set >> static_cast<unsigned>(s)) & 1u) != 0;
}

constexpr uint8_t fin_bit(Dir d) noexcept
{
    return d == Dir::orig ? kFinOrig : kFinReply;
}

} // namespace flowcop::tcpstate::detail
