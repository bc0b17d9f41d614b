// SPDX-License-Identifier: BSD-3-Clause
// Window tracking: whether a TCP segment is inside what each end has sent and allowed, as netfilter's
// tcp_in_window() and the RST rules of its tcp_packet() decide (after van Rooij, "Real Stateful TCP
// Packet Filtering in IP Filter"), combined with the state machine of tcp_state.h. Our own code;
// lib/tcpstate/tcp-tracking.md has the rules, the layout and every known difference from netfilter.
//
// Contract
// - Pure and clock-free: noexcept, no allocation, no global state. The per-flow state is plain data in
//   the caller's flow record, written by one thread at a time (the lcore that owns the flow).
// - Per direction d (Dir::orig, Dir::reply), WindowSeq keeps netfilter's td_end (highest sequence d sent,
//   plus its length), td_maxend (highest sequence the peer allowed d: ack + scaled window), td_maxwin
//   (largest window d advertised; 0 means nothing seen from d yet) and td_maxack (highest ack d sent);
//   WindowMeta keeps per direction the window scale and netfilter's flags (SACK permitted, window scale
//   offered, data unacknowledged, maxack set), and per flow the retransmission count, a 32-bit
//   fingerprint of the last ACK-class segment (netfilter keeps last_seq/ack/end/win: 14 bytes), the
//   last packet's class and direction, whether the flow is liberal (picked up mid-stream) and the
//   timeout cap the last accepted packet chose. WindowState is the two together: 40 bytes, all a flow
//   needs (the flow table's record reserves exactly that).
// - What only ignored packets write and only RSTs read shares bytes with what they make obsolete:
//   while the last noted packet was ignored, WindowMeta::last holds its end instead of a fingerprint
//   (the next ACK-class segment compares against it as netfilter compares against the ignored
//   packet's last_* fields: they differ, the count restarts), and a reply ACK ignored in SYN_SENT
//   (a possible challenge ACK) keeps its ack in maxack[reply], which is unused until a reply packet
//   is accepted, and no accepted reply packet leaves a flow in SYN_SENT.
// - A segment is checked against netfilter's four bounds (I seq <= sender maxend, II end >= sender end
//   - receiver maxwin, III sack <= receiver end, IV sack >= receiver end - max(sender maxwin, 66000));
//   a segment outside them returns Outcome::out_of_window with a WindowReason and changes neither the
//   Tracker nor the deadline inputs (state, cap); like netfilter, it may still teach the window: the
//   first segment seen from a direction initialises it, and an overshoot past the receiver's window by
//   less than its largest window advances the sender's end.
// - Liberal (WindowPolicy::be_liberal, or a flow picked up mid-stream, as netfilter marks those): a
//   segment outside the bounds is accepted (the state machine runs) without updating the window. The
//   RST rules below still apply.
// - RSTs: in FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT and CLOSE an RST is accepted unchecked
//   (netfilter's early-drop states). Otherwise, once the receiver has sent an ACK, an RST whose sequence
//   is before the receiver's highest ack is refused (WindowReason::rst_below_ack) unless
//   ignore_invalid_rst; on an assured ESTABLISHED flow an in-window RST ends the flow only at exactly
//   that ack, or right after the sender's last ACK (a data-then-RST train); any other in-window RST
//   keeps the state (the peer answers with a challenge ACK, RFC 5961) and caps the timeout at CLOSE's.
// - Timeout caps (Cap), chosen in netfilter's order on every accepted packet: max_retrans identical ACK
//   segments in a row -> Timeouts::max_retrans; an RST -> the CLOSE timeout; data unacknowledged in
//   either direction -> Timeouts::unacknowledged; the last ACK advertised a zero window ->
//   Timeouts::max_retrans; a flow in ESTABLISHED that has not seen a reply -> Timeouts::unacknowledged.
//   A cap of 0 s is off: never chosen, so the next rule in that order may apply.
//   The caller's deadline is last_seen + capped_timeout(timeouts, state, cap).
// - Ignored packets (Outcome::ignored) leave the Tracker, the window and the cap as they were; those
//   netfilter also ignores (its sIG) note their class, direction and ends, which later RSTs consult.
//
// Degraded behaviour: a Tracker in State::none or out of range is ignored as step() does; corrupt
// window bytes can make a segment out of window or accepted, never an out-of-range index or a crash.
#pragma once

#include <packet/tcp_options.h>
#include <tcpstate/seq.h>
#include <tcpstate/tcp_state.h>

#include <cstddef>
#include <cstdint>

