// SPDX-License-Identifier: BSD-3-Clause
// window_create() and track_full(): the state machine (step) and the window check (check_window) composed
// in netfilter's tcp_packet() order: the transition first, ignored packets noted, then the RST rules,
// the bounds, and on acceptance the state, the last packet's class and the timeout cap.
#include <tcpstate/window.h>

#include "window_internal.h"

namespace flowcop::tcpstate {
namespace {

using detail::in_state;
using detail::Klass;
using detail::of;

constexpr unsigned side_of(Dir d) noexcept
{
    return d == Dir::orig ? 0u : 1u; // any non-orig value is reply, as in step()
}

// netfilter's sIG cells: packets it lets pass unnoted by the state but notes as its "last" packet, so
// a later RST can be matched to them. (Its sIV cells, which it rejects outright, are noted nowhere.)
constexpr bool netfilter_notes_ignored(State old, unsigned side, Klass k) noexcept
{
    const uint16_t open_to_close =
        of(State::syn_recv, State::established, State::fin_wait, State::close_wait, State::last_ack);
    const uint16_t syn_recv_on = open_to_close | of(State::time_wait, State::close);
    if (k == Klass::synack)
        return in_state(old, syn_recv_on);
    if (side == 0)
        return k == Klass::syn && in_state(old, open_to_close);
    return k == Klass::ack && in_state(old, of(State::syn_sent, State::syn_sent2));
}

void note_ignored(const FlowRef& f, State old, unsigned side, Klass k, const Segment& seg) noexcept
{
    WindowMeta& m = f.meta;
    const Seq end = detail::segment_end(seg);
    m.last_class = static_cast<uint8_t>(k);
    m.last_dir = side;
    m.last_ignored = 1;
    m.last_win_zero = seg.window == 0;
    m.last = end.raw; // the fingerprint is lost: the next ACK-class segment restarts the count
    // Perhaps a challenge ACK (RFC 5961) to the SYN. maxack[reply] is free here: a flow in SYN_SENT has
    // accepted no reply packet (any accepted one leaves SYN_SENT), so maxack_set[reply] is 0.
    if (old == State::syn_sent && k == Klass::ack && side == 1)
        f.seq.maxack[1] = seg.ack;
}

// The end of the last noted packet: kept exactly for an ignored one; for an accepted one, its side's
// highest end, which is the same unless that packet was itself a retransmission.
Seq last_end(const FlowRef& f) noexcept
{
    return f.meta.last_ignored ? Seq(f.meta.last) : f.seq.side[f.meta.last_dir].end;
}

struct RstRule {
    bool refuse = false;     // rst_below_ack
    bool keep_state = false; // in window but not exact: the state stays (challenge ACK)
    bool unchecked = false;  // accepted without the window check
};

// netfilter's tcp_packet() for an RST, before tcp_in_window().
RstRule rst_rule(const FlowRef& f, Tracker old, unsigned side, const Segment& seg, const WindowPolicy& policy) noexcept
{
    RstRule r;
    // The closing states may already be gone from the peers' view (a reused tuple): no check at all.
    if (in_state(old.state, of(State::fin_wait, State::close_wait, State::last_ack, State::time_wait, State::close))) {
        r.unchecked = true;
        return r;
    }
    const WindowMeta& m = f.meta;
    const unsigned peer = side ^ 1u;
    const bool established = old.state == State::established && old.assured();
    const Klass last = static_cast<Klass>(m.last_class);
    if (m.flags[peer].maxack_set && last != Klass::syn) {
        const Seq maxack = f.seq.maxack[peer];
        if (seg.seq.raw == 0 && !established)
            return r; // likely the answer to a SYN let through: the window decides
        if (before(seg.seq, maxack) && !policy.ignore_invalid_rst) {
            r.refuse = true;
            return r;
        }
        if (!established || seg.seq == maxack)
            return r;
        if (last == Klass::ack && m.last_dir == side && seg.seq == last_end(f))
            return r; // data, then an RST right after it from the same side
        r.keep_state = true;
    }
    // An RST answering a SYN or ACK that was let through (ignored) or a half-open flow's ACK.
    if (((old.seen_reply() && last == Klass::syn) || (!old.assured() && last == Klass::ack)) &&
        seg.ack == last_end(f)) {
        r.unchecked = true;
        return r;
    }
    // An RST answering a challenge ACK that the reply sent to our SYN.
    if (old.state == State::syn_sent && last == Klass::ack && m.last_dir == 1 && m.last_ignored &&
        seg.seq == f.seq.maxack[1])
        r.unchecked = true;
    return r;
}

// An accepted packet: the new tracker, the last packet's class and direction, and the timeout cap
// (detail::choose_cap, which the steady ACK's fast path shares).
void commit(const FlowRef& f, Tracker old, Tracker next, unsigned side, Klass k, const WindowPolicy& policy,
            const Timeouts& timeouts) noexcept
{
    f.tracker = next;
    const bool unanswered = !old.seen_reply() && next.state == State::established;
    const Cap cap = detail::choose_cap(f.meta, k == Klass::rst, unanswered, next.state, policy, timeouts);
    detail::note_accepted(f.meta, side, k, cap);
}

} // namespace

void window_create(const FlowRef& f, const Segment& first, const Timeouts& timeouts) noexcept
{
    f.seq = WindowSeq{};
    f.meta = WindowMeta{};
    f.meta.last_class = static_cast<uint8_t>(Klass::invalid);
    WindowSide& orig = f.seq.side[0];
    orig.end = detail::segment_end(first);
    orig.maxwin = first.window == 0 ? 1u : first.window;
    if (f.tracker.state == State::syn_sent) {
        orig.maxend = orig.end;
        if ((first.options & kOptPresent) != 0) {
            f.meta.flags[0].sack_perm = (first.options & kOptSackPerm) != 0;
            f.meta.flags[0].wscale_offered = (first.options & kOptWscale) != 0;
            f.meta.flags[0].scale = (first.options & kOptWscale) != 0 ? first.options & kOptScaleMask : 0;
        }
    } else {
        // Picked up mid-stream: netfilter assumes SACK and checks liberally, as scaling is unknown.
        orig.maxend = orig.end + orig.maxwin;
        f.meta.flags[0].sack_perm = 1;
        f.meta.flags[1].sack_perm = 1;
        f.meta.liberal = 1;
    }
    const Klass k = detail::classify(first.flags);
    // A creating packet is never refused: a SYN is inside by construction, a pickup is liberal.
    detail::check_window(f.seq, f.meta, State::none, 0, first, k, f.meta.liberal);
    commit(f, Tracker{}, f.tracker, 0, k, WindowPolicy{}, timeouts);
}

void note_ignored(const FlowRef& f, Dir dir, const Segment& seg) noexcept
{
    const unsigned side = side_of(dir);
    const Klass k = detail::classify(seg.flags);
    if (netfilter_notes_ignored(f.tracker.state, side, k))
        note_ignored(f, f.tracker.state, side, k, seg);
}

TrackResult track_full(const FlowRef& f, Dir dir, const Segment& seg, const WindowPolicy& policy,
                       const Timeouts& timeouts) noexcept
{
    const Tracker old = f.tracker;
    Tracker next = old;
    const Klass k = detail::classify(seg.flags);
    // steady(): the established flow's plain ACK, which step() would accept unchanged.
    Outcome outcome = steady(old, seg.flags) ? Outcome::ok : step(next, dir, seg.flags);
    if (outcome == Outcome::reopen)
        return {Outcome::reopen, WindowReason::none};
    const unsigned side = side_of(dir);
    if (outcome == Outcome::ignored) {
        if (policy.note_ignored && netfilter_notes_ignored(old.state, side, k))
            note_ignored(f, old.state, side, k, seg);
        return {Outcome::ignored, WindowReason::none};
    }

    RstRule rule;
    if (k == Klass::rst) {
        rule = rst_rule(f, old, side, seg, policy);
        if (rule.refuse)
            return {Outcome::out_of_window, WindowReason::rst_below_ack};
    }
    if (!rule.unchecked) {
        const bool liberal = policy.be_liberal || f.meta.liberal;
        const WindowReason why = detail::check_window(f.seq, f.meta, old.state, side, seg, k, liberal);
        if (why != WindowReason::none && !liberal)
            return {Outcome::out_of_window, why};
    }
    if (rule.keep_state) {
        next.state = old.state;
        outcome = Outcome::ok;
    }
    commit(f, old, next, side, k, policy, timeouts);
    return {outcome, WindowReason::none};
}

const char* window_reason_name(WindowReason r) noexcept
{
    switch (r) {
    case WindowReason::none: return "none";
    case WindowReason::seq_above_window: return "seq_above_window";
    case WindowReason::ack_above_sent: return "ack_above_sent";
    case WindowReason::rst_below_ack: return "rst_below_ack";
    case WindowReason::seq_overshoot: return "seq_overshoot";
    case WindowReason::seq_below_window: return "seq_below_window";
    case WindowReason::ack_below_window: return "ack_below_window";
    case WindowReason::count: break;
    }
    return "unknown";
}

} // namespace flowcop::tcpstate
