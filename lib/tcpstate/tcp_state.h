// SPDX-License-Identifier: BSD-3-Clause
// tcpstate: the per-flow TCP state machine (modelled on Linux netfilter conntrack) and the per-state
// inactivity timeouts. lib/tcpstate/tcp-tracking.md has the state diagram and the full transition matrix.
//
// Contract
// - Pure and clock-free: every function is noexcept, allocates nothing, touches no global state and
//   takes the TCP flags byte (byte 13 of the TCP header, rte_tcp_hdr::tcp_flags) as given. Any thread
//   may call any function; a Tracker is plain data inside the caller's flow record and must be stepped
//   by one thread at a time (the lcore that owns the flow).
// - Only FIN, SYN, RST, ACK and URG decide anything. PSH, ECE and CWR are ignored, so data in a SYN
//   (TCP Fast Open) or ECN negotiation changes nothing. A packet's class is, in order: RST (RST or
//   RST+ACK), SYN (SYN, SYN+URG), SYN-ACK, FIN (FIN+ACK, FIN+ACK+URG), ACK (ACK, ACK+URG). Every other
//   combination (no flags, FIN without ACK, SYN+FIN, SYN+RST, RST+FIN, URG alone, ...) is invalid:
//   netfilter's tcp_valid_flags set, for the same reason (no real stack sends them; scanners do).
// - step() alone tracks no sequence numbers: any RST with the flow's addresses ends the flow, a
//   retransmission is told from new data only by its flags and direction, and a SYN reopens a
//   TIME_WAIT flow whatever its sequence number. window.h's track() runs step() together with
//   netfilter's window check (tcp_in_window) and RST rules; that is what a tracker that must not
//   believe forged segments calls.
// - Direction: Dir::orig is the sender of the packet that created the flow, Dir::reply the other end.
//
// Lifecycle, as the flow table drives it
//   1. First packet of an unknown 5-tuple: s = initial_state(flags, loose). State::none: create
//      nothing (count the packet). Otherwise store Tracker{s} and arm now + timeouts.effective(s).
//      The creating packet is NOT passed to step(); it was the creation.
//   2. Every later packet: switch (step(tracker, dir, flags)):
//        ok      -> the state may have changed; arm now + timeouts.effective(tracker.state).
//        ignored -> the tracker is untouched (byte for byte); count the packet and leave the deadline
//                   alone, as netfilter never refreshes a conntrack's timeout for an sIG/sIV packet, so
//                   junk cannot keep a dead flow alive.
//        reset   -> the state is now CLOSE; reap the flow on the next tick (reason "reset").
//        reopen  -> a SYN on a TIME_WAIT or CLOSE flow: the tracker is untouched; destroy the flow
//                   (reason "closed") and run step 1 for this packet, whose sender is the new orig.
//   3. Deadline passed: destroy the flow; expiry_is_closed(tracker.state) says whether that end is a
//      finished close ("closed") or an idle one ("inactivity").
//
// Degraded behaviour: a Tracker in State::none or an out-of-range state (a corrupt record) makes step()
// return ignored without indexing anything; an out-of-range State gives "UNKNOWN"/"unknown" names and
// the default_inactivity timeout; effective() never returns 0, even for an all-zero Timeouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <rte_tcp.h> // header-only: DPDK's TCP flag bits, no EAL

namespace flowcop::tcpstate {

// netfilter's TCP_CONNTRACK_* order, so a value means the same here as in conntrack -L output.
enum class State : uint8_t {
    none,        // no flow: only initial_state() returns it, no tracked flow is ever in it
    syn_sent,    // SYN seen from orig
    syn_recv,    // SYN-ACK seen (or a flow picked up at its SYN-ACK)
    established, // handshake done, or picked up mid-stream
    fin_wait,    // one side sent FIN
    close_wait,  // that FIN was answered by an ACK
    last_ack,    // both sides sent FIN
    time_wait,   // the last FIN was ACKed: the close is complete
    close,       // ended by RST
    syn_sent2,   // simultaneous open: SYN seen from both sides
    count
};
inline constexpr size_t kStateCount = static_cast<size_t>(State::count);

// "SYN_SENT", "ESTABLISHED", ... exactly as conntrack -L prints them; "UNKNOWN" out of range.
const char* state_name(State s) noexcept;
// "syn_sent", "established", ...: the spelling of --tcp-timeout-<name> and of netfilter's
// nf_conntrack_tcp_timeout_<name> sysctls; "unknown" out of range.
const char* state_flag_name(State s) noexcept;
// Exact, case-sensitive inverse of state_flag_name for the nine states a flow can be in. "none" is
// rejected (no flow is ever in it, so a timeout for it would silently do nothing), as is any other
// text; on failure `out` is left unchanged.
bool parse_state_flag_name(std::string_view name, State& out) noexcept;

enum class Dir : uint8_t { orig = 0, reply = 1 };
enum class Flag : uint8_t {
    fin = RTE_TCP_FIN_FLAG,
    syn = RTE_TCP_SYN_FLAG,
    rst = RTE_TCP_RST_FLAG,
    psh = RTE_TCP_PSH_FLAG,
    ack = RTE_TCP_ACK_FLAG,
    urg = RTE_TCP_URG_FLAG
};

namespace detail {
// Tracker::flags bits. Private to tcpstate: the flow table reads them only through the accessors.
inline constexpr uint8_t kFinOrig = 0x01;        // orig has sent a FIN
inline constexpr uint8_t kFinReply = 0x02;       // reply has sent a FIN
inline constexpr uint8_t kSeenReply = 0x04;      // a non-ignored packet came from reply
inline constexpr uint8_t kAssured = 0x08;        // see Tracker::assured()
inline constexpr uint8_t kReplyCompletes = 0x10; // a reply ACK may complete the handshake in SYN_RECV
inline constexpr uint8_t kAdopted = 0x20;        // step() has derived the bits initial_state() implies
} // namespace detail

// Per-flow state: 2 bytes, zero-initialisable, trivially copyable. Build it as Tracker{initial_state(..)}.
struct Tracker {
    State state = State::none; // first byte: the flow table's readers load it with relaxed order
    uint8_t flags = 0;         // detail::k* bits; only step() writes them

