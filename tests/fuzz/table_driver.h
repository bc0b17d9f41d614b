// SPDX-License-Identifier: BSD-3-Clause
// The flow-table fuzz target's body: runs one script (table_script.h) against a fresh FlowTable in heap
// memory (no EAL), packets through submit() (the pipeline: up to two bursts pending) and drain(), with
// cop passes, kills and shutdowns, and after every drain compares the table with TableModel
// (table_model.h) and checks the index's own invariant (every bucket's overflow count). At the end it
// passes the cop far past every deadline and requires an empty table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flowcop::fuzz {

// What a run did (tests use it to show that a seed reaches the path it is named for).
struct TableRunStats {
    uint64_t packets = 0, created = 0, fired = 0, evicted = 0, probe_window_full = 0, refused = 0, budget_stops = 0;
};

// "" when the table matched the model throughout; otherwise the first difference and where.
std::string run_table(const uint8_t* data, size_t size, TableRunStats* stats = nullptr);

} // namespace flowcop::fuzz
