// SPDX-License-Identifier: BSD-3-Clause
// Why a full table dropped a flow to admit a new one (FlowTable's early drop, flow_table.h "Table full").
// The order is the preference: a sampled flow of a lower class is dropped before one of a higher class,
// and within a class the least recently seen goes first. Counted per class (Counters::early_dropped).
#pragma once

#include <cstdint>

namespace flowcop::conntrack {

enum class EarlyDrop : uint8_t {
    timed_out, // its deadline had passed, the cop had not reaped it yet: it ends with its own reason
    closing,   // a TCP flow shutting down (tcpstate::is_closing), assured or not: ends "evicted"
    unassured, // a flow that never completed its handshake (or never saw a reply): ends "evicted"
    count      // not droppable: assured and not closing
};

inline constexpr unsigned kEarlyDropCount = static_cast<unsigned>(EarlyDrop::count);

// Stable lower-case names: the reason label of flowcop_flows_early_dropped_total.
inline const char* early_drop_name(EarlyDrop d) noexcept
{
    switch (d) {
    case EarlyDrop::timed_out: return "timed_out";
    case EarlyDrop::closing: return "closing";
    case EarlyDrop::unassured: return "unassured";
    case EarlyDrop::count: break;
    }
    return "unknown";
}

} // namespace flowcop::conntrack
