// SPDX-License-Identifier: BSD-3-Clause
// One worker lcore's polling loop.
//
// Each turn: for every RX queue the lcore owns, one burst of up to kBurst
// packets -> parse (then --vlan-key, key_policy.h, unless it is `both`: the default
// costs nothing) -> FlowTable::process_burst (the flow table) -> forward
// (inline) or free (monitor). Then, between bursts: the inactivity cop when it
// is due, the control-plane mailbox, and a slice of a pending rebase sweep.
//
// The cop runs every check interval. When a budget stops a pass with work left,
// the next pass is scheduled kCopRetryNs (1 ms) later — not immediately, which
// would starve RX (the seed's schedule_imm trap), and not a whole interval
// later, which would delay every tick queued behind the over-full bucket.
//
// Nothing on this path allocates, locks a contended lock, logs or makes a
// syscall. WorkerStats (worker_stats.h) are single-writer fields read by other threads.
#pragma once

#include "clock.h"
#include "commands.h"
#include "options.h"
#include "ports.h"
#include "worker_stats.h"

#include <conntrack/flow_table.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rte_ring;

namespace flowcop::app {

inline constexpr unsigned kBurst = 32;
inline constexpr uint64_t kCopRetryNs = 1'000'000;
inline constexpr uint32_t kRebaseSlice = 4096;

struct WorkerSettings {
    Mode mode = Mode::monitor;
    ClockSource clock = ClockSource::tsc;
    uint64_t check_interval_ns = 1'000'000'000;
    uint64_t fire_budget = 128;
    uint32_t visit_budget_factor = 16;
    packet::VlanKey vlan_key = packet::VlanKey::both; // applied to every parsed packet and to kills
};

class Worker {
public:
    static std::unique_ptr<Worker> create(const WorkerPlan& plan, conntrack::FlowTable& table, const TscClock& clock,
                                          TimestampField ts, const WorkerSettings& settings, std::string& error);
    ~Worker();

    // The lcore body: loops until `quit`, then ends every open flow (reason shutdown).
    void run(const std::atomic<bool>& quit) noexcept;
    // Any thread. False if the mailbox is full.
    bool post(Command* cmd) noexcept;

    unsigned lcore() const noexcept { return _plan.lcore; }
    const std::vector<RxQueueRef>& plan_rx() const noexcept { return _plan.rx; }
    conntrack::FlowTable& table() noexcept { return _table; }
    const conntrack::FlowTable& table() const noexcept { return _table; }
    const WorkerStats& stats() const noexcept { return _stats; }

private:
    Worker(const WorkerPlan& plan, conntrack::FlowTable& table, const TscClock& clock, TimestampField ts,
           const WorkerSettings& settings) noexcept
        : _plan(plan), _table(table), _clock(clock), _packet_clock(ts), _settings(settings)
    {}
    void poll(const RxQueueRef& q, uint64_t tsc) noexcept;
    void run_cop(uint64_t now_ns) noexcept;
    void drain_mailbox() noexcept;
    void execute(Command& cmd) noexcept;
    uint64_t now_ns() const noexcept;

    WorkerStats _stats;
    WorkerPlan _plan;
    conntrack::FlowTable& _table;
    const TscClock& _clock;
    PacketClock _packet_clock;
    WorkerSettings _settings;
    rte_ring* _mailbox = nullptr;
    uint64_t _next_cop_ns = 0;
};

} // namespace flowcop::app
