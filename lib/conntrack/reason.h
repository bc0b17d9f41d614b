// SPDX-License-Identifier: BSD-3-Clause
// Why a flow left the table. Every destroyed flow has exactly one reason, and
// the per-lcore counters keep one total per reason, so
//   flows created == sum over reasons of flows expired + flows active.
#pragma once

#include <cstdint>

namespace flowcop::conntrack {

enum class Reason : uint8_t {
    inactivity, // the inactivity timeout of any state but TIME_WAIT and CLOSE ran out
    active,     // the active timeout (counted from the first packet) ran out
    closed,     // a FIN exchange finished and the TIME_WAIT/CLOSE timeout ran out, or a SYN reopened it
    reset,      // ended by an RST (reaped on the next tick)
    killed,     // a control-plane kill (reaped on the next tick)
    evicted,    // an unassured or closing flow dropped to admit a new one when the table was full
    shutdown,   // still open when flowcop stopped
    count
};

inline constexpr unsigned kReasonCount = static_cast<unsigned>(Reason::count);

// Stable lower-case names: JSON event "reason" values and Prometheus label values.
inline const char* reason_name(Reason r) noexcept
{
    switch (r) {
    case Reason::inactivity: return "inactivity";
    case Reason::active: return "active";
    case Reason::closed: return "closed";
    case Reason::reset: return "reset";
    case Reason::killed: return "killed";
    case Reason::evicted: return "evicted";
    case Reason::shutdown: return "shutdown";
    case Reason::count: break;
    }
    return "unknown";
}

} // namespace flowcop::conntrack
