// SPDX-License-Identifier: BSD-3-Clause
// The state file's counters (issue 32, --state-file): what the restore at start and each save did, and
// the view readers read them through (state_families() in stats_rows.h: /metrics).
//
// Ownership: the service owns StateStats (like CtlServerStats), so readers started before the first
// save read valid memory. Threading: one writer per field at a time: the restore's fields are written by
// the main thread before the data plane starts; the save fields by the checkpoint thread while it
// runs, then by the main thread after it was joined (the final save at stop). Readers load relaxed.
#pragma once

#include <stats/histogram.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace flowcop::app {

// Why flows of the file were not restored. The first ones are a file refused whole (counted once, for
// the file: its flows cannot be trusted); the others count flows.
enum class StateDiscard : uint8_t {
    unreadable,       // open/stat/mmap failed
    not_a_state_file, // no FLOWCOPS magic, shorter than a header
    version,          // another format version
    header_checksum,  // the header is damaged
    truncated,        // shorter than its header says
    trailing,         // longer than its header says
    checksum,         // the entries are damaged
    // Per flow:
    invalid,     // a field out of range, or a key twice
    no_room,     // the new table (capacity, probe window) had no place for it
    key_changed, // its key is not one the new --vlan-key / --port-zone can produce
    not_tracked, // its protocol is not in the new --track
    count
};
inline constexpr size_t kStateDiscardCount = static_cast<size_t>(StateDiscard::count);
inline constexpr const char* kStateDiscardNames[kStateDiscardCount] = {
    "unreadable", "not_a_state_file", "version", "header_checksum", "truncated",  "trailing",
    "checksum",   "invalid",          "no_room", "key_changed",     "not_tracked"};

struct StateStats {
    uint64_t restored = 0;   // gauge: flows restored at start (renumbered ones included)
    uint64_t renumbered = 0; // gauge: of those, flows given a new id (flow_image.h: a slot collision)
    std::array<uint64_t, kStateDiscardCount> discarded{};
    stats::Histogram restore_ns{1'000'000,     10'000'000,    100'000'000,   500'000'000,
                                1'000'000'000, 2'000'000'000, 5'000'000'000, 10'000'000'000};
    uint64_t saves_ok = 0;
    uint64_t saves_failed = 0;
    uint64_t saved_flows = 0; // gauge: flows the last successful save wrote
    stats::Histogram save_ns{1'000'000,     10'000'000,    100'000'000,   500'000'000,
                             1'000'000'000, 2'000'000'000, 5'000'000'000, 10'000'000'000};
};

// What state_families() read: the service's StateStats, or nullptr (every row reads 0).
struct StateView {
    const StateStats* stats = nullptr;
    bool enabled = false; // --state-file given: the exit summary has a state line
};

} // namespace flowcop::app
