// SPDX-License-Identifier: BSD-3-Clause
// Private to lib/tcpstate: the window check itself (netfilter's tcp_in_window), shared by window_create()
// and track_full() in window_track.cpp. The rules it shares with the steady ACK's fast path are in
// window_inline.h.
#pragma once

#include <tcpstate/window.h>

#include <tcpstate/tcp_state_detail.h>

namespace flowcop::tcpstate::detail {

// The sequence number just past the segment: SYN and FIN each count one.
constexpr Seq segment_end(const Segment& s) noexcept
{
    return s.seq + s.payload_len + ((s.flags & bit(Flag::syn)) ? 1u : 0u) + ((s.flags & bit(Flag::fin)) ? 1u : 0u);
}

// Checks the segment from `side` (0 orig, 1 reply) against the four bounds and, when it is inside
// them, updates both sides as netfilter does (including the retransmission count for ACK-class
// segments). `old` is the flow's state before this packet. Returns WindowReason::none when inside (or
// when netfilter accepts without looking: a SYN that (re)initialises a side without ACK).
WindowReason check_window(WindowSeq& ws, WindowMeta& m, State old, unsigned side, const Segment& seg, Klass k,
                          bool liberal) noexcept;

} // namespace flowcop::tcpstate::detail
