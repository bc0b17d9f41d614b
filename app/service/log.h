// SPDX-License-Identifier: BSD-3-Clause
// flowcop's diagnostics go through DPDK's log (rte_log), so EAL's --log-level governs them as it
// governs DPDK's own lines: --log-level=flowcop:debug, --log-level=flowcop.*:warning,
// --log-level=flowcop.exporter:debug, --log-level=*:error.
//
// Types, each at INFO: flowcop.service (start-up lines, warnings, start-up errors, threads),
// flowcop.exporter (the HTTP exporter), flowcop.telemetry (DPDK telemetry and the telemetry
// guard), flowcop.events (the event writer in lib/events, which looks its type up by name).
// register_types() registers them all before rte_eal_init(), as DPDK's own types are: EAL then
// applies the --log-level options in the order given, so the last one matching a type wins (a
// type registered after EAL would pick the first). DPDK matches a pattern against whole type
// names, so "flowcop" alone would reach none of them: umbrella_log_level() rewrites EAL's
// argument flowcop:LEVEL to flowcop*:LEVEL before EAL parses it, keeping the order.
//
// What does not go through it: the messages printed before EAL starts (flag errors, --help,
// --version), EAL's own failure, the live status line and the summary (the program's output,
// which --quiet silences). Output: stderr (and syslog, as DPDK's console log does once EAL runs).
// Thread-safe; needs no EAL (unit tests log before any); never called on the per-packet path.
#pragma once

#include <cstdint>
#include <string>

namespace flowcop::app::log {

enum class Part { service, exporter, telemetry };

// Registers every flowcop type at INFO (idempotent). Call before rte_eal_init().
void register_types() noexcept;

// True if a line of `level` (RTE_LOG_ERR ... RTE_LOG_DEBUG) for `part` would be printed.
bool enabled(uint32_t level, Part part) noexcept;

// Logs one line: the formatted text and a newline (callers write the "flowcop: " prefix, so the
// texts stay those documented in app/operations.md). Any length; nothing if the level is off.
void write(uint32_t level, Part part, const char* fmt, ...) noexcept __attribute__((format(printf, 3, 4)));

// An EAL --log-level value with the umbrella name widened ("flowcop:debug" -> "flowcop*:debug");
// any other value is returned unchanged.
std::string umbrella_log_level(const std::string& value);

} // namespace flowcop::app::log
