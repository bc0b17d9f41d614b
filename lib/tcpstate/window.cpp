// SPDX-License-Identifier: BSD-3-Clause
// check_window(): the four bounds and the updates that follow an in-window segment, in the order
// netfilter's tcp_in_window() applies them (window.h has the contract, tcp-tracking.md the rules).
#include <tcpstate/window.h>

#include "window_internal.h"

namespace flowcop::tcpstate::detail {
namespace {

// A SYN (or SYN-ACK) starts this side afresh: its end, a maxend equal to it until the peer's window is
// known, and, when the header had options, its window scale and SACK permitted (netfilter's
// tcp_init_sender()). RFC 7323 2.2: scaling applies only when both SYNs offered it.
void init_sender(WindowSide& snd, SideFlags& sf, SideFlags& rf, const Segment& seg, Seq end, bool reply) noexcept
{
    snd.end = end;
    snd.maxend = end;
    snd.maxwin = seg.window == 0 ? 1u : seg.window;
    if ((seg.options & kOptPresent) != 0) {
        sf = SideFlags{};
        sf.sack_perm = (seg.options & kOptSackPerm) != 0;
        if ((seg.options & kOptWscale) != 0) {
            sf.wscale_offered = 1;
            sf.scale = seg.options & kOptScaleMask;
        }
    }
    if (reply && !(sf.wscale_offered && rf.wscale_offered)) {
        sf.scale = 0;
        rf.scale = 0;
    }
}

} // namespace

WindowReason check_window(WindowSeq& ws, WindowMeta& m, State old, unsigned side, const Segment& seg, Klass k,
                          bool /*liberal*/) noexcept
{
    WindowSide& snd = ws.side[side];
    WindowSide& rcv = ws.side[side ^ 1u];
    SideFlags& sf = m.flags[side];
    SideFlags& rf = m.flags[side ^ 1u];
    const bool syn = (seg.flags & bit(Flag::syn)) != 0;
    const bool has_ack = (seg.flags & bit(Flag::ack)) != 0;
    const bool rst = (seg.flags & bit(Flag::rst)) != 0;
    Seq seq = seg.seq;
    Seq ack = seg.ack;
    Seq sack = rf.sack_perm ? seg.sack : seg.ack;
    Seq end = segment_end(seg);

    if (snd.maxwin == 0) {
        if (syn) {
            init_sender(snd, sf, rf, seg, end, side == 1);
            if (!has_ack)
                return WindowReason::none; // the reply's SYN of a simultaneous open
        } else {
            // The first segment from a side picked up mid-stream: its history is lost, learn from it.
            snd.end = end;
            const uint32_t swin = uint32_t{seg.window} << sf.scale;
            snd.maxwin = swin == 0 ? 1u : swin;
            snd.maxend = end + snd.maxwin;
            if (rcv.maxwin == 0) {
                rcv.end = sack; // nothing from the other side yet: let III and IV pass until it speaks
                rcv.maxend = sack;
            } else if (sack == rcv.end + 1) {
                rcv.end = rcv.end + 1; // the answer to a keep-alive probe, whose byte was never sent
            }
        }
    } else if (syn && after(end, snd.end) && (old == State::syn_sent || old == State::syn_recv)) {
        // RFC 793: a reinitialised end may reuse the connection with higher sequence numbers.
        init_sender(snd, sf, rf, seg, end, side == 1);
        if (side == 1 && !has_ack)
            return WindowReason::none;
    }

    if (!has_ack || (rst && ack.raw == 0)) {
        ack = rcv.end; // no acknowledgement (or a broken stack's RST+ACK with ack 0): assume the right one
        sack = rcv.end;
    }
    if (rst && seq.raw == 0 && old == State::syn_sent) {
        seq = snd.end; // an RST answering a SYN, sent with sequence 0
        end = snd.end;
    }

    const Bounds b = bounds_of(snd, rcv, seq, end, sack);
    WindowReason why = WindowReason::none;
    if (!b.seq_in) { // I fails
        const bool end_in_window = rcv.maxwin != 0 && b.end_recent;
        const uint32_t overshoot = end - snd.maxend + 1;
        if (end_in_window && b.ack_recent && b.ack_sent && overshoot <= rcv.maxwin) {
            // A sender that overran the receiver's window a little: if the receiver acknowledges it,
            // later ACKs must not fail III, so its end is learnt although the segment is refused.
            snd.end = end;
            sf.unacked = 1;
            why = WindowReason::seq_overshoot;
        } else {
            why = WindowReason::seq_above_window;
        }
    } else if (!b.ack_sent) { // III
        why = WindowReason::ack_above_sent;
    } else if (!b.end_recent) { // II
        why = WindowReason::seq_below_window;
    } else if (!b.ack_recent) { // IV
        why = WindowReason::ack_below_window;
    }
    if (why != WindowReason::none)
        return why; // nothing is learnt from it, even when liberal mode then accepts it

    // Inside: the sender's largest window, end and highest ack; the receiver's allowance.
    learn_inside(ws, m, side, seg, seq, ack, sack, end, syn, has_ack, k == Klass::ack);
    return why;
}

} // namespace flowcop::tcpstate::detail
