// SPDX-License-Identifier: BSD-3-Clause
// The /flowcop/* telemetry commands as plain functions over the stats view and the control
// interface: what telemetry.cpp registers with DPDK, and what tests/app/control/test_telemetry_handlers.cpp
// calls directly on rte_tel_data objects (no EAL, no socket, no service).
//
// Each takes the raw parameter text DPDK hands over (nullptr = none), fills `d` and returns 0:
// every bad input and every refusal is a reply, {"error": "<one sentence>"} (set errors add
// "settable": [names]), never a negative return, which DPDK 22.11 would turn into a bare error
// with no reason. While the service is not running each answers "flowcop is not running".
// Replies are described in telemetry.h; strings go through reply_text() (control_parse.h).
// Threading: called on a telemetry thread, one at a time (telemetry.cpp serialises them).
#pragma once

#include "control.h"
#include "stats_view.h"

struct rte_tel_data;

namespace flowcop::app {

int telemetry_stats(const StatsView& view, const Control& control, const char* params, rte_tel_data* d);
int telemetry_config(const Control& control, const char* params, rte_tel_data* d);
int telemetry_ports(const StatsView& view, const Control& control, const char* params, rte_tel_data* d);
int telemetry_flows(const StatsView& view, const Control& control, const char* params, rte_tel_data* d);
int telemetry_kill(Control& control, const char* params, rte_tel_data* d);
int telemetry_set(Control& control, const char* params, rte_tel_data* d);
// --policy: the rules' counters (packets and bytes arrays by rule, the default last) and reload counts;
// and a reload of the file (an error reply keeps the running policy).
int telemetry_policy(const Control& control, const char* params, rte_tel_data* d);
int telemetry_policy_reload(Control& control, const char* params, rte_tel_data* d);

} // namespace flowcop::app
