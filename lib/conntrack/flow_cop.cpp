// SPDX-License-Identifier: BSD-3-Clause
// FlowTable's expiry side: the inactivity cop, kill, runtime timeout changes and
// shutdown (see flow_table.h for the deadline and locking rules).
#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>

#include <events/event.h>

#include <rte_prefetch.h>

#include <algorithm>

namespace flowcop::conntrack {

struct FlowTable::CopCallbacks {
    FlowTable& table;
    uint64_t now_ns;
    // A flow the pass will examine soon: its cold entry (the wheel's hook, first_seen), its record's
    // first line (the deadline's fields and the key a fire reads) and the shard lock a fire takes, all
    // at addresses known from the position alone. They are written, so they are asked for with write
    // intent (DPDK 22.11's rte_prefetch0_write is still experimental).
    void prefetch(uint32_t pos) const noexcept
    {
        __builtin_prefetch(&table._cold[pos], 1, 3);
        __builtin_prefetch(&table._records[pos], 1, 3);
        __builtin_prefetch(&table._shards[shard_of(pos)], 1, 3);
    }
    uint64_t deadline(uint32_t pos) const noexcept { return table.wheel_deadline_of(pos); }
    bool fire(uint32_t pos) const noexcept { return table.fire(pos, now_ns); }
};

void FlowTable::start_clock(uint64_t now_ns) noexcept
{
    _clock_started = true;
    // On the still empty wheel an expire() only moves the cursor up to now.
    _wheel->expire(now_ns, UINT64_MAX, UINT64_MAX, CopCallbacks{*this, now_ns});
}

CopResult FlowTable::run_cop(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept
{
    drain();
    if (!_clock_started) [[unlikely]]
        start_clock(now_ns);
    CopResult r;
    r.wheel = _wheel->expire(now_ns, fire_budget, visit_budget, CopCallbacks{*this, now_ns});
    delete_deferred();
    bump(_counters.cop_passes);
    bump(_counters.cop_visited, r.wheel.visited);
    // The wheel counts interim reports as fires (they take the fire budget); cop_fired counts ends.
    bump(_counters.cop_fired, r.wheel.fired - _pass_interims);
    _pass_interims = 0;
    if (r.wheel.budget_exhausted)
        bump(_counters.cop_budget_exhausted);
    return r;
}

CopResult FlowTable::reap_killed(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept
{
    drain();
    if (!_clock_started) [[unlikely]]
        start_clock(now_ns);
    // Only kill-marked flows are due: an RST-marked one keeps its packets until the tick, as always.
    struct KillCallbacks : CopCallbacks {
        uint64_t deadline(uint32_t pos) const noexcept
        {
            const uint64_t d = table.wheel_deadline_of(pos);
            return d == 0 || (table._records[pos].flags & FlowRecord::kKilled) ? d : UINT64_MAX;
        }
    };
    CopResult r;
    r.wheel = _wheel->expire_ahead(kDueNow, fire_budget, visit_budget, KillCallbacks{{*this, now_ns}});
    delete_deferred();
    bump(_counters.cop_visited, r.wheel.visited);
    bump(_counters.cop_fired, r.wheel.fired);
    return r;
}

bool FlowTable::fire(uint32_t pos, uint64_t now_ns) noexcept
{
    // Due for its interim report but not (yet) for its end: report and re-arm, no lock (the flow
    // stays; readers see no change but the cold entry's report count, which they do not read).
    if (_rules.interim_ns != 0 && deadline_of(pos) > now_ns) {
        report_interim(pos, now_ns);
        return true;
    }
    Shard& s = _shards[shard_of(pos)];
    // The cop never waits: a held shard means a reader is looking at this flow.
    // The wheel re-links it for the next tick; its deadline is re-read then.
    if (!rte_spinlock_trylock(&s.lock)) {
        bump(_counters.cop_lock_failures);
        return false;
    }
    const Reason reason = reason_of(pos, now_ns);
    if (reason != Reason::reset && reason != Reason::killed)
        _counters.timeout_lag_ns.observe(now_ns - deadline_of(pos));
    retire(pos, reason, now_ns);
    rte_spinlock_unlock(&s.lock);
    _deferred[_n_deferred++] = pos;
    if (_n_deferred == kDeleteBatch)
        delete_deferred();
    return true;
}

void FlowTable::report_interim(uint32_t pos, uint64_t now_ns) noexcept
{
    FlowCold& c = _cold[pos];
    // The boundary being reported: the flow's first packet for the first one, else the previous
    // boundary. A flow that saw no packet since has nothing new to report.
    const uint64_t since = c.first_seen_ns + uint64_t(c.exports) * _rules.interim_ns;
    const bool news = _records[pos].last_seen_ns > since;
    // Every boundary passed by now, not just the next one: a cop that comes late (budget backlog,
    // a pause in a packet-clock capture) reports once, never once per missed boundary with nothing new.
    const uint64_t passed = now_ns > c.first_seen_ns ? (now_ns - c.first_seen_ns) / _rules.interim_ns : 0;
    c.exports = uint16_t(std::min<uint64_t>(std::max<uint64_t>(passed, c.exports + 1u), kMaxInterimReports));
    if (news) {
        emit(pos, events::Kind::interim, Reason::count, now_ns);
        bump(_counters.interim_reports);
    } else {
        bump(_counters.interim_idle); // the fire it took from the budget is not invisible
    }
    _wheel->schedule(pos, wheel_deadline_of(pos));
    ++_pass_interims;
}

void FlowTable::delete_deferred() noexcept
{
    // All the keys' probes first, so that their bucket lines are in flight together; then the deletes.
    // A retired record keeps its key until its position is reused, which only remove() allows.
    Probe probes[kDeleteBatch];
    for (unsigned i = 0; i < _n_deferred; ++i) {
        probes[i] = probe_of(_records[_deferred[i]].key);
        rte_prefetch0(_index.home(probes[i]));
    }
    for (unsigned i = 0; i < _n_deferred; ++i)
        remove(_deferred[i], probes[i]);
    _n_deferred = 0;
}

bool FlowTable::kill(const packet::FlowKey& key) noexcept
{
    const int32_t pos = find(key);
    return pos >= 0 && kill_id(make_flow_id(_cold[pos].generation, uint32_t(pos)));
}

bool FlowTable::kill_id(uint64_t flow_id) noexcept
{
    const uint32_t pos = flow_id_slot(flow_id);
    if (pos >= _capacity || !(_records[pos].flags & FlowRecord::kInUse) ||
        _cold[pos].generation != flow_id_generation(flow_id))
        return false;
    FlowRecord& r = _records[pos];
    store_relaxed(r.flags, uint8_t(r.flags | FlowRecord::kKilled));
    rearm(pos);
    return true;
}

FlowTable::TimeoutUpdate FlowTable::set_flow_timeout(const packet::FlowKey& key, uint32_t seconds, uint64_t now_ns,
                                                     FlowSnapshot& out) noexcept
{
    const int32_t found = find(key);
    if (found < 0)
        return TimeoutUpdate::absent;
    const uint32_t pos = uint32_t(found);
    FlowRecord& r = _records[pos];
    // The flow's own slot if it holds one (a second -U before any packet), else a free one.
    uint8_t slot = r.timeout_slot;
    if (slot == 0 || _set_deadlines[slot].pos != pos)
        slot = claim_timeout_slot();
    if (slot == 0)
        return TimeoutUpdate::full;
    // Under the flow's shard lock: a reader that sees the slot sees the deadline that goes with it.
    const uint32_t shard = shard_of(pos);
    hold_shard(shard);
    store_relaxed(_set_deadlines[slot].pos, pos);
    store_relaxed(_set_deadlines[slot].deadline_ns, now_ns + uint64_t(seconds) * 1'000'000'000);
    store_relaxed(r.timeout_slot, slot);
    release_shard(shard);
    // A shorter deadline moves the flow to an earlier bucket; a longer one leaves the wheel's cached
    // deadline early, which the wheel allows (it re-reads the deadline when that comes due).
    rearm(pos);
    copy_flow(pos, r.flags, _rules, out);
    return TimeoutUpdate::set;
}

uint8_t FlowTable::claim_timeout_slot() noexcept
{
    for (unsigned s = 1; s <= kMaxTimeoutUpdates; ++s)
        if (_set_deadlines[s].pos == kNoPosition)
            return uint8_t(s);
    // Reclaim a slot whose flow ended (its position free or another flow's) or saw a packet since.
    for (unsigned s = 1; s <= kMaxTimeoutUpdates; ++s) {
        const uint32_t p = _set_deadlines[s].pos;
        const FlowRecord& r = _records[p];
        if ((r.flags & FlowRecord::kInUse) && r.timeout_slot == uint8_t(s))
            continue;
        // A reader holding p's shard may have read the slot before it was cleared: wait for it.
        hold_shard(shard_of(p));
        store_relaxed(_set_deadlines[s].pos, kNoPosition);
        release_shard(shard_of(p));
        return uint8_t(s);
    }
    return 0;
}

bool FlowTable::get(const packet::FlowKey& key, FlowSnapshot& out) const noexcept
{
    const int32_t pos = find(key);
    if (pos < 0)
        return false;
    copy_flow(uint32_t(pos), _records[pos].flags, _rules, out);
    return true;
}

void FlowTable::set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_timeout_s) noexcept
{
    constexpr uint64_t kNs = 1'000'000'000;
    for (size_t s = 0; s < tcpstate::kStateCount; ++s)
        store_relaxed(_rules.state_timeout_ns[s], uint64_t(timeouts.effective(static_cast<tcpstate::State>(s))) * kNs);
    store_relaxed(_rules.active_timeout_ns, uint64_t(active_timeout_s) * kNs);
    // Window tracking's caps (tcpstate::capped_timeout): 0 s is no cap.
    const uint32_t caps[tcpstate::kCapCount] = {0, timeouts.max_retrans, timeouts.unacknowledged,
                                                timeouts.effective(tcpstate::State::close)};
    for (size_t c = 0; c < tcpstate::kCapCount; ++c)
        store_relaxed(_rules.cap_timeout_ns[c], caps[c] == 0 ? UINT64_MAX : uint64_t(caps[c]) * kNs);
    _timeouts = timeouts;
    _steady_rules = tcpstate::steady_rules(_window_policy, _timeouts);
    // A steady flow's inactivity timeout (ESTABLISHED, under each cap): one last seen less than that ago is
    // live, so its steady packet skips the exact test (steady_horizon()).
    const uint64_t established = _rules.state_timeout_ns[static_cast<size_t>(tcpstate::State::established)];
    for (size_t c = 0; c < tcpstate::kCapCount; ++c)
        _steady_slack_ns[c] = active_timeout_s != 0 ? 0 : std::min(established, _rules.cap_timeout_ns[c]);
    // Longer timeouts need nothing (the wheel re-reads deadlines), but a shorter
    // one would leave flows cached later than their new deadline: re-arm them all.
    _rebase_cursor = 0;
}

void FlowTable::set_proto_timeouts(const protostate::Timeouts& timeouts) noexcept
{
    constexpr uint64_t kNs = 1'000'000'000;
    for (size_t t = 0; t < protostate::kTimeoutCount; ++t)
        store_relaxed(_rules.state_timeout_ns[tcpstate::kStateCount + t],
                      uint64_t(timeouts.seconds(static_cast<protostate::Timeout>(t))) * kNs);
    _rebase_cursor = 0; // as set_timeouts(): a shortened timeout must not fire late
}

uint32_t FlowTable::rebase_step(uint32_t max_records, uint32_t max_moves) noexcept
{
    uint32_t seen = 0, moved = 0;
    while (_rebase_cursor < _capacity && seen < max_records && moved < max_moves) {
        const uint32_t pos = _rebase_cursor++;
        ++seen;
        if (_records[pos].flags & FlowRecord::kInUse) {
            moved += rearm(pos) ? 1 : 0;
            bump(_counters.rebase_visited);
        }
    }
    bump(_counters.rebase_moved, uint64_t{moved});
    return seen;
}

// A flow already marked (RST, kill) or past its deadline when the table is torn
// down ends for that reason; only flows that were really still open get `reason`.
Reason FlowTable::final_reason(uint32_t pos, Reason reason, uint64_t now_ns) const noexcept
{
    if ((_records[pos].flags & (FlowRecord::kReset | FlowRecord::kKilled)) || deadline_of(pos) <= now_ns)
        return reason_of(pos, now_ns);
    return reason;
}

void FlowTable::destroy_all(uint64_t now_ns, Reason reason) noexcept
{
    drain();
    for (uint32_t s = 0; s < _n_shards; ++s) {
        hold_shard(s);
        const uint32_t end = std::min(_capacity, (s + 1) * kShardSize);
        for (uint32_t pos = s * kShardSize; pos < end; ++pos) {
            const FlowRecord& r = _records[pos];
            if (!(r.flags & FlowRecord::kInUse))
                continue;
            // What was still open, by state, for the summary (counters.h).
            const size_t state = record_proto(r) == Proto::tcp       ? static_cast<size_t>(r.l4.tcp.state)
                                 : r.l4.other.tracker().seen_reply() ? Counters::kOpenReplied
                                                                     : Counters::kOpenUnreplied;
            if (state < _counters.open_at_stop.size())
                bump(_counters.open_at_stop[state]);
            end_flow(pos, final_reason(pos, reason, now_ns), now_ns);
        }
        release_shard(s);
    }
}

} // namespace flowcop::conntrack
