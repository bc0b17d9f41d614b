// SPDX-License-Identifier: BSD-3-Clause
// What the control plane (telemetry commands, the exporter's config and liveness families) may ask
// of the running service: a small interface, so those readers never include service.h and their
// handlers are unit-tested against a fake.
//
// Contract. Every call is made from a control-plane thread (a telemetry client's, an HTTP thread),
// never from a worker lcore, and may run concurrently with the data plane. Nothing here touches a
// worker's flows or wheel directly: kill() and apply() post a Command to every worker's mailbox
// (commands.h) and wait for each owner lcore to execute it, 2 s at most; a worker that does not
// answer in time (it is stopping) makes the call report failure, and the service then keeps the
// previous configuration. snapshot() copies flows under the owning table's shard locks, one shard
// at a time (conntrack::FlowTable::snapshot); read_slice() under one shard lock for one bounded slice.
// get(), set_timeout() and kill_ids() are executed by the owner lcore through its mailbox, as kill() is. current_options() and apply() serialise on one mutex
// of their own, which only the control plane takes.
#pragma once

#include <service/options/options.h>

#include <conntrack/flow_snapshot.h>
#include <packet/flow_key.h>

#include <cstddef>
#include <cstdint>

namespace flowcop::app {

class Control {
public:
    virtual ~Control() = default;

    // True while the workers run (between start of run() and the end of the data plane).
    virtual bool running() const noexcept = 0;
    // The configuration as changed at run time by apply().
    virtual Options current_options() const = 0;
    // The service's clock now (ns), the time base of FlowSnapshot's deadlines.
    virtual uint64_t now_ns() const noexcept = 0;

    // Marks the flow due on the worker that has it. Returns how many workers had it (0 or 1), or
    // -1 if some worker did not answer.
    virtual int kill(const packet::FlowKey& key) = 0;
    // Makes `o`'s cop budgets, timeouts and active timeout every worker's, then o the current
    // options. false (and nothing recorded as current) if some worker did not answer.
    virtual bool apply(const Options& o) = 0;
    // Copies up to `max` flows of worker `worker` (StatsView::lcores order) that match `filter`.
    virtual size_t snapshot(size_t worker, const conntrack::SnapshotFilter& filter, conntrack::FlowSnapshot* out,
                            size_t max) const = 0;
    // One bounded slice of a whole-table walk of worker `worker` (conntrack::FlowTable::read_slice):
    // returns the next start, or conntrack::kNoPosition at the end (also for a worker that is not there).
    virtual uint32_t read_slice(size_t worker, uint32_t start, uint32_t max_records, conntrack::FlowSnapshot* out,
                                size_t& n) const = 0;
    // The flow with this key (either direction; VLAN IDs as --vlan-key keys them), asked of each worker's
    // owner lcore in turn (an O(1) lookup each). 1 with `out` and its worker's index, 0 if no worker has
    // it, -1 if some worker did not answer.
    virtual int get(const packet::FlowKey& key, conntrack::FlowSnapshot& out, size_t& worker) = 0;
    // conntrack -U --timeout: the flow with this key (as get() finds it) gets the deadline now + seconds
    // on its owner lcore's clock, until its next accepted packet (conntrack::FlowTable::set_flow_timeout).
    // 1 with `out` (after the change) and its worker's index, 0 if no worker has it, -1 if some worker did
    // not answer, -2 if the flow's worker has no timeout-update slot free (`worker` names it).
    virtual int set_timeout(const packet::FlowKey& key, uint32_t seconds, conntrack::FlowSnapshot& out,
                            size_t& worker) = 0;
    // Marks the flows with these ids (at most Command::kMaxIds) due on worker `worker`, which executes it:
    // how many were still there, or -1 if it did not answer.
    virtual int kill_ids(size_t worker, const uint64_t* ids, unsigned n) = 0;
};

} // namespace flowcop::app
