// SPDX-License-Identifier: BSD-3-Clause
// The inline half of window tracking (window.h includes it at its end): the rules both of track()'s
// paths apply, and track() itself, which takes the steady established ACK through a fast path
// (track_steady) and every other packet through the full one (track_full, window_track.cpp).
//
// Contract
// - The rules here are the single source of what they decide: netfilter's four bounds (bounds_of),
//   what an in-window segment teaches the window (learn_inside) and the timeout cap an accepted packet
//   chooses (choose_cap). check_window() (window.cpp) and commit() (window_track.cpp) call the same
//   functions, so the fast path cannot drift from the full one; namespace detail: not for callers.
// - track_steady() is exact, not an approximation: when it returns true, the flow (tracker, WindowSeq,
//   WindowMeta) holds byte for byte what track_full() would have left and the result is {ok, none};
//   when it returns false it has written nothing and the caller runs track_full(). It takes a segment
//   only when steady() holds (ESTABLISHED, ACK class: no SYN, FIN or RST, every tracker bit such a
//   packet sets already set), the sender's side has been seen (maxwin != 0) and all four bounds hold:
//   then netfilter's tcp_packet() runs no RST rule, no (re)initialisation and no state change, and only
//   the in-window updates and the cap remain. A liberal flow takes it too (liberal mode only changes
//   what happens outside the bounds). tests/tcpstate/test_window_steady.cpp runs both paths on random
//   and crafted segment sequences and compares every field.
// - Pure, noexcept, no allocation, one thread per flow (window.h).
#pragma once

#include <tcpstate/window.h>

#include <tcpstate/tcp_state_detail.h>

