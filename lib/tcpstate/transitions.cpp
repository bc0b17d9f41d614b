// SPDX-License-Identifier: BSD-3-Clause
// The transition table and step(). The table says what netfilter's tcp_conntracks says (its sIG and sIV
// both become "ignored", which is all the caller needs to know); the few rules a table cannot express
// (per-direction FIN memory, reply-completed handshakes, assured) are applied after the lookup.
#include <tcpstate/tcp_state.h>

#include <tcpstate/tcp_state_detail.h>

namespace flowcop::tcpstate {
namespace {

using detail::Klass;

constexpr uint8_t kIg = 0xF0; // ignored
constexpr uint8_t kRo = 0xF1; // reopen
constexpr uint8_t kSs = static_cast<uint8_t>(State::syn_sent);
constexpr uint8_t kSr = static_cast<uint8_t>(State::syn_recv);
constexpr uint8_t kEs = static_cast<uint8_t>(State::established);
constexpr uint8_t kFw = static_cast<uint8_t>(State::fin_wait);
constexpr uint8_t kCw = static_cast<uint8_t>(State::close_wait);
constexpr uint8_t kLa = static_cast<uint8_t>(State::last_ack);
constexpr uint8_t kTw = static_cast<uint8_t>(State::time_wait);
constexpr uint8_t kCl = static_cast<uint8_t>(State::close);
constexpr uint8_t kS2 = static_cast<uint8_t>(State::syn_sent2);

// kNext[dir][state][class]: one row per current state, one column per packet class.
constexpr uint8_t kNext[2][kStateCount][detail::kKlassCount] = {
    {
        // orig:        SYN  SYN-ACK FIN  ACK  RST
        /* none      */ {kIg, kIg, kIg, kIg, kIg}, // never stepped: flows start from initial_state()
        /* syn_sent  */ {kSs, kIg, kIg, kIg, kCl}, // SYN again: retransmission; no SYN-ACK seen, so no ACK
        /* syn_recv  */ {kIg, kSr, kFw, kEs, kCl}, // orig SYN-ACK: the other half of a simultaneous open
        /* established*/ {kIg, kIg, kFw, kEs, kCl},
        /* fin_wait  */ {kIg, kIg, kLa, kCw, kCl}, // FIN here is the other side's, or a retransmission
        /* close_wait*/ {kIg, kIg, kLa, kCw, kCl},
        /* last_ack  */ {kIg, kIg, kLa, kTw, kCl},
        /* time_wait */ {kRo, kIg, kTw, kTw, kCl}, // a new connection on the same 5-tuple (RFC 1122)
        /* close     */ {kRo, kIg, kCl, kCl, kCl},
        /* syn_sent2 */ {kS2, kSr, kIg, kIg, kCl},
    },
    {
        // reply:       SYN  SYN-ACK FIN  ACK  RST
        /* none      */ {kIg, kIg, kIg, kIg, kIg},
        /* syn_sent  */ {kS2, kSr, kIg, kIg, kCl},  // reply SYN: simultaneous open; reply ACK: half-open
        /* syn_recv  */ {kIg, kIg, kFw, kSr, kCl},  // SYN-ACK again: retransmission; ACK: see kReplyCompletes
        /* established*/ {kIg, kIg, kFw, kEs, kCl}, // a late SYN-ACK is ignored, not an error
        /* fin_wait  */ {kIg, kIg, kLa, kCw, kCl},
        /* close_wait*/ {kIg, kIg, kLa, kCw, kCl},
        /* last_ack  */ {kIg, kIg, kLa, kTw, kCl},
        /* time_wait */ {kRo, kIg, kTw, kTw, kCl}, // the old server opens: it becomes the new flow's orig
        /* close     */ {kRo, kIg, kCl, kCl, kCl},
        /* syn_sent2 */ {kS2, kSr, kIg, kIg, kCl},
    },
};

// initial_state() cannot write flags, so the first step() derives what the creating packet implied.
void adopt(Tracker& t) noexcept
{
    if ((t.flags & detail::kAdopted) != 0)
        return;
    t.flags |= detail::kAdopted;
    if (t.state == State::syn_recv)
        t.flags |= detail::kReplyCompletes; // picked up at the SYN-ACK: orig is the server
    else if (t.state == State::fin_wait)
        t.flags |= detail::kFinOrig; // picked up at a FIN, which by definition came from orig
}

} // namespace

State initial_state(uint8_t tcp_flags, bool loose_pickup) noexcept
{
    switch (detail::classify(tcp_flags)) {
    case Klass::syn: return State::syn_sent;
    case Klass::synack: return loose_pickup ? State::syn_recv : State::none;
    case Klass::fin: return loose_pickup ? State::fin_wait : State::none;
    case Klass::ack: return loose_pickup ? State::established : State::none;
    case Klass::rst:
    case Klass::invalid: break;
    }
    return State::none;
}

Outcome step(Tracker& t, Dir dir, uint8_t tcp_flags) noexcept
{
    using detail::in_state;
    using detail::of;

    const State cur = t.state;
    if (cur == State::none || static_cast<unsigned>(cur) >= kStateCount)
        return Outcome::ignored; // never created, or a corrupt record: never index with it
    const Klass k = detail::classify(tcp_flags);
    if (k == Klass::invalid)
        return Outcome::ignored;
    const bool reply = dir != Dir::orig; // any non-orig value is reply: never an out-of-range index
    if (reply)
        dir = Dir::reply;

    const uint8_t cell = kNext[reply][static_cast<unsigned>(cur)][static_cast<unsigned>(k)];
    if (cell == kIg)
        return Outcome::ignored;
    if (cell == kRo)
        return Outcome::reopen;

    // Every rejection is above, so an ignored packet leaves the tracker untouched; from here on the
    // packet is accepted and the tracker is written.
    adopt(t);
    State next = static_cast<State>(cell);

    // netfilter moves FIN_WAIT to LAST_ACK on any FIN, so a retransmitted FIN (zeek ssh-dups) lets the
    // next ACK reach TIME_WAIT while the other side has not closed. Remembering who sent a FIN keeps a
    // repeat where it was.
    if (k == Klass::fin && in_state(cur, of(State::fin_wait, State::close_wait)) &&
        (t.flags & detail::fin_bit(dir)) != 0)
        next = cur;
    // In SYN_RECV a reply ACK normally answers a late SYN; it completes the handshake when orig is not
    // the only side that owes the final ACK (simultaneous open, or orig is the server).
    if (k == Klass::ack && reply && cur == State::syn_recv && (t.flags & detail::kReplyCompletes) != 0)
        next = State::established;

    if (reply)
        t.flags |= detail::kSeenReply;
    if (k == Klass::fin)
        t.flags |= detail::fin_bit(dir);
    if (next == State::syn_sent2)
        t.flags |= detail::kReplyCompletes;
    if (next == State::established && in_state(cur, of(State::syn_recv, State::established)) &&
        (t.flags & detail::kSeenReply) != 0)
        t.flags |= detail::kAssured;

    t.state = next;
    return k == Klass::rst ? Outcome::reset : Outcome::ok;
}

} // namespace flowcop::tcpstate
