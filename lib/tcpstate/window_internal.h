// SPDX-License-Identifier: BSD-3-Clause
// Private to lib/tcpstate: the window check itself (netfilter's tcp_in_window), shared by window_create()
// and track() in window_track.cpp.
#pragma once

#include <tcpstate/window.h>

#include "tcp_state_internal.h"

namespace flowcop::tcpstate::detail {

// The sequence number just past the segment: SYN and FIN each count one.
constexpr Seq segment_end(const Segment& s) noexcept
{
    return s.seq + s.payload_len + ((s.flags & bit(Flag::syn)) ? 1u : 0u) + ((s.flags & bit(Flag::fin)) ? 1u : 0u);
}

// 32 bits of (direction, seq, ack, end, raw window): equal for a segment sent again unchanged, and
// equal for two different segments with probability 2^-32, which can only add one to a count the next
// different segment resets (three in a row are needed to cap a timeout).
constexpr uint32_t fingerprint(unsigned side, Seq seq, Seq ack, Seq end, uint16_t window) noexcept
{
    const uint32_t h = seq.raw * 0x9e3779b1u ^ ack.raw * 0x85ebca77u ^ end.raw * 0xc2b2ae3du ^
                       ((uint32_t{window} << 1 | side) * 0x27d4eb2fu);
    return h ^ (h >> 15);
}

// Checks the segment from `side` (0 orig, 1 reply) against the four bounds and, when it is inside
// them, updates both sides as netfilter does (including the retransmission count for ACK-class
// segments). `old` is the flow's state before this packet. Returns WindowReason::none when inside (or
// when netfilter accepts without looking: a SYN that (re)initialises a side without ACK).
WindowReason check_window(WindowSeq& ws, WindowMeta& m, State old, unsigned side, const Segment& seg, Klass k,
                          bool liberal) noexcept;

} // namespace flowcop::tcpstate::detail