namespace flowcop::tcpstate {
namespace detail {

// 32 bits of (direction, seq, ack, end, raw window): equal for a segment sent again unchanged, and
// equal for two different segments with probability 2^-32, which can only add one to a count the next
// different segment resets (three in a row are needed to cap a timeout).
constexpr uint32_t fingerprint(unsigned side, Seq seq, Seq ack, Seq end, uint16_t window) noexcept
{
    const uint32_t h = seq.raw * 0x9e3779b1u ^ ack.raw * 0x85ebca77u ^ end.raw * 0xc2b2ae3du ^
                       ((uint32_t{window} << 1 | side) * 0x27d4eb2fu);
    return h ^ (h >> 15);
}

// netfilter's four bounds for a segment [seq, end) from `snd` that acknowledges up to `sack`.
struct Bounds {
    bool seq_in;     // I: seq <= snd.maxend
    bool end_recent; // II: nothing known of the receiver's window, or end > snd.end - rcv.maxwin
    bool ack_sent;   // III: sack <= rcv.end
    bool ack_recent; // IV: sack > rcv.end - max(snd.maxwin, kMaxAckWindowSlack)
    constexpr bool all() const noexcept { return seq_in && end_recent && ack_sent && ack_recent; }
};
constexpr Bounds bounds_of(const WindowSide& snd, const WindowSide& rcv, Seq seq, Seq end, Seq sack) noexcept
{
    const uint32_t max_ack_window = snd.maxwin > kMaxAckWindowSlack ? snd.maxwin : kMaxAckWindowSlack;
    return Bounds{before(seq, snd.maxend + 1), rcv.maxwin == 0 || after(end, snd.end - rcv.maxwin - 1),
                  before(sack, rcv.end + 1), after(sack, rcv.end - max_ack_window - 1)};
}

// An in-window segment from `side`: the sender's largest window, end and highest ack, the receiver's
// allowance, the unacknowledged flags, and for an ACK-class segment the retransmission count.
// `seq`/`ack`/`sack`/`end` are as check_window() settled them (e.g. the receiver's end as the ack of a
// segment without ACK).
inline void learn_inside(WindowSeq& ws, WindowMeta& m, unsigned side, const Segment& seg, Seq seq, Seq ack, Seq sack,
                         Seq end, bool syn, bool has_ack, bool ack_class) noexcept
{
    WindowSide& snd = ws.side[side];
    WindowSide& rcv = ws.side[side ^ 1u];
    SideFlags& sf = m.flags[side];
    uint32_t win = seg.window;
    if (!syn)
        win <<= sf.scale; // a SYN's window is never scaled (RFC 7323 2.2)
    const uint32_t swin = win + (sack - ack);
    if (snd.maxwin < swin)
        snd.maxwin = swin;
    if (after(end, snd.end)) {
        snd.end = end;
        sf.unacked = 1;
    }
    if (has_ack) {
        if (!sf.maxack_set || after(ack, ws.maxack[side]))
            ws.maxack[side] = ack;
        sf.maxack_set = 1;
    }
    if (rcv.maxwin != 0 && after(end, snd.maxend))
        rcv.maxwin += end - snd.maxend;
    if (after(sack + win, rcv.maxend - 1))
        rcv.maxend = sack + win + (win == 0 ? 1u : 0u); // a zero window still admits a 1-byte probe
    if (ack == rcv.end)
        m.flags[side ^ 1u].unacked = 0;

    if (ack_class) {
        const uint32_t fp = fingerprint(side, seq, ack, end, seg.window);
        if (fp == m.last && !m.last_ignored) {
            if (m.retrans < WindowPolicy::kMaxMaxRetrans)
                ++m.retrans;
        } else {
            m.last = fp;
            m.retrans = 0;
        }
        m.last_win_zero = seg.window == 0;
    }
}

// The timeout cap of an accepted packet, in netfilter's order (tcp_packet()'s timeout choice); `next`
// is the flow's new state, `unanswered` true for a flow entering ESTABLISHED that has no accepted reply.
// A cap of 0 s is no cap (capped_timeout()): never chosen, so a lower rule can apply. Always inlined:
// the steady path's constant arguments (no RST, answered, ESTABLISHED) then fold away, and the steady
// packet runs 35 fewer instructions (727 -> 692 per packet, callgrind, tests/benchmarks.md issue 19).
[[gnu::always_inline]] inline Cap choose_cap(const WindowMeta& m, bool rst, bool unanswered, State next,
                                             const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    const uint32_t own = timeouts.effective(next);
    const bool retrans_caps = timeouts.max_retrans != 0 && own > timeouts.max_retrans;
    const bool unacked_caps = timeouts.unacknowledged != 0 && own > timeouts.unacknowledged;
    Cap cap = Cap::none;
    uint32_t chosen = own;
    if (m.retrans >= policy.max_retrans && retrans_caps) {
        cap = Cap::max_retrans;
        chosen = timeouts.max_retrans;
    } else if (rst) {
        cap = Cap::close;
        chosen = timeouts.effective(State::close);
    } else if ((m.flags[0].unacked || m.flags[1].unacked) && unacked_caps) {
        cap = Cap::unacknowledged;
        chosen = timeouts.unacknowledged;
    } else if (m.last_win_zero && retrans_caps) {
        cap = Cap::max_retrans;
        chosen = timeouts.max_retrans;
    }
    // Picked up mid-stream and never answered: not five days of ESTABLISHED.
    if (unanswered && timeouts.unacknowledged != 0 && chosen > timeouts.unacknowledged)
        cap = Cap::unacknowledged;
    return cap;
}

// The index into SteadyRules::cap of a flow after an accepted steady ACK.
inline unsigned steady_cap_index(const WindowMeta& m, uint8_t max_retrans) noexcept
{
    return (m.retrans >= max_retrans ? 1u : 0u) | ((m.flags[0].unacked | m.flags[1].unacked) ? 2u : 0u) |
           (m.last_win_zero ? 4u : 0u);
}

// What every accepted packet notes: its class and direction, and the cap it chose.
inline void note_accepted(WindowMeta& m, unsigned side, Klass k, Cap cap) noexcept
{
    m.last_class = static_cast<uint8_t>(k);
    m.last_dir = side;
    m.last_ignored = 0;
    m.cap = static_cast<uint8_t>(cap);
}

// track_steady() for one side as a constant, so that every index into the flow's arrays is fixed
// (measured with tcp_window_bench under callgrind: 19 instructions per packet fewer than a runtime
// index; copying the window into locals instead cost 57 more: gcc's bitfield code on registers).
// Always inlined, as track() and track_steady() are: 13 fewer (no call, no saved registers).
// The segment is copied: the flow's fields could alias it as far as the compiler knows.
// `cap_of(m)` is the cap of the flow `m` after the packet: from SteadyRules, or choose_cap() itself.
template <unsigned kSide, typename CapOf>
[[gnu::always_inline]] inline bool track_steady_side(const FlowRef& f, const Segment& seg, CapOf&& cap_of) noexcept
{
    WindowSeq& ws = f.seq;
    if (ws.side[kSide].maxwin == 0)
        return false; // the first segment from this side: it initialises the side (track_full)
    WindowMeta& m = f.meta;
    const Segment s = seg;
    const Seq sack = m.flags[kSide ^ 1u].sack_perm ? s.sack : s.ack;
    const Seq end = s.seq + s.payload_len; // no SYN, no FIN: nothing else counts
    if (!bounds_of(ws.side[kSide], ws.side[kSide ^ 1u], s.seq, end, sack).all())
        return false; // outside a bound: the reason, overshoot learning and liberal mode are track_full's
    learn_inside(ws, m, kSide, s, s.seq, s.ack, sack, end, false, true, true);
    // steady() implies a reply was seen, so the one-sided pickup's cap cannot apply; the state stays.
    note_accepted(m, kSide, Klass::ack, cap_of(m));
    return true;
}

} // namespace detail

inline SteadyRules steady_rules(const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    SteadyRules r;
    r.max_retrans = policy.max_retrans;
    for (unsigned i = 0; i < 8; ++i) {
        // A flow with exactly the three facts of index i (retrans at the limit or 0 below it; with a limit
        // of 0 every count is at it, so only odd indexes are ever read), through choose_cap() itself.
        WindowMeta m{};
        m.retrans = (i & 1u) ? policy.max_retrans & 0x7fu : 0;
        m.flags[0].unacked = (i & 2u) ? 1 : 0;
        m.last_win_zero = (i & 4u) ? 1 : 0;
        r.cap[i] = detail::choose_cap(m, false, false, State::established, policy, timeouts);
    }
    return r;
}

[[gnu::always_inline]] inline bool track_steady(const FlowRef& f, Dir dir, const Segment& seg,
                                                const SteadyRules& rules) noexcept
{
    if (!steady(f.tracker, seg.flags))
        return false;
    // The cap from the prepared table (steady_rules(): choose_cap() for each index).
    const auto cap_of = [&](const WindowMeta& m) { return rules.cap[detail::steady_cap_index(m, rules.max_retrans)]; };
    // Any non-orig value is reply, as in step().
    return dir == Dir::orig ? detail::track_steady_side<0>(f, seg, cap_of)
                            : detail::track_steady_side<1>(f, seg, cap_of);
}

[[gnu::always_inline]] inline bool track_steady(const FlowRef& f, Dir dir, const Segment& seg,
                                                const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    if (!steady(f.tracker, seg.flags))
        return false;
    const auto cap_of = [&](const WindowMeta& m) {
        return detail::choose_cap(m, false, false, State::established, policy, timeouts);
    };
    return dir == Dir::orig ? detail::track_steady_side<0>(f, seg, cap_of)
                            : detail::track_steady_side<1>(f, seg, cap_of);
}

[[gnu::always_inline]] inline TrackResult track(const FlowRef& f, Dir dir, const Segment& seg,
                                                const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    if (track_steady(f, dir, seg, policy, timeouts)) [[likely]]
        return {Outcome::ok, WindowReason::none};
    return track_full(f, dir, seg, policy, timeouts);
}

} // namespace flowcop::tcpstate
