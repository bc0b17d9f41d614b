// SPDX-License-Identifier: BSD-3-Clause
// FlowTable's expiry side: the inactivity cop, kill, runtime timeout changes and
// shutdown (see flow_table.h for the deadline and locking rules).
#include <conntrack/flow_table.h>

#include <rte_hash.h>
#include <rte_prefetch.h>

namespace flowcop::conntrack {

struct FlowTable::CopCallbacks {
    FlowTable& table;
    uint64_t now_ns;
    // A flow the pass will examine soon: its record, the key a fire reads and the shard lock a fire
    // takes, all at addresses known from the position alone. The record and the lock are written, so
    // they are asked for with write intent (DPDK 22.11's rte_prefetch0_write is still experimental).
    void prefetch(uint32_t pos) const noexcept
    {
        const uint8_t* key = table.key_store_ + size_t(pos) * table.key_stride_;
        __builtin_prefetch(&table.records_[pos], 1, 3);
        rte_prefetch0(key);
        rte_prefetch0(key + sizeof(packet::FlowKey) - 1);
        __builtin_prefetch(&table.shards_[shard_of(pos)], 1, 3);
    }
    uint64_t deadline(uint32_t pos) const noexcept { return table.deadline_of(table.records_[pos]); }
    bool fire(uint32_t pos) const noexcept { return table.fire(pos, now_ns); }
};

void FlowTable::start_clock(uint64_t now_ns) noexcept
{
    clock_started_ = true;
    // On the still empty wheel an expire() only moves the cursor up to now.
    wheel_->expire(now_ns, UINT64_MAX, UINT64_MAX, CopCallbacks{*this, now_ns});
}

CopResult FlowTable::run_cop(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept
{
    if (!clock_started_) [[unlikely]]
        start_clock(now_ns);
    CopResult r;
    r.wheel = wheel_->expire(now_ns, fire_budget, visit_budget, CopCallbacks{*this, now_ns});
    delete_deferred();
    bump(counters_.cop_passes);
    bump(counters_.cop_visited, r.wheel.visited);
    bump(counters_.cop_fired, r.wheel.fired);
    if (r.wheel.budget_exhausted)
        bump(counters_.cop_budget_exhausted);
    return r;
}

bool FlowTable::fire(uint32_t pos, uint64_t now_ns) noexcept
{
    Shard& s = shards_[shard_of(pos)];
    // The cop never waits: a held shard means a reader is looking at this flow.
    // The wheel re-links it for the next tick; its deadline is re-read then.
    if (!rte_spinlock_trylock(&s.lock)) {
        bump(counters_.cop_lock_failures);
        return false;
    }
    const FlowRecord& r = records_[pos];
    const Reason reason = reason_of(r, now_ns);
    if (reason != Reason::reset && reason != Reason::killed)
        counters_.timeout_lag_ns.observe(now_ns - deadline_of(r));
    retire(pos, reason, now_ns);
    rte_spinlock_unlock(&s.lock);
    deferred_[n_deferred_++] = pos;
    if (n_deferred_ == kDeleteBatch)
        delete_deferred();
    return true;
}

bool FlowTable::kill(const packet::FlowKey& key) noexcept
{
    const int32_t pos = rte_hash_lookup(hash_, &key);
    if (pos < 0)
        return false;
    FlowRecord& r = records_[pos];
    store_relaxed(r.flags, uint8_t(r.flags | FlowRecord::kKilled));
    rearm(uint32_t(pos));
    return true;
}

void FlowTable::set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_timeout_s) noexcept
{
    constexpr uint64_t ns = 1'000'000'000;
    for (size_t s = 0; s < static_cast<size_t>(tcpstate::State::count); ++s)
        store_relaxed(state_timeout_ns_[s], uint64_t(timeouts.effective(static_cast<tcpstate::State>(s))) * ns);
    store_relaxed(active_timeout_ns_, uint64_t(active_timeout_s) * ns);
    // Longer timeouts need nothing (the wheel re-reads deadlines), but a shorter
    // one would leave flows cached later than their new deadline: re-arm them all.
    rebase_cursor_ = 0;
}

uint32_t FlowTable::rebase_step(uint32_t max_records) noexcept
{
    uint32_t seen = 0;
    while (rebase_cursor_ < n_records_ && seen < max_records) {
        const uint32_t pos = rebase_cursor_++;
        ++seen;
        if (records_[pos].flags & FlowRecord::kInUse) {
            rearm(pos);
            bump(counters_.rebase_visited);
        }
    }
    return seen;
}

// A flow already marked (RST, kill) or past its deadline when the table is torn
// down ends for that reason; only flows that were really still open get `reason`.
Reason FlowTable::final_reason(const FlowRecord& r, Reason reason, uint64_t now_ns) const noexcept
{
    if ((r.flags & (FlowRecord::kReset | FlowRecord::kKilled)) || deadline_of(r) <= now_ns)
        return reason_of(r, now_ns);
    return reason;
}

void FlowTable::destroy_all(uint64_t now_ns, Reason reason) noexcept
{
    for (uint32_t s = 0; s < n_shards_; ++s) {
        hold_shard(s);
        const uint32_t end = std::min(n_records_, (s + 1) * kShardSize);
        for (uint32_t pos = s * kShardSize; pos < end; ++pos)
            if (records_[pos].flags & FlowRecord::kInUse)
                end_flow(pos, final_reason(records_[pos], reason, now_ns), now_ns);
        release_shard(s);
    }
}

} // namespace flowcop::conntrack
