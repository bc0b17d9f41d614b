// SPDX-License-Identifier: BSD-3-Clause
// The tracking fuzz target's body: runs one script (track_script.h) against a fresh FlowTable,
// frame by frame through packet::parse -> FlowTable::process_burst, with cop passes, kills,
// timeout changes and shutdowns as the script says, and the Oracle (track_oracle.h) checking
// every step. Each frame is keyed as the worker keys it (its port, --vlan-key, its port's zone:
// track_script.h). With every protocol tracked (TrackSetup::all_protocols) each frame first goes through
// a fragment attributor, as in the worker: attributed in arrival order, and after each burst the
// frames it held for a first fragment are counted on that flow (FlowTable::count_held_fragments);
// it is swept before each cop pass. At the end it completes any rebase, runs one pass two hours
// later (past every timeout preset) and requires the table to be empty: every flow has a deadline.
//
// The table lives in heap memory; EAL is still started by the entry points (fuzz_eal.h). Eviction
// samples with the table's own generator, seeded by its config, so an input always takes the same
// path. Each frame is copied so that it ends exactly at the end of a heap allocation: under ASan, a
// parser read past the frame is reported, not silently served from a larger buffer.
#pragma once

#include <conntrack/counters.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace flowcop::fuzz {

// "" when every invariant held; otherwise the first one broken (and where: op index).
// A table that cannot be created is reported the same way (an environment failure).
// final_counters, if given, receives the table's counters at the end (tests use them to check
// that a seed reaches the path it is meant for). trace, if given, receives one line per op and
// per frame and the table's flows after each op (fuzz_explain, for triage of a finding).
std::string run_track(const uint8_t* data, size_t size, conntrack::Counters* final_counters = nullptr,
                      std::FILE* trace = nullptr);

} // namespace flowcop::fuzz
