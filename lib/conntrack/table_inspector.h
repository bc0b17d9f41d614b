// SPDX-License-Identifier: BSD-3-Clause
// TableInspector: the test seam of FlowTable, for unit tests, fuzz targets and benchmarks only (the
// service never includes it). It reaches what the table's public API keeps inside: the cross-burst
// pipeline (submit/drain, flow_table.h's Structure), a key's position, a flow's true deadline, the
// index's invariants, and a shard held as a control-plane reader holds it. Same threading as the table:
// everything on the owner's thread (or with the table quiescent) but hold_shard/release_shard, which any
// thread may call.
#pragma once

#include <conntrack/flow_index.h>
#include <conntrack/flow_table.h>
#include <packet/flow_key.h>
#include <packet/packet.h>

#include <cstdint>

namespace flowcop::conntrack {

class TableInspector {
public:
    // FlowTable's cross-burst pipeline: submit() tracks the burst of two calls earlier, drain() the rest.
    static void submit(FlowTable& t, const packet::Packet* const* pkts, unsigned n, const uint64_t* times_ns) noexcept
    {
        t.submit(pkts, n, times_ns);
    }
    static void submit(FlowTable& t, const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
    {
        t.submit(pkts, n, now_ns);
    }
    static void drain(FlowTable& t) noexcept { t.drain(); }
    static bool pending(const FlowTable& t) noexcept { return t.pending(); }
    // The record position of a key, or -1.
    static int32_t find(const FlowTable& t, const packet::FlowKey& key) noexcept { return t.find(key); }
    // The deadline the table works to for the flow at `pos` (deadline.h); pos must hold a flow.
    static uint64_t deadline(const FlowTable& t, uint32_t pos) noexcept { return t.deadline_of(pos); }
    // The record at `pos`, as the owner sees it (tests comparing it field by field with a model).
    static const FlowRecord& record(const FlowTable& t, uint32_t pos) noexcept { return t._records[pos]; }
    // The index, for its invariant checks, and the bucket a position's key hashes to.
    static const FlowIndex& index(const FlowTable& t) noexcept { return t._index; }
    static uint32_t home_bucket(const FlowTable& t, uint32_t pos) noexcept { return t.home_bucket(pos); }
    // Blocks until the shard is held; hold it briefly (the owner's cop defers the shard's due flows).
    static void hold_shard(const FlowTable& t, uint32_t shard) noexcept { t.hold_shard(shard); }
    static void release_shard(const FlowTable& t, uint32_t shard) noexcept { t.release_shard(shard); }
};

} // namespace flowcop::conntrack
