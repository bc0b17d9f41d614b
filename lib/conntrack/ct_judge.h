// SPDX-License-Identifier: BSD-3-Clause
// Contract: the connection-state policy's seam in the flow table (issue 31, lib/policy/policy.md).
//
// A Judge belongs to the lcore that owns the table (the worker) and is handed to it with
// FlowTable::set_judge(); without one the table judges nothing and pays nothing (finish() picks its
// loop once per burst). With one, the table gives every packet of its pipeline its conntrack state as
// netfilter means it and asks the Judge where the decision must be taken:
//   - a packet that would create a flow (`new`, a loose pickup included) BEFORE the flow is created:
//     under enforcement a dropped one creates no flow, no event and no IPFIX record;
//   - a TCP segment refused by the state machine or the window check (`invalid`) BEFORE it changes
//     anything of its flow (packets, bytes, flags seen; last seen, state and window never change for it);
//   - an ICMP error (`related` when it quotes a flow, else `invalid`) and an attributed later fragment
//     (`related` on a live flow, else `invalid`) before it is counted on the flow;
//   - every other packet of a flow once it was tracked: `established` when the flow has seen both
//     directions (a reply-direction packet always), `new` for the original direction until the first
//     reply (netfilter's rule).
// Packets the table does not take (non-IP, malformed, families excluded by --track, unattributed
// fragments) are left unjudged (out() == kNotJudged, FlowTable::takes() false) and the caller judges
// them with state_outside().
//
// Per packet the cost is the state's entry in a five-entry table built from the Policy's per-state
// shortcut (policy.h decided()) and three counts (the rule's packets and bytes, the state's verdicts);
// only a state no single rule decides builds a PacketView and walks the rules.
// The verdict of base[i] is out(i): kJudged | its state | kDropBit when the policy drops it.
//
// enforce: inline mode; a drop leaves no trace in the table (above) and the caller frees the packet.
// Without it (monitor mode, the dry run) every verdict is computed and counted, the table tracks every
// packet as without a policy and nothing is dropped.
//
// Threads: one writer (the owning lcore). Counters (the Policy's policy::Counters and verdicts()) are
// single-writer fields other threads read relaxed (lib/stats/stats.md). set_policy() runs on the owner
// between bursts (a reload through the worker's mailbox).
#pragma once

#include <conntrack/counters.h>
#include <packet/packet.h>
#include <policy/counters.h>
#include <policy/policy.h>

#include <cstdint>
#include <cstring>

namespace flowcop::conntrack {

using CtState = policy::State;
inline constexpr unsigned kCtStateCount = policy::kStateCount;

// "new", "established", "related", "invalid", "untracked": the label values of the state.
const char* ct_state_name(CtState s) noexcept;

// Packets judged by state and action (0 accept, 1 drop), one writer.
struct alignas(64) StateVerdicts {
    uint64_t packets[kCtStateCount][2] = {};
};

// The state of a packet the table does not take (FlowTable::process_burst left it unjudged): invalid
// for a malformed frame (an ICMP error whose quote cannot be read included), untracked for everything
// else (non-IP, ICMP that is neither query nor error, a family --track excludes, a later fragment no
// first fragment was seen for on this lcore).
CtState state_outside(const packet::Packet& pkt) noexcept;

class Judge {
public:
    static constexpr uint8_t kNotJudged = 0;
    static constexpr uint8_t kJudged = 0x80;
    static constexpr uint8_t kDropBit = 0x40;
    static constexpr uint8_t kStateMask = 0x07;
    static constexpr unsigned kMaxPackets = 64; // >= the table's kMaxBurst and the worker's burst

    // The lcore's policy and its counters (both outlive their use here, until the next set_policy()).
    void set_policy(const policy::Policy* p, policy::Counters* c) noexcept
    {
        _policy = p;
        _counters = c;
        // A state one rule decides (policy.h decided()): its counters and verdict byte, found once here.
        for (unsigned s = 0; s < kCtStateCount; ++s) {
            const policy::Decision* d = p->decided(static_cast<CtState>(s));
            Fast& f = _fast[s];
            f = Fast{};
            if (d == nullptr)
                continue;
            const bool drop = d->action == policy::Action::drop;
            f.slot = c->slot_ptr(d->rule);
            f.verdict = &_verdicts.packets[s][drop ? 1 : 0];
            f.out = uint8_t(kJudged | s | (drop ? kDropBit : 0));
        }
        _fast_accept = 0;
        for (unsigned s = 0; s < kCtStateCount; ++s)
            if (_fast[s].slot != nullptr && !(_fast[s].out & kDropBit))
                _fast_accept = uint8_t(_fast_accept | (1u << s));
    }

