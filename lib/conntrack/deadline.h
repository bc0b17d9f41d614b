// SPDX-License-Identifier: BSD-3-Clause
// The one deadline rule of a tracked flow (flow_table.h, "Deadlines"), used by the table (the wheel,
// expiry on arrival, shutdown) and by snapshot(), so a listing shows the deadline the cop works to.
//
// A flow's deadline is the earliest of
//   inactivity = last_seen + min(timeout(state), cap)   and   active = first_seen + active timeout (if any),
// where cap is the timeout cap TCP window tracking chose (tcpstate::Cap, kept in the record's flags:
// retransmissions, unacknowledged data, a zero window, a one-sided flow, an in-window RST; none for
// every other flow),
// or kDueNow once an RST or a kill marked it: a time in every caller's past, so the wheel puts the flow
// in the next bucket it drains and the cop reaps it on the next tick. Pure, inline, allocation-free.
//
// A timeout update (flowcopctl -U, FlowRecord::timeout_slot) replaces the inactivity deadline with the
// one the operator set (now + S when it was set) until the flow's next accepted packet, which clears it:
// netfilter's ctnetlink_change_timeout. The active deadline still applies if it comes first.
//
// Interim reports (interim_ns, flowcop's --ipfix-active-timeout) are not deadlines: a flow is reported
// at first_seen + k * interim for k = 1, 2, ... without ending. The wheel works to the earlier of the
// flow's deadline and its next report (wheel_deadline); everything that asks when a flow ends (expiry
// on arrival, listings, reasons) still reads flow_deadline.
#pragma once

#include <conntrack/flow_record.h>
#include <tcpstate/tcp_state.h>

#include <cstdint>

namespace flowcop::conntrack {

// "Due now": an RST- or kill-marked flow's deadline. Listings show it as 0 s left.
inline constexpr uint64_t kDueNow = 1;

// The timeouts a deadline is computed from, in nanoseconds.
struct DeadlineRules {
    // Effective timeouts, never 0, by the first byte of the record's L4State: TCP's per-state timeouts,
    // then protostate's (UDP unreplied, UDP stream, ICMP, generic) at kStateCount + protostate::Timeout.
    uint64_t state_timeout_ns[kTimeoutSlots] = {};
    // By tcpstate::Cap: the capped timeout (capped_timeout()'s cap); UINT64_MAX for none or a cap of 0 s.
    uint64_t cap_timeout_ns[tcpstate::kCapCount] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    uint64_t active_timeout_ns = 0; // 0: no active timeout
    uint64_t interim_ns = 0;        // 0: no interim reports
};

// A flow's report count (FlowCold::exports) stops here: later intervals are not reported.
inline constexpr uint16_t kMaxInterimReports = UINT16_MAX;

// When the flow's next interim report is due, given the boundaries already passed; UINT64_MAX when
// reports are off or the count is exhausted.
inline uint64_t interim_due(const DeadlineRules& rules, uint64_t first_seen_ns, uint16_t passed) noexcept
{
    if (rules.interim_ns == 0 || passed == kMaxInterimReports)
        return UINT64_MAX;
    return first_seen_ns + (uint64_t(passed) + 1) * rules.interim_ns;
}

// The earliest of the inactivity and active deadlines, ignoring RST/kill marks. first_seen() is called
// only when an active timeout is set (the packet path then reads the flow's cold entry, else not).
// The cap a record's flags carry (FlowRecord::kCapMask).
inline constexpr tcpstate::Cap cap_of(uint8_t flags) noexcept
{
    return static_cast<tcpstate::Cap>((flags & FlowRecord::kCapMask) >> FlowRecord::kCapShift);
}

// The inactivity timeout of a flow in `state` whose record flags are `flags`: the state's, capped.
// `state` is the record's first L4State byte: a TCP state or a non-TCP timeout slot (flow_record.h),
// whose flags carry no cap.
inline uint64_t inactivity_timeout_ns(const DeadlineRules& rules, uint8_t flags, tcpstate::State state) noexcept
{
    const uint64_t own = rules.state_timeout_ns[static_cast<size_t>(state)];
    const uint64_t cap = rules.cap_timeout_ns[static_cast<size_t>(cap_of(flags))];
    return cap < own ? cap : own;
}

template <typename FirstSeen>
inline uint64_t timeout_deadline(const DeadlineRules& rules, uint8_t flags, tcpstate::State state,
                                 uint64_t last_seen_ns, FirstSeen&& first_seen) noexcept
{
    const uint64_t inactivity = last_seen_ns + inactivity_timeout_ns(rules, flags, state);
    if (rules.active_timeout_ns == 0)
        return inactivity;
    const uint64_t active = first_seen() + rules.active_timeout_ns;
    return active < inactivity ? active : inactivity;
}

// The flow's true deadline: kDueNow when RST- or kill-marked, else timeout_deadline().
template <typename FirstSeen>
inline uint64_t flow_deadline(const DeadlineRules& rules, uint8_t flags, tcpstate::State state, uint64_t last_seen_ns,
                              FirstSeen&& first_seen) noexcept
{
    if (flags & (FlowRecord::kReset | FlowRecord::kKilled))
        return kDueNow;
    return timeout_deadline(rules, flags, state, last_seen_ns, first_seen);
}

// timeout_deadline() of any record: while it holds a timeout slot (FlowRecord::timeout_slot, not 0), the
// deadline an operator set (set_deadline(slot), read only then) or the active deadline if that comes first.
template <typename FirstSeen, typename SetDeadline>
inline uint64_t record_timeout_deadline(const DeadlineRules& rules, uint8_t flags, uint8_t timeout_slot,
                                        tcpstate::State state, uint64_t last_seen_ns, FirstSeen&& first_seen,
                                        SetDeadline&& set_deadline) noexcept
{
    if (timeout_slot == 0) [[likely]]
        return timeout_deadline(rules, flags, state, last_seen_ns, first_seen);
    const uint64_t set = set_deadline(timeout_slot);
    if (rules.active_timeout_ns == 0)
        return set;
    const uint64_t active = first_seen() + rules.active_timeout_ns;
    return active < set ? active : set;
}

// flow_deadline() of any record: kDueNow when RST- or kill-marked, else record_timeout_deadline().
template <typename FirstSeen, typename SetDeadline>
inline uint64_t record_deadline(const DeadlineRules& rules, uint8_t flags, uint8_t timeout_slot, tcpstate::State state,
                                uint64_t last_seen_ns, FirstSeen&& first_seen, SetDeadline&& set_deadline) noexcept
{
    if (flags & (FlowRecord::kReset | FlowRecord::kKilled))
        return kDueNow;
    return record_timeout_deadline(rules, flags, timeout_slot, state, last_seen_ns, first_seen, set_deadline);
}

// What the wheel works to: the flow's deadline `end` (record_deadline()), or its next interim report if
// that comes first.
inline uint64_t wheel_deadline(const DeadlineRules& rules, uint64_t end, uint64_t first_seen_ns,
                               uint16_t reports_passed) noexcept
{
    if (rules.interim_ns == 0)
        return end;
    const uint64_t report = interim_due(rules, first_seen_ns, reports_passed);
    return report < end ? report : end;
}

} // namespace flowcop::conntrack
