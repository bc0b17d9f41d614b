// SPDX-License-Identifier: BSD-3-Clause
// flowcop's end reasons as IPFIX flowEndReason values (IANA registry, RFC 5102 / 7012 element 136).
//
//   flowcop reason  flowEndReason            why
//   inactivity      0x01 idle timeout        no packet for the state's inactivity timeout
//   active          0x02 active timeout      --active-timeout ended a long-lived flow
//   closed          0x03 end of Flow         a FIN exchange finished (TIME_WAIT/CLOSE ran out, or reopened)
//   reset           0x03 end of Flow         an RST ended it: the protocol said so
//   killed          0x04 forced end          an operator's /flowcop/kill
//   evicted         0x05 lack of resources   dropped to admit a new flow into a full table
//   shutdown        0x04 forced end          still open when flowcop stopped
//   (interim)       0x02 active timeout      a long flow's periodic report (--ipfix-active-timeout):
//                                            RFC 5102's "long-lasting Flow" report; the flow goes on
// flowcop's exact reason also goes out as flowcopEndReason (elements.h), so closed and reset, or
// killed and shutdown, stay apart for a collector that reads it; an interim record's flowcopEndReason
// is kNotEnded (255), so it never reads as a real end.
#pragma once

#include <conntrack/reason.h>
#include <events/event.h>

#include <cstdint>

namespace flowcop::ipfix {

inline constexpr uint8_t kIdleTimeout = 0x01;
inline constexpr uint8_t kActiveTimeout = 0x02;
inline constexpr uint8_t kEndOfFlowDetected = 0x03;
inline constexpr uint8_t kForcedEnd = 0x04;
inline constexpr uint8_t kLackOfResources = 0x05;
// flowcopEndReason of an interim record: the flow has not ended (no conntrack::Reason has this value).
inline constexpr uint8_t kNotEnded = 0xff;

// 0 (not a flowEndReason) for a value that is not a conntrack::Reason.
constexpr uint8_t flow_end_reason(uint8_t reason_code) noexcept
{
    using conntrack::Reason;
    static_assert(static_cast<unsigned>(Reason::count) < kNotEnded);
    switch (static_cast<Reason>(reason_code)) {
    case Reason::inactivity: return kIdleTimeout;
    case Reason::active: return kActiveTimeout;
    case Reason::closed:
    case Reason::reset: return kEndOfFlowDetected;
    case Reason::killed:
    case Reason::shutdown: return kForcedEnd;
    case Reason::evicted: return kLackOfResources;
    case Reason::count: break;
    }
    return 0;
}

// flowEndReason and flowcopEndReason of a record for `e`: an interim event's, or its end reason's.
constexpr uint8_t flow_end_reason(const events::Event& e) noexcept
{
    return e.kind == events::Kind::interim ? kActiveTimeout : flow_end_reason(e.reason_code);
}
constexpr uint8_t flowcop_end_reason(const events::Event& e) noexcept
{
    return e.kind == events::Kind::interim ? kNotEnded : e.reason_code;
}

} // namespace flowcop::ipfix
