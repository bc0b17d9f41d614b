// SPDX-License-Identifier: BSD-3-Clause
// segment_of(): the Segment (window.h) of a parsed TCP packet (packet.h). Header-only, so lib/tcpstate
// itself links nothing of lib/packet (window.h takes only its option bit constants); whoever includes
// this links both. Pure, noexcept.
// Precondition: p.verdict == Verdict::tcp (the other verdicts leave the TCP fields 0).
#pragma once

#include <packet/packet.h>
#include <packet/tcp_options.h>
#include <tcpstate/window.h>

namespace flowcop::tcpstate {

constexpr Segment segment_of(const packet::Packet& p) noexcept
{
    return Segment{Seq(p.seq), Seq(p.ack), Seq(p.sack), p.l4_payload_len, p.window, p.tcp_flags, p.tcp_opt};
}

} // namespace flowcop::tcpstate