    // The steady path's one byte test: bit s is set when one rule accepts every packet in state s. The
    // table then only adds such a packet to a per-burst tally (count_accepted()) and records no out byte:
    // a packet the table took and left unjudged was accepted (the worker asks FlowTable::takes()).
    uint8_t fast_accept() const noexcept { return _fast_accept; }
    // Once per burst: the tallies by state of the packets fast_accept() let through.
    void count_accepted(const uint32_t* packets, const uint64_t* bytes) noexcept
    {
        for (unsigned s = 0; s < kCtStateCount; ++s) {
            if (packets[s] == 0)
                continue;
            bump(_fast[s].slot->packets, uint64_t{packets[s]});
            bump(_fast[s].slot->bytes, bytes[s]);
            bump(*_fast[s].verdict, uint64_t{packets[s]});
        }
    }
    // Once per burst: how many packets the table took (each of them judged, or tallied as accepted).
    void took(unsigned n) noexcept { _taken += n; }
    void set_enforce(bool enforce) noexcept { _enforce = enforce; }
    bool enforce() const noexcept { return _enforce; }
    const policy::Policy* policy() const noexcept { return _policy; }

    // Before a burst: the packets it lives in (every packet handed to process_burst() is base[i], i < n).
    void begin(const packet::Packet* base, unsigned n) noexcept
    {
        _base = base;
        _taken = 0;
        _dropped = 0;
        std::memset(_out, kNotJudged, n < kMaxPackets ? n : kMaxPackets);
    }

    // Judges pkt in state s: counts it for its rule and state and records the verdict. True when the
    // policy drops it and drops are enforced (the table must then leave no trace of it).
    bool judge(const packet::Packet& pkt, CtState s) noexcept
    {
        const Fast& f = _fast[static_cast<uint8_t>(s)];
        uint8_t out;
        if (f.slot != nullptr) [[likely]] {
            bump(f.slot->packets);
            bump(f.slot->bytes, uint64_t{pkt.ip_len});
            bump(*f.verdict);
            out = f.out;
        } else {
            out = walk(pkt, s);
        }
        _out[&pkt - _base] = out;
        if (!(out & kDropBit)) [[likely]]
            return false;
        ++_dropped;
        return _enforce;
    }

    // kNotJudged for a packet the table did not take, or took and accepted by fast_accept().
    uint8_t out(const packet::Packet& pkt) const noexcept { return _out[&pkt - _base]; }
    // Since begin(): packets the table took, and packets dropped (whether enforced or not). When the table
    // took every packet of the burst and none was dropped, the caller has nothing to look at.
    unsigned taken() const noexcept { return _taken; }
    unsigned dropped() const noexcept { return _dropped; }
    const StateVerdicts& verdicts() const noexcept { return _verdicts; }

private:
    // A state the per-state table decides: the rule's counters, the state's verdict count and the out byte.
    struct Fast {
        policy::RuleCounter* slot = nullptr; // nullptr: the state needs the walk
        uint64_t* verdict = nullptr;
        uint8_t out = 0;
    };
    // The other states: builds the PacketView, walks the rules, counts; returns the out byte. Cold.
    uint8_t walk(const packet::Packet& pkt, CtState s) noexcept;

    Fast _fast[kCtStateCount];
    const policy::Policy* _policy = nullptr;
    policy::Counters* _counters = nullptr;
    const packet::Packet* _base = nullptr;
    unsigned _taken = 0, _dropped = 0;
    uint8_t _fast_accept = 0; // fast_accept()
    bool _enforce = false;
    uint8_t _out[kMaxPackets] = {};
    StateVerdicts _verdicts;
};

} // namespace flowcop::conntrack