    // Never cleared once set. Set when a packet moves the flow into ESTABLISHED from SYN_RECV or
    // ESTABLISHED after (or with) a packet from the reply side: the handshake's final ACK, or, for a
    // flow picked up mid-stream, the first packet seen from the other side. Assured flows are not
    // early-dropped to make room for new ones unless they are closing (is_closing()).
    bool assured() const noexcept { return (flags & detail::kAssured) != 0; }
    // A packet from the reply side has been accepted (ignored packets do not count).
    bool seen_reply() const noexcept { return (flags & detail::kSeenReply) != 0; }
};
static_assert(sizeof(Tracker) <= 4, "the tracker must fit in the 64-byte flow record");

enum class Outcome : uint8_t {
    ok,            // accepted; state updated (possibly unchanged): re-arm from the new state's timeout
    ignored,       // not valid for the state (netfilter sIG/sIV) or an invalid flag combination: count it,
                   // tracker unchanged, deadline not extended
    reset,         // a RST: the state is now CLOSE and the flow must be reaped on the next tick
    reopen,        // a SYN on a TIME_WAIT or CLOSE flow: destroy it (reason "closed"), then treat this
                   // packet as the first packet of a new flow; the tracker is unchanged
    out_of_window, // only from track() (window.h): outside the window; count it by its WindowReason,
                   // tracker unchanged, deadline not extended. step() never returns it.
};

// The state a new flow starts in, or State::none if this packet must not create one.
// - SYN: SYN_SENT, whatever `loose_pickup` says.
// - loose_pickup only (netfilter's nf_conntrack_tcp_loose, on by default there), for a flow whose start
//   was not seen: ACK -> ESTABLISHED (netfilter); SYN-ACK -> SYN_RECV and FIN -> FIN_WAIT, where
//   netfilter creates nothing. The SYN-ACK rule lets a capture that starts at, or reorders, the SYN-ACK
//   (zeek missing-syn, handshake-reorder) be tracked through its close; the FIN rule lets a flow picked
//   up while closing end in TIME_WAIT instead of idling in ESTABLISHED. Neither is assured at creation.
// - RST and invalid combinations: State::none always (netfilter: nothing left to track).
State initial_state(uint8_t tcp_flags, bool loose_pickup) noexcept;

// Steps the tracker for a packet from `dir`. See lib/tcpstate/tcp-tracking.md for the matrix; in short it is
// netfilter's tcp_conntracks with sIG/sIV -> ignored, plus: a FIN repeated by a side that already sent
// one leaves FIN_WAIT/CLOSE_WAIT unchanged; a SYN from either side reopens TIME_WAIT and CLOSE; a reply
// ACK completes SYN_RECV for simultaneous opens and for flows picked up at the SYN-ACK.
Outcome step(Tracker& t, Dir dir, uint8_t tcp_flags) noexcept;

// True for the packet that makes up nearly all of a busy link: an ACK-class segment (ACK, with or
// without PSH, URG, ECE, CWR) on an ESTABLISHED flow whose tracker already holds every bit such a
// packet can set. step() would then change nothing and return Outcome::ok; callers use this to skip it.
// One-sided: true means step() changes nothing; false means only "call step()". tests/tcpstate checks
// the claim for every state, flag byte, tracker bit set and direction.
constexpr bool steady(const Tracker& t, uint8_t tcp_flags) noexcept
{
    constexpr auto kBit = [](Flag f) { return static_cast<uint8_t>(f); };
    constexpr uint8_t kKind = kBit(Flag::fin) | kBit(Flag::syn) | kBit(Flag::rst) | kBit(Flag::ack);
    constexpr uint8_t kBits = detail::kAdopted | detail::kSeenReply | detail::kAssured;
    return t.state == State::established && (tcp_flags & kKind) == kBit(Flag::ack) && (t.flags & kBits) == kBits;
}

// Per-state inactivity timeouts in seconds. A 0 entry means "no explicit timeout for this state":
// effective() then falls back to default_inactivity.
struct Timeouts {
    uint32_t seconds[kStateCount];
    uint32_t default_inactivity; // the catch-all; must be > 0 (a config parser should reject 0)
    // Caps that window tracking (window.h, Cap) puts on a state's timeout, netfilter's
    // nf_conntrack_tcp_timeout_max_retrans and _unacknowledged (5 min each): long enough for a
    // retransmitting or zero-window peer to recover (Linux gives up after 15 retransmissions, 13-30
    // minutes, but a flow with no progress for 5 minutes of retransmissions is as good as dead), short
    // enough that a dead flow or a one-sided pickup does not hold its slot for ESTABLISHED's 5 days.
    uint32_t max_retrans = kDefaultCapSeconds;
    uint32_t unacknowledged = kDefaultCapSeconds;
    static constexpr uint32_t kDefaultCapSeconds = 300;

