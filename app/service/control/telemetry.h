// SPDX-License-Identifier: BSD-3-Clause
// flowcop's control plane over DPDK telemetry (client: Debian's dpdk-telemetry.py).
//
//   /flowcop/stats                      counters, from the stats rows (stats_rows.h): every row's
//                                       total over lcores (labelled rows also per label value,
//                                       <key>_<value>; histograms <key>_count and <key>_sum_ns),
//                                       per-lcore arrays (<key>_per_lcore, in the order of
//                                       "lcores") and per-port arrays (in the order of "ports")
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
// The handlers are plain functions (telemetry_commands.h) over the stats view and the Control
// interface. DPDK 22.11's callbacks carry no user pointer and a registered command cannot be
// removed, so this file binds them: Telemetry attaches one {view, control} pair for its lifetime,
// and each callback runs its handler under one mutex (telemetry threads are one per connected
// client, so two clients' requests may arrive at once). Handlers read counters with relaxed loads
// and flows through Control::snapshot (one shard lock at a time, so the owner's cop defers at most
// that shard's due flows for one pass over kShardSize records); they change nothing themselves —
// kill and set go through Control, which posts them to every worker's mailbox and answers once
// every worker has done it (2 s at most).
//
// Replies. Success: the shapes above. Any bad input — malformed tuple, unknown name, out-of-range
// value, bad filter, parameters to a command that takes none, oversized or binary parameters — gets
// {"error": "<one sentence>"} (set errors add "settable": [names]) and never a crash; nothing is
// changed. Strings in replies are printable ASCII only (control_parse.h's reply_text: DPDK 22.11
// mangles other bytes into invalid JSON) and at most 127 bytes.
//
// Exposure: DPDK creates the socket as <runtime dir>/dpdk_telemetry.v2, i.e.
// /var/run/dpdk/<file-prefix>/ for root (the directory is mode 0700) or
// $XDG_RUNTIME_DIR/dpdk/<file-prefix>/ otherwise; only that user can connect.
// /flowcop/kill and /flowcop/set change the running service: whoever can open
// the socket controls flowcop. EAL's --no-telemetry removes the socket.
//
// After the Telemetry object is gone the handlers answer "flowcop is not running".
#pragma once

#include <string>

namespace flowcop::app {

class Control;
struct StatsView;

// Registers the five /flowcop/* commands with DPDK telemetry, once per process
// (later calls return ""). Needs no EAL. Returns "" or the commands DPDK refused
// (it rejects a help text of 128 bytes or more, or a name it already has).
std::string register_telemetry_commands();

class Telemetry {
public:
    // Attaches the view and the control interface (both must outlive this object) and registers
    // the commands; a refused command is logged as a warning (flowcop.telemetry) (the service runs on).
    Telemetry(const StatsView& view, Control& control);
    ~Telemetry(); // detaches: handlers answer "not running"
    Telemetry(const Telemetry&) = delete;
    Telemetry& operator=(const Telemetry&) = delete;
};

} // namespace flowcop::app
