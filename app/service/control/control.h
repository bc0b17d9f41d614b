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
#include <string>
#include <vector>

namespace flowcop::app {

// --policy's rules as the control plane shows them (flowcopctl -P, /flowcop/policy, the metrics): each
// rule's counters summed over the lcores; the last row is the default `policy` action.
struct PolicyRuleRow {
    unsigned index = 0;   // file order; the default's is the rule count
    std::string text;     // the rule's identity (its text without comments), or "policy accept|drop"
    std::string comment;  // its comment "...", may be empty
    bool drop = false;    // its action
    uint64_t packets = 0; // judged by it, since the rule appeared (carried over reloads that keep it)
    uint64_t bytes = 0;   // their IP bytes
};
struct PolicyListing {
    bool active = false;   // started with --policy
    bool enforced = false; // inline mode: drops happen (monitor: a dry run)
    std::string path;
    std::vector<PolicyRuleRow> rules;
    uint64_t verdicts[5][2] = {}; // by conntrack state (ct_judge.h's order) and accept/drop
    uint64_t reloads_ok = 0, reloads_failed = 0;
    std::string last_error; // the last failed reload's message, empty when none failed
};

class Control {
public:
    virtual ~Control() = default;
    // --policy (issue 31): re-reads the file, compiles it and swaps it in on every lcore between bursts
    // (counters of unchanged rules carry over). False with one line in `error` when there is no policy or
    // the file is bad; the running policy stays, and the failure is logged and counted.
    virtual bool reload_policy(std::string& error)
    {
        error = "flowcop runs without --policy";
        return false;
    }
    // The rules and their counters; active false without --policy.
    virtual PolicyListing policy_listing() const { return {}; }

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
    // how many were still there, or -1 if it did not answer. `killed`, when not nullptr, gets n entries: 1
    // for an id whose flow was still there and is now marked, else 0 (flowcopctl -D prints those flows).
    virtual int kill_ids(size_t worker, const uint64_t* ids, unsigned n, uint8_t* killed) = 0;
};

} // namespace flowcop::app