    // netfilter's nf_conntrack_tcp_timeout_* defaults, whose reasons are:
    //   syn_sent 120: outlasts Linux's SYN retransmissions (6 retries, the last sent 63 s in), and each
    //                 retransmitted SYN re-arms it;
    //   syn_recv 60:  outlasts Linux's SYN-ACK retransmissions (5 retries, the last sent 31 s in);
    //   established 432000 (5 days): idle but live connections (ssh, database pools, the 725 s idle gap
    //                 in ndpi_elasticsearch) must survive; only a FIN or RST should end them early;
    //   fin_wait 120, close_wait 60, last_ack 30: a close in progress finishes in a few RTTs, the slack
    //                 covers the retransmissions of a lost FIN or ACK;
    //   time_wait 120: twice Linux's own 60 s TIME_WAIT (TCP_TIMEWAIT_LEN), so late segments of the old
    //                 connection still match it instead of creating loose-pickup flows;
    //   close 10:     netfilter's linger after a RST. A reset flow is reaped on the next tick, so this
    //                 applies only if the caller re-arms on a later non-RST packet (Outcome::ok in
    //                 CLOSE); lib/conntrack does not (a reset flow stays due on the next tick);
    //   syn_sent2 120: the same as syn_sent (it is a SYN_SENT seen from both sides);
    //   none 0:       no flow is ever in it.
    // default_inactivity 600: netfilter's generic timeout (nf_conntrack_generic_timeout, for traffic it
    // cannot track), so a state whose timeout an operator sets to 0 behaves as netfilter treats an
    // untracked flow. It is far below ATS's one-day catch-all because this table is a shared resource a
    // flood can fill, and well inside the timer wheel's 68-minute range (one visit per period).
    static constexpr Timeouts netfilter_defaults() noexcept
    {
        return Timeouts{{0, 120, 60, 432000, 120, 60, 30, 120, 10, 120}, kDefaultInactivity};
    }
    static constexpr uint32_t kDefaultInactivity = 600;

    // seconds[s], or default_inactivity when that is 0 (or s is out of range), or kDefaultInactivity
    // when default_inactivity is 0 too: never 0, so every flow always has a deadline.
    constexpr uint32_t effective(State s) const noexcept
    {
        const size_t i = static_cast<size_t>(s);
        const uint32_t own = i < kStateCount ? seconds[i] : 0;
        if (own != 0)
            return own;
        return default_inactivity != 0 ? default_inactivity : kDefaultInactivity;
    }
};

// True for TIME_WAIT and CLOSE, whose expiry ends a flow that was closed (reason "closed"); false for
// every other state, whose expiry is an idle end (reason "inactivity").
constexpr bool expiry_is_closed(State s) noexcept
{
    return s == State::time_wait || s == State::close;
}

// A flow that is shutting down (a FIN or an RST was seen): FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT or
// CLOSE. A full flow table may drop such a flow for a new one even when it is assured, as netfilter's
// tcp_can_early_drop lets its conntrack do: its connection is over or nearly so, and keeping it for the
// 120 s of TIME_WAIT would refuse new connections meanwhile.
constexpr bool is_closing(State s) noexcept
{
    return s == State::fin_wait || s == State::close_wait || s == State::last_ack || s == State::time_wait ||
           s == State::close;
}

} // namespace flowcop::tcpstate
