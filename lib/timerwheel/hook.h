// SPDX-License-Identifier: BSD-3-Clause
// Contract: Hook is the wheel's per-element linkage, 12 bytes embedded in the caller's element (a flow
// record). It holds the element's neighbours in its bucket list (as element indices) and the low 32 bits
// of the absolute tick the wheel last placed it at (the "cached due", which may be earlier than the
// element's true deadline, never later). The caller owns the storage and must call init_hook() before the
// element's first schedule() and after abandoning a wheel; the wheel writes the hook only from inside
// schedule(), cancel() and expire(). There is deliberately no owner pointer (see timer_wheel.h).
#pragma once

#include <cstdint>

namespace flowcop::timerwheel {

// End of a bucket list, or "no element". Element indices must be < 0xfffffffe so that both this and
// detail::kUnlinked can never be confused with a real element.
inline constexpr uint32_t kNil = 0xffffffffu;

namespace detail {
// Stored in Hook::prev of an element that is in no bucket. A linked element's prev is either kNil (it is
// its bucket's head) or a real index, so this one field answers is_scheduled().
inline constexpr uint32_t kUnlinked = 0xfffffffeu;
} // namespace detail

struct Hook {
    uint32_t prev; // previous element in the bucket, kNil at the head, detail::kUnlinked if not scheduled
    uint32_t next; // next element in the bucket, kNil at the tail
    uint32_t due;  // low 32 bits of the absolute due tick; due & (buckets - 1) is the bucket
};
static_assert(sizeof(Hook) == 12);

// Marks the element "not scheduled". Cheap enough for the flow-insert path.
inline void init_hook(Hook& h) noexcept
{
    h.prev = detail::kUnlinked;
    h.next = kNil;
    h.due = 0;
}

} // namespace flowcop::timerwheel
