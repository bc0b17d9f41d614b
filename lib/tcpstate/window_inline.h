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
//   packet sets already set), steady_window() holds (both sides seen, both highest acks known) and all
//   four bounds hold: then netfilter's tcp_packet() runs no RST rule, no (re)initialisation and no
//   state change, and only the in-window updates and the cap remain. A liberal flow takes it too
//   (liberal mode only changes what happens outside the bounds). tests/tcpstate/test_window_steady.cpp
//   runs both paths on random and crafted segment sequences and compares every field.
// - Pure, noexcept, no allocation, one thread per flow (window.h).
#pragma once

#include <tcpstate/window.h>

#include <tcpstate/tcp_state_detail.h>

#include <bit>
#include <cstddef>

namespace flowcop::tcpstate {
namespace detail {

// What fingerprint() hashes of a segment: seq and ack as one 64-bit word (seq low), the raw window and
// the segment's length (end - seq) as another (the window low), as packet::TcpLite holds them in memory
// side by side: the steady lane loads the two words, the full path builds them (fingerprint_in()).
struct FingerprintIn {
    uint64_t seq_ack;
    uint64_t window_len;
};
constexpr FingerprintIn fingerprint_in(Seq seq, Seq ack, uint32_t len, uint16_t window) noexcept
{
    return {uint64_t{seq.raw} | uint64_t{ack.raw} << 32, uint64_t{window} | uint64_t{len} << 16};
}

// What steady_ack() reads of the segment only after its first store: the raw window and the
// fingerprint's words.
struct SteadyLate {
    uint16_t window;
    FingerprintIn fp_in;
};

// 32 bits of (direction, seq, ack, length, raw window): equal for a segment sent again unchanged, and
// equal for two different segments with probability about 2^-32, which can only add one to a count the
// next different segment resets (three in a row are needed to cap a timeout). A CRC-32C chain over the
// two words seeded with the direction where the CPU has the instruction (SSE 4.2, ARMv8 CRC: two
// instructions), else multiplicative hashing; both paths call this one function, so either is exact. Not
// part of a flow's meaning: under a build with another function a restored flow's count restarts.
inline uint32_t fingerprint(unsigned side, FingerprintIn in) noexcept
{
#if defined(__SSE4_2__)
    return uint32_t(__builtin_ia32_crc32di(__builtin_ia32_crc32di(side, in.seq_ack), in.window_len));
#elif defined(__ARM_FEATURE_CRC32)
    return __builtin_arm_crc32cd(__builtin_arm_crc32cd(side, in.seq_ack), in.window_len);
#else
    const uint64_t h = (in.seq_ack ^ side) * 0x9e3779b97f4a7c15ull ^ in.window_len * 0xc2b2ae3d27d4eb4full;
    return uint32_t(h >> 32 ^ h);
#endif
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
        const uint32_t fp = fingerprint(side, fingerprint_in(seq, ack, end - seq, seg.window));
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

// What every accepted packet notes: its class and direction, and the cap it chose.
inline void note_accepted(WindowMeta& m, unsigned side, Klass k, Cap cap) noexcept
{
    m.last_class = static_cast<uint8_t>(k);
    m.last_dir = side;
    m.last_ignored = 0;
    m.cap = static_cast<uint8_t>(cap);
}

// WindowMeta as one 64-bit word (the steady ACK's path reads and writes its low half whole and `last`
// apart, never field by field: gcc's bitfield read-modify-writes cost ~30 instructions there). The bit of
// each field is taken from the compiler's own layout of the bitfields (std::bit_cast of a WindowMeta with
// that field set), so the full path's bitfields and the steady path's masks cannot disagree.
namespace meta_bits {
template <typename Set>
constexpr uint64_t word_of(Set set) noexcept
{
    WindowMeta m{};
    set(m);
    return std::bit_cast<uint64_t>(m);
}
inline constexpr uint64_t kSackPerm0 = word_of([](WindowMeta& m) { m.flags[0].sack_perm = 1; });
inline constexpr uint64_t kUnacked0 = word_of([](WindowMeta& m) { m.flags[0].unacked = 1; });
inline constexpr uint64_t kUnacked1 = word_of([](WindowMeta& m) { m.flags[1].unacked = 1; });
inline constexpr uint64_t kMaxackSet0 = word_of([](WindowMeta& m) { m.flags[0].maxack_set = 1; });
inline constexpr uint64_t kScale0 = word_of([](WindowMeta& m) { m.flags[0].scale = 15; });
inline constexpr uint64_t kRetrans = word_of([](WindowMeta& m) { m.retrans = 127; });
inline constexpr uint64_t kLastIgnored = word_of([](WindowMeta& m) { m.last_ignored = 1; });
inline constexpr uint64_t kLiberal = word_of([](WindowMeta& m) { m.liberal = 1; });
inline constexpr uint64_t kLastDir = word_of([](WindowMeta& m) { m.last_dir = 1; });
inline constexpr uint64_t kLastClass = word_of([](WindowMeta& m) { m.last_class = 7; });
inline constexpr uint64_t kLastWinZero = word_of([](WindowMeta& m) { m.last_win_zero = 1; });
inline constexpr uint64_t kCap = word_of([](WindowMeta& m) { m.cap = 3; });
inline constexpr uint64_t kLast = word_of([](WindowMeta& m) { m.last = UINT32_MAX; });
inline constexpr uint64_t kAckClass = word_of([](WindowMeta& m) { m.last_class = static_cast<uint8_t>(Klass::ack); });
// The steady path's arithmetic relies on this much of the layout: each side's flags in its own byte
// (side 1's = side 0's << 8), scale in the low bits, the count in byte 2 under last_ignored, the
// fingerprint in the high half, and the per-packet notes (dir, class, zero window, cap) in byte 3.
static_assert(kScale0 == 0x0f && kSackPerm0 < 0x100 && kUnacked0 < 0x100 && kMaxackSet0 < 0x100);
static_assert(kUnacked1 == kUnacked0 << 8);
static_assert(kRetrans == 0x7full << 16 && kLastIgnored == 0x80ull << 16);
static_assert(((kLiberal | kLastDir | kLastClass | kLastWinZero | kCap) >> 24) == 0xff && kCap >> 30 == 3);
static_assert(kLast == 0xffffffffull << 32 && offsetof(WindowMeta, last) == 4);
} // namespace meta_bits

// steady_ack()'s flag in its result: the flow no longer meets steady_window() (not a Cap's bit).
inline constexpr int kSteadyLost = 8;

// The steady established ACK, fused: the four bounds without a branch between them, then every update
// learn_inside() makes for it (syn false, an ACK, ACK class) as conditional moves, the meta's low half
// rebuilt at once, and the cap from the prepared table. Exactly what track_full() leaves for such a
// segment (tests/tcpstate/test_window_steady.cpp compares them field by field), but for meta.cap,
// which it leaves as it was: it returns the change instead, the Cap it chose exclusive-or meta.cap, with
// kSteadyLost or-ed in when the flow no longer meets steady_window() after it, and the caller applies
// it (note_cap()) when it is not 0. So the common result, 0, says at once that nothing else is to be
// done (a flow table's deadline uses meta.cap). -1, with nothing written, when a bound fails (the
// reason, overshoot learning, liberal mode and a side's first segment are track_full's).
// Precondition: steady(tracker, seg.flags) and steady_window(ws, meta) (the flow table keeps both in
// one eligibility bit, FlowRecord::kSteady, and tests the segment's class). The side is a constant, so
// every field is at a fixed offset (a runtime side cost 74 more instructions per packet in gcc's code,
// register spills).
// What the bounds need of the segment arrives as values; what only the updates need (the raw window, the
// fingerprint's words) `late()` reads after the first store: the flow's fields could alias the segment as
// far as the compiler knows, so a segment in memory is read there again, not held in a register (or
// spilled) across the bounds.
// `accepted()` runs once the bounds hold, before any of the window's stores: a caller's own updates of
// an accepted packet (counters, last seen) go there, so the values they need die before the window's
// ~20 live values are computed (a caller that did them after this returned kept them spilled across it).
template <unsigned kSide, typename Late, typename Accepted>
[[gnu::always_inline]] inline int steady_ack(WindowSeq& ws, WindowMeta& meta, Seq seq, Seq ack, Seq sack_field,
                                             uint32_t payload_len, Late&& late, const SteadyRules& rules,
                                             Accepted&& accepted) noexcept
{
    using namespace meta_bits;
    constexpr unsigned kPeer = kSide ^ 1u;
    constexpr unsigned kSndShift = kSide * 8u, kRcvShift = kPeer * 8u;
    WindowSide& snd = ws.side[kSide];
    WindowSide& rcv = ws.side[kPeer];
    // The low half (both sides' flags, the count, the notes): `last` (the high half) is only compared and
    // stored, each as a 32-bit access of its own.
    uint32_t m;
    __builtin_memcpy(&m, &meta, sizeof m);
    const Seq sack = (m & kSackPerm0 << kRcvShift) ? sack_field : ack;
    const Seq end = seq + payload_len; // no SYN, no FIN: nothing else counts

    // I seq <= snd.maxend; II end > snd.end - rcv.maxwin (both sides seen: steady_window); III sack <=
    // rcv.end; IV sack > rcv.end - max(snd.maxwin, kMaxAckWindowSlack). Each as the sign of a 32-bit
    // value, and-ed: one branch.
    const uint32_t snd_maxwin = snd.maxwin, rcv_maxwin = rcv.maxwin;
    const uint32_t max_ack_window = snd_maxwin > kMaxAckWindowSlack ? snd_maxwin : kMaxAckWindowSlack;
    const int32_t in1 = int32_t(seq.raw - (snd.maxend.raw + 1));
    const int32_t in2 = int32_t(snd.end.raw - rcv_maxwin - 1 - end.raw);
    const int32_t in3 = int32_t(sack.raw - (rcv.end.raw + 1));
    const int32_t in4 = int32_t(rcv.end.raw - max_ack_window - 1 - sack.raw);
    if ((in1 & in2 & in3 & in4) >= 0)
        return -1;
    accepted();
    // What needs the segment's raw window first, so it does not stay live (spilled) to the end.
    const SteadyLate seg = late();
    const uint32_t fp = fingerprint(kSide, seg.fp_in);
    const uint32_t win = uint32_t{seg.window} << ((m >> kSndShift) & kScale0);
    const bool zero = win == 0; // window == 0: shifted by at most 15, no 16-bit window loses its bits
    const uint32_t swin = win + (sack - ack);
    snd.maxwin = snd_maxwin < swin ? swin : snd_maxwin;
    const bool advances = after(end, snd.end);
    snd.end = advances ? end : snd.end;
    ws.maxack[kSide] = after(ack, ws.maxack[kSide]) ? ack : ws.maxack[kSide]; // maxack_set: steady_window()
    // Grows only past the receiver's allowance: a forged stream could wrap it to 0 (an unseen side).
    const uint32_t rcv_maxwin_now = after(end, snd.maxend) ? rcv_maxwin + (end - snd.maxend) : rcv_maxwin;
    rcv.maxwin = rcv_maxwin_now;
    const Seq allowed = sack + win;
    rcv.maxend = after(allowed, rcv.maxend - 1) ? allowed + (zero ? 1u : 0u) : rcv.maxend; // a 1-byte probe

    // Both sides' flags: when the end advanced, data unacknowledged for the sender; the receiver's
    // unacknowledged data all acknowledged when the ack reaches its end (maxack_set is set already).
    // With them, the notes kept (liberal, the cap): one mask of m.
    uint32_t flags = (m & uint32_t(0xffffu | kLiberal | kCap)) | (advances ? uint32_t(kUnacked0 << kSndShift) : 0);
    flags &= ~(ack == rcv.end ? uint32_t(kUnacked0 << kRcvShift) : 0);
    // The cap: from fresh[] for a segment that is not a repeat (nearly every one), its retransmission count
    // 0; a repeat counts on and reads cap[] (written as one choice of count, gcc kept two copies of the
    // word's tail, or-ing in zeros and testing 0 against the limit in the common one). fresh[] is cap[]'s
    // even half, kept apart because indexing cap[] by the facts doubled cost one more instruction.
    const unsigned facts = ((flags & (kUnacked0 | kUnacked1)) ? 1u : 0u) | (zero ? 2u : 0u);
    // Byte 2: the count, 0 but for a repeat. Byte 3: liberal and the cap kept; this packet's direction,
    // class (ack) and zero window.
    uint32_t word = flags | uint32_t(kAckClass | (kSide ? kLastDir : 0)) | (zero ? uint32_t(kLastWinZero) : 0);
    uint32_t cap = static_cast<uint8_t>(rules.fresh[facts]);
    // meta.last read where it is compared (the load folds into the compare), and written here, apart
    // from the low half: two 32-bit stores, as the next segment's two loads read them (gcc merged the
    // two when they were side by side, into three instructions through a vector register).
    const bool repeat = fp == meta.last && !(m & kLastIgnored);
    meta.last = fp;
    if (repeat) [[unlikely]] {
        const uint32_t retrans = (m >> 16) & 0x7fu;
        const uint32_t count = retrans + (retrans < WindowPolicy::kMaxMaxRetrans ? 1u : 0u);
        word |= count << 16;
        cap = static_cast<uint8_t>(rules.cap[(count >= rules.max_retrans ? 1u : 0u) | facts << 1]);
    }
    __builtin_memcpy(&meta, &word, sizeof word);
    // The cap is m's top two bits (static_assert above): no mask.
    const uint32_t cap_before = m >> __builtin_ctzll(kCap);
    if (cap == cap_before && rcv_maxwin_now != 0) [[likely]]
        return 0;
    return static_cast<int>(cap ^ cap_before) | (rcv_maxwin_now == 0 ? kSteadyLost : 0);
}

// steady_ack()'s change (a result >= 0) applied to meta.cap, where the full path's note_accepted() keeps
// the cap.
inline void note_cap(WindowMeta& meta, int steady_change) noexcept
{
    meta.cap = uint8_t(meta.cap ^ (steady_change & 3));
}
static_assert(kCapCount == 4 && kSteadyLost > 3);

} // namespace detail

// The window's part of the fused path's precondition: both sides seen (maxwin != 0) and each side's
// highest ack known (maxack_set), as every flow whose tracker is steady (a reply seen, every segment but a
// first SYN an ACK) has, unless forged segments wrapped a side's allowance to 0. The fused path then
// neither tests nor sets maxack_set.
constexpr bool steady_window(const WindowSeq& ws, const WindowMeta& m) noexcept
{
    return ws.side[0].maxwin != 0 && ws.side[1].maxwin != 0 && m.flags[0].maxack_set && m.flags[1].maxack_set;
}

inline SteadyRules steady_rules(const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    SteadyRules r;
    r.max_retrans = policy.max_retrans;
    for (unsigned i = 0; i < 8; ++i) {
        // A flow with exactly the three facts of index i (retrans at the limit, or 0), through choose_cap()
        // itself. With a limit of 0 an even index's 0 is at it too: its entry equals the odd one's.
        WindowMeta m{};
        m.retrans = (i & 1u) ? policy.max_retrans & 0x7fu : 0;
        m.flags[0].unacked = (i & 2u) ? 1 : 0;
        m.last_win_zero = (i & 4u) ? 1 : 0;
        r.cap[i] = detail::choose_cap(m, false, false, State::established, policy, timeouts);
    }
    for (unsigned i = 0; i < 4; ++i)
        r.fresh[i] = r.cap[i << 1];
    return r;
}

[[gnu::always_inline]] inline bool track_steady(const FlowRef& f, Dir dir, const Segment& seg,
                                                const SteadyRules& rules) noexcept
{
    // Any non-orig value is reply, as in step().
    const unsigned side = dir == Dir::orig ? 0u : 1u;
    if (!steady(f.tracker, seg.flags) || !steady_window(f.seq, f.meta))
        return false;
    const auto late = [&] {
        return detail::SteadyLate{seg.window, detail::fingerprint_in(seg.seq, seg.ack, seg.payload_len, seg.window)};
    };
    const int change =
        side == 0
            ? detail::steady_ack<0>(f.seq, f.meta, seg.seq, seg.ack, seg.sack, seg.payload_len, late, rules, [] {})
            : detail::steady_ack<1>(f.seq, f.meta, seg.seq, seg.ack, seg.sack, seg.payload_len, late, rules, [] {});
    if (change < 0)
        return false;
    detail::note_cap(f.meta, change);
    return true;
}

[[gnu::always_inline]] inline bool track_steady(const FlowRef& f, Dir dir, const Segment& seg,
                                                const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    return track_steady(f, dir, seg, steady_rules(policy, timeouts));
}

[[gnu::always_inline]] inline TrackResult track(const FlowRef& f, Dir dir, const Segment& seg,
                                                const WindowPolicy& policy, const Timeouts& timeouts,
                                                const SteadyRules& rules) noexcept
{
    if (track_steady(f, dir, seg, rules)) [[likely]]
        return {Outcome::ok, WindowReason::none};
    return track_full(f, dir, seg, policy, timeouts);
}

[[gnu::always_inline]] inline TrackResult track(const FlowRef& f, Dir dir, const Segment& seg,
                                                const WindowPolicy& policy, const Timeouts& timeouts) noexcept
{
    return track(f, dir, seg, policy, timeouts, steady_rules(policy, timeouts));
}

} // namespace flowcop::tcpstate
