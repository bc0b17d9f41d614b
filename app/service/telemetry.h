// SPDX-License-Identifier: BSD-3-Clause
// flowcop's control plane over DPDK telemetry (client: Debian's dpdk-telemetry.py).
//
//   /flowcop/stats                      counters: totals and per-lcore arrays
//   /flowcop/config                     the running configuration (after any /flowcop/set)
//   /flowcop/flows[,k=v,...]            up to `limit` (default 20, max 32) flows, most recently
//                                       seen first; filters: addr=IP, port=N, lcore=N. One array
//                                       of "key=value" strings per flow, conntrack -L style.
//   /flowcop/kill,IP,PORT,IP,PORT[,VLAN[,VLAN]]
//                                       marks that TCP flow (either direction) due: it is reaped on
//                                       the next tick with reason "killed"
//   /flowcop/set,NAME,VALUE             timeout_budget, visit_budget_factor,
//                                       default_inactivity_timeout, active_timeout,
//                                       tcp_timeout_<state>: validated exactly as the flag is
//
// Handlers run on DPDK's telemetry thread. They read counters with relaxed
// loads and flows through FlowTable::snapshot (one shard lock at a time); they
// change nothing themselves — kill and set are posted to every worker's mailbox
// and executed by the owning lcore. Bad parameters get an error reply
// (a {"error": "..."} dict) and never a crash. Telemetry cannot unregister a
// command, so after the service stops the handlers answer "not running".
#pragma once

namespace flowcop::app {

class Service;

class Telemetry {
public:
    explicit Telemetry(Service& s);  // registers the commands (once per process)
    ~Telemetry();                    // detaches: handlers answer "not running"
};

} // namespace flowcop::app
