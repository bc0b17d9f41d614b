// SPDX-License-Identifier: BSD-3-Clause
// The control plane's requests to a worker lcore.
//
// Only the owning lcore may change its flows or its wheel, so the control plane
// never does: it posts a Command to the worker's mailbox (an rte_ring, multi-
// producer / single-consumer) and waits for `done`. The worker drains its
// mailbox between bursts (one ring dequeue, almost always empty), executes the
// command on its own table and publishes the result with a release store.
// A Command must outlive the wait: if the worker does not answer in time (it
// has stopped), the waiter abandons — never frees — the command. A copy of a
// Command is the same request, not yet done: broadcast() posts one per worker.
#pragma once

#include <conntrack/flow_snapshot.h>
#include <packet/flow_key.h>
#include <policy/counters.h>
#include <policy/policy.h>
#include <protostate/proto_state.h>
#include <tcpstate/tcp_state.h>
#include <tcpstate/window.h>

#include <atomic>
#include <cstdint>

namespace flowcop::app {

// `done`, which a copy starts afresh (false): copying a Command copies its request, never its answer's
// state, so a new field of the request reaches every worker without a copy list to keep up.
struct DoneFlag : std::atomic<bool> {
    DoneFlag() noexcept : std::atomic<bool>(false) {}
    DoneFlag(const DoneFlag&) noexcept : std::atomic<bool>(false) {}
    DoneFlag& operator=(const DoneFlag&) = delete;
};

struct Command {
    enum class Type : uint8_t {
        kill,         // key -> result 1 if the flow was on this lcore (it is reaped on the next tick)
        set_timeouts, // timeouts + active_timeout_s + proto_timeouts -> result 0
        set_budgets,  // fire_budget + visit_budget_factor -> result 0
        set_window,   // window (TCP window tracking's policy) -> result 0
        get,          // key -> result 1 and `flow` if the flow is on this lcore, else 0
        kill_ids,     // ids[0..n_ids) -> result: how many of those flows were still here and are now marked
        set_timeout,  // key + flow_timeout_s -> result 1 and `flow` (its deadline now + flow_timeout_s) if the
                      // flow is on this lcore, 0 if not, 2 if this lcore's timeout-update slots are all taken
        set_policy,   // policy + policy_counters (this lcore's new copy, allocated by the poster) -> the
                      // worker carries the old counters of unchanged rules over, swaps them in between
                      // bursts and hands the old pair back in the same fields for the poster to free;
                      // result 0 (1: the worker runs without a policy and kept the new pair unused)
    };
    // Flow ids one kill_ids command carries: the owner marks them in one mailbox turn (a few us).
    static constexpr unsigned kMaxIds = 256;
    Type type = Type::kill;
    packet::FlowKey key{};
    tcpstate::Timeouts timeouts{};
    protostate::Timeouts proto_timeouts = protostate::Timeouts::netfilter_defaults(); // with set_timeouts
    uint32_t active_timeout_s = 0;
    uint32_t flow_timeout_s = 0; // with set_timeout
    uint64_t fire_budget = 0;
    uint32_t visit_budget_factor = 0;
    tcpstate::WindowPolicy window{};
    conntrack::FlowSnapshot flow{};
    unsigned n_ids = 0;
    uint64_t ids[kMaxIds] = {};
    uint8_t killed[kMaxIds] = {};                // kill_ids: 1 where ids[i]'s flow was there and is now marked
    policy::Policy* policy = nullptr;            // with set_policy (see there)
    policy::Counters* policy_counters = nullptr; // with set_policy
    int result = 0;
    DoneFlag done;
};

} // namespace flowcop::app
