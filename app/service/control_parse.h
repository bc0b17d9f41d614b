// SPDX-License-Identifier: BSD-3-Clause
// Parsing of control-plane parameters, shared by the telemetry handlers and
// their tests: pure functions, no EAL, no service.
#pragma once

#include "options.h"

#include <conntrack/flow_table.h>
#include <packet/flow_key.h>

#include <string>

namespace flowcop::app {

// "IP,PORT,IP,PORT[,VLAN[,VLAN]]" (IPv4 or IPv6, either direction) -> the canonical TCP key.
// Returns "" or one sentence saying what is wrong.
std::string parse_flow_tuple(const std::string& params, packet::FlowKey& key);

struct FlowQuery {
    conntrack::SnapshotFilter filter;
    bool match_lcore = false;
    unsigned lcore = 0;
    unsigned limit = 20;
    static constexpr unsigned kMaxLimit = 32; // one telemetry reply holds about this many flows
};
// "" | "addr=IP,port=N,lcore=N,limit=N" in any order.
std::string parse_flow_query(const std::string& params, FlowQuery& q);

// "NAME,VALUE": applies the change to `opt` using the command line's own parser and
// ranges (so a value is valid at run time exactly when it is valid as a flag).
// Returns "" or the error sentence.
std::string apply_setting(const std::string& params, Options& opt);
// Names /flowcop/set accepts, for help and errors.
std::string settable_names();

} // namespace flowcop::app