namespace flowcop::tcpstate {

// Segment::options bits: packet::Packet::tcp_opt's, defined once in lib/packet/tcp_options.h (a
// std-only header of constants: nothing of lib/packet is linked), so a segment carries them unchanged.
inline constexpr uint8_t kOptScaleMask = packet::kTcpOptScaleMask; // window scale shift, 0..14
inline constexpr uint8_t kOptWscale = packet::kTcpOptWscale;       // a window scale option was present
inline constexpr uint8_t kOptSackPerm = packet::kTcpOptSackPerm;   // SACK permitted was present
inline constexpr uint8_t kOptPresent = packet::kTcpOptPresent;     // the header had option bytes

// What window tracking reads of one TCP segment (segment.h builds it from a parsed packet).
struct Segment {
    Seq seq;
    Seq ack;
    Seq sack;             // highest SACK right edge, or ack when the segment has no SACK blocks
    uint32_t payload_len; // TCP payload bytes
    uint16_t window;      // as on the wire, unscaled
    uint8_t flags;        // the TCP flags byte
    uint8_t options;      // kOpt* bits
};

// Why a segment is outside the window. netfilter counts the first three and rst_below_ack in
// conntrack -S's `invalid`; it lets the other two pass unnoticed (NFCT_TCP_IGNORE).
enum class WindowReason : uint8_t {
    none,             // in the window
    seq_above_window, // (I) data past what the receiver allowed
    ack_above_sent,   // (III) acknowledges data the other end has not sent
    rst_below_ack,    // an RST before the highest ack its receiver sent (netfilter's "invalid rst")
    seq_overshoot,    // (I) past the receiver's window by less than its largest window: its end is learnt
    seq_below_window, // (II) an old duplicate: data already acknowledged, retransmitted
    ack_below_window, // (IV) an ACK too old: more than max(sender maxwin, 66000) behind
    count
};
inline constexpr size_t kWindowReasonCount = static_cast<size_t>(WindowReason::count);
// "seq_above_window", ...: metric label values; "unknown" out of range.
const char* window_reason_name(WindowReason r) noexcept;
// True for the reasons netfilter counts as invalid (conntrack -S).
constexpr bool netfilter_counts_invalid(WindowReason r) noexcept
{
    return r == WindowReason::seq_above_window || r == WindowReason::ack_above_sent || r == WindowReason::rst_below_ack;
}

// MAXACKWINCONST: bound IV's slack, netfilter's value (a 64 KiB window plus headers of slack).
inline constexpr uint32_t kMaxAckWindowSlack = 66000;

struct WindowSide {
    Seq end;         // td_end
    Seq maxend;      // td_maxend
    uint32_t maxwin; // td_maxwin, scaled; 0: nothing seen from this side yet
};

// The sequence state: 32 bytes, read and written by every checked segment.
struct WindowSeq {
    WindowSide side[2]; // [Dir]
    Seq maxack[2];      // td_maxack: highest ack each side sent (valid with SideFlags::maxack_set)
};
static_assert(sizeof(WindowSeq) == 32);

struct SideFlags {
    uint8_t scale : 4;          // window scale shift in use for this side's windows
    uint8_t sack_perm : 1;      // this side may send SACK blocks... as netfilter reads it: SACK permitted seen
    uint8_t wscale_offered : 1; // this side's SYN carried a window scale option
    uint8_t unacked : 1;        // this side sent data the other has not acknowledged
    uint8_t maxack_set : 1;     // maxack[side] holds an ack this side sent
};

enum class Cap : uint8_t { none, max_retrans, unacknowledged, close };
inline constexpr size_t kCapCount = 4;

// Per-flow bits beside the sequence state: 8 bytes.
struct WindowMeta {
    SideFlags flags[2];        // [Dir]
    uint8_t retrans : 7;       // identical ACK-class segments in a row, saturating at 127
    uint8_t last_ignored : 1;  // the last noted packet was ignored: `last` holds its end
    uint8_t liberal : 1;       // picked up mid-stream: out-of-window segments pass (netfilter's per-flow flag)
    uint8_t last_dir : 1;      // direction of the last noted packet
    uint8_t last_class : 3;    // its class (detail::Klass); Klass::invalid before any
    uint8_t last_win_zero : 1; // the last ACK-class segment advertised a zero window
    uint8_t cap : 2;           // Cap chosen by the last accepted packet
    // last_ignored == 0: a fingerprint of the last ACK-class segment (dir, seq, ack, end, raw window);
    // last_ignored == 1: the end (Seq::raw) of the ignored packet, which the RST rules compare with.
    uint32_t last;
    Cap timeout_cap() const noexcept { return static_cast<Cap>(cap); }
};
static_assert(sizeof(WindowMeta) == 8);

// Everything window tracking keeps per flow, in the flow table's record (flow_record.h).
struct WindowState {
    WindowSeq seq;
    WindowMeta meta;
};
static_assert(sizeof(WindowState) == 40, "the flow record reserves 40 bytes");

// The timeout of a flow in state s whose last accepted packet chose cap c: the state's own
// (Timeouts::effective), lowered to the cap's; a cap of 0 seconds is no cap. Never 0.
constexpr uint32_t capped_timeout(const Timeouts& t, State s, Cap c) noexcept
{
    const uint32_t own = t.effective(s);
    const uint32_t cap = c == Cap::max_retrans      ? t.max_retrans
                         : c == Cap::unacknowledged ? t.unacknowledged
                         : c == Cap::close          ? t.effective(State::close)
                                                    : 0;
    return cap != 0 && cap < own ? cap : own;
}

// Everything tracked per flow, as references so a flow record can place each part where it likes.
struct FlowRef {
    Tracker& tracker;
    WindowSeq& seq;
    WindowMeta& meta;
};

// The operator's choices, flowcop's options of the same names (live-settable with /flowcop/set).
struct WindowPolicy {
    bool be_liberal = false;                  // --tcp-be-liberal: out-of-window segments pass, RST rules stay
    bool ignore_invalid_rst = false;          // --tcp-ignore-invalid-rst: rst_below_ack is not refused
    uint8_t max_retrans = kDefaultMaxRetrans; // --tcp-max-retrans, 1..127
    // netfilter notes an ignored (sIG) segment as the flow's last packet, so that an answer to it is
    // recognised. false: track() leaves that to the caller (note_ignored()), which does it only once
    // its connection-state policy let the segment through: a dropped segment gets no answer, and a
    // note of it would make a forged RST "answer" it (issue 31, the flow table under a policy).
    bool note_ignored = true;
    static constexpr uint8_t kDefaultMaxRetrans = 3; // netfilter's nf_conntrack_tcp_max_retrans
    static constexpr uint8_t kMaxMaxRetrans = 127;   // WindowMeta::retrans saturates there
};

// What the steady ACK's fast path needs of the operator's choices, prepared once instead of per packet
// (the flow table rebuilds it when the timeouts or the window policy change): the retransmission limit
// and the timeout cap such a packet chooses, by three facts of the flow after it (choose_cap()'s rules
// with no RST, a reply seen and the state ESTABLISHED, which are what make a packet steady).
struct SteadyRules {
    uint8_t max_retrans = WindowPolicy::kDefaultMaxRetrans; // WindowPolicy::max_retrans
    // [retrans >= max_retrans | data unacknowledged in either direction << 1 | zero window << 2]
    Cap cap[8] = {};
    // cap[] for a count of 0 (a segment that repeats nothing), its even entries: [unacknowledged | zero
    // window << 1]
    Cap fresh[4] = {};
};
inline SteadyRules steady_rules(const WindowPolicy& policy, const Timeouts& timeouts) noexcept;

struct TrackResult {
    Outcome outcome;
    WindowReason reason; // why out_of_window; none otherwise
};

// An ignored segment (track() returned Outcome::ignored under WindowPolicy::note_ignored false) that
// the caller lets through: the note track() would have made (nothing when netfilter notes none for that
// state and class). Slow path.
void note_ignored(const FlowRef& flow, Dir dir, const Segment& seg) noexcept;

// A new flow: its Tracker is Tracker{initial_state(flags, loose)} (never State::none) and `first` is
// the packet that created it, from Dir::orig. Writes the whole of seq and meta (any previous
// content is discarded) as netfilter's tcp_new() and the first tcp_in_window() do; picked-up flows
// (any initial state but SYN_SENT) are liberal.
void window_create(const FlowRef& flow, const Segment& first, const Timeouts& timeouts) noexcept;

// Every later packet: step() and the window check together. Outcome as step()'s, plus out_of_window
// (nothing in flow.tracker changed, meta.cap unchanged: count the packet and leave the deadline) and
// an RST that keeps the state (outcome ok, cap close: re-arm). reopen and ignored as step().
// Inline (window_inline.h): the steady established ACK inside the window takes track_steady(), a
// handful of compares and stores on the flow's fields; every other packet track_full(). Both give
// exactly the same result.
inline TrackResult track(const FlowRef& flow, Dir dir, const Segment& seg, const WindowPolicy& policy,
                         const Timeouts& timeouts) noexcept;

// The fast path alone: true when it has tracked the segment (outcome ok, reason none, the flow as
// track_full() would leave it); false, with nothing written, for any segment it does not take.
inline bool track_steady(const FlowRef& flow, Dir dir, const Segment& seg, const WindowPolicy& policy,
                         const Timeouts& timeouts) noexcept;
// The same with the rules prepared (steady_rules(policy, timeouts)): what the flow table calls.
inline bool track_steady(const FlowRef& flow, Dir dir, const Segment& seg, const SteadyRules& rules) noexcept;
// track() with the rules prepared (rules == steady_rules(policy, timeouts)): the flow table's slow path.
inline TrackResult track(const FlowRef& flow, Dir dir, const Segment& seg, const WindowPolicy& policy,
                         const Timeouts& timeouts, const SteadyRules& rules) noexcept;

// The full path alone (netfilter's tcp_packet() order, every packet class): what track() does when
// track_steady() declines. Tests compare the two.
TrackResult track_full(const FlowRef& flow, Dir dir, const Segment& seg, const WindowPolicy& policy,
                       const Timeouts& timeouts) noexcept;

} // namespace flowcop::tcpstate

#include <tcpstate/window_inline.h> // track() and track_steady(), inline for the flow table's packet path
