// SPDX-License-Identifier: BSD-3-Clause
// TableInspector: the test seam of FlowTable, for unit tests and fuzz targets only (the service never
// includes it). It reads what the table's public API keeps inside: a key's position, a flow's true
// deadline, the index's invariants, and a shard held as a control-plane reader holds it. Same threading
// as the table: find/deadline/index/home_bucket on the owner's thread (or with the table quiescent),
// hold_shard/release_shard from any thread.
#pragma once

#include <conntrack/flow_index.h>
#include <conntrack/flow_table.h>
#include <packet/flow_key.h>

#include <cstdint>

namespace flowcop::conntrack {

class TableInspector {
public:
    // The record position of a key, or -1.
    static int32_t find(const FlowTable& t, const packet::FlowKey& key) noexcept { return t.find(key); }
    // The deadline the table works to for the flow at `pos` (deadline.h); pos must hold a flow.
    static uint64_t deadline(const FlowTable& t, uint32_t pos) noexcept { return t.deadline_of(pos); }
    // The index, for its invariant checks, and the bucket a position's key hashes to.
    static const FlowIndex& index(const FlowTable& t) noexcept { return t._index; }
    static uint32_t home_bucket(const FlowTable& t, uint32_t pos) noexcept { return t.home_bucket(pos); }
    // Blocks until the shard is held; hold it briefly (the owner's cop defers the shard's due flows).
    static void hold_shard(const FlowTable& t, uint32_t shard) noexcept { t.hold_shard(shard); }
    static void release_shard(const FlowTable& t, uint32_t shard) noexcept { t.release_shard(shard); }
};

} // namespace flowcop::conntrack
