// SPDX-License-Identifier: BSD-3-Clause
// Seq: a TCP sequence number, compared modulo 2^32 (RFC 793 3.3, RFC 1982 serial arithmetic).
//
// Contract: plain 4-byte value type, trivially copyable, zero-initialisable. Adding or subtracting an
// offset wraps at 2^32 (unsigned arithmetic, never a signed overflow); before()/after() compare by
// the sign of the 32-bit difference, so a is before b when b - a is in [1, 2^31). Two numbers exactly
// 2^31 apart are neither before nor after each other in both directions' sense only through that
// rule: before(a, b) is then true for the pair whose difference reads as negative (int32 min), as in
// Linux's before()/after(); netfilter's bounds rely on exactly that definition. constexpr, noexcept.
#pragma once

#include <cstdint>

namespace flowcop::tcpstate {

struct Seq {
    uint32_t raw = 0;

    constexpr Seq() noexcept = default;
    constexpr explicit Seq(uint32_t v) noexcept : raw(v) {}

    constexpr Seq operator+(uint32_t n) const noexcept { return Seq(raw + n); }
    constexpr Seq operator-(uint32_t n) const noexcept { return Seq(raw - n); }
    // The distance from b up to a, modulo 2^32 (how far a is after b when it is).
    constexpr uint32_t operator-(Seq b) const noexcept { return raw - b.raw; }
    constexpr bool operator==(const Seq&) const noexcept = default;
};

// a < b modulo 2^32: Linux's before(a, b).
constexpr bool before(Seq a, Seq b) noexcept
{
    return static_cast<int32_t>(a.raw - b.raw) < 0;
}
// a > b modulo 2^32: Linux's after(a, b).
constexpr bool after(Seq a, Seq b) noexcept
{
    return before(b, a);
}

} // namespace flowcop::tcpstate
