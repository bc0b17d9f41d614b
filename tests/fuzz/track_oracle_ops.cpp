// SPDX-License-Identifier: BSD-3-Clause
// Oracle: the rules for cop passes, kill, set_timeouts, rebase_step and destroy_all
// (see track_oracle.h).
#include "track_oracle.h"

namespace flowcop::fuzz {

using conntrack::FlowSnapshot;
using conntrack::Reason;

namespace {

Reason marked_reason(const FlowSnapshot& f)
{
    return f.reset ? Reason::reset : Reason::killed;
}

} // namespace

void Oracle::after_cop(uint64_t now, uint64_t fire_budget, uint64_t visit_budget, const conntrack::CopResult& r)
{
    _c1 = _table.counters();
    _now = std::max(_now, now);
    if (!_clock_started) {
        // The first time the table sees starts its wheel there: nothing can be scheduled yet.
        _clock_started = true;
        _drained_tick = now / kTickNs;
    }
    Flows s1 = take_snapshot();
    uint64_t want[conntrack::kReasonCount] = {};
    uint64_t gone = 0, lag_n = 0, lag_sum = 0;
    for (const FlowSnapshot& f : _flows.v) {
        const FlowSnapshot* g = s1.find(f.key);
        if (g) {
            if (!same_flow(f, *g))
                fail("a flow changed during a cop pass");
            continue;
        }
        ++gone;
        if (f.reset || f.killed) {
            ++want[static_cast<unsigned>(marked_reason(f))];
            continue;
        }
        const uint64_t d = deadline(f);
        if (d > now)
            fail("a flow fired before its deadline: deadline " + std::to_string(d) + " > now " + std::to_string(now));
        ++want[static_cast<unsigned>(timeout_reason(f, now))];
        ++lag_n;
        lag_sum += now - d;
    }
    if (s1.v.size() + gone != _flows.v.size())
        fail("a flow appeared during a cop pass");
    if (gone != r.wheel.fired || _c1.cop_fired - _c.cop_fired != gone ||
        _c1.expired_total() - _c.expired_total() != gone)
        fail("flows gone " + std::to_string(gone) + " != fired " + std::to_string(r.wheel.fired));
    for (unsigned i = 0; i < conntrack::kReasonCount; ++i)
        if (d_expired(Reason(i)) != want[i])
            fail(std::string("expired as ") + conntrack::reason_name(Reason(i)) + " " +
                 std::to_string(d_expired(Reason(i))) + " != the model's " + std::to_string(want[i]));
    if (_c1.timeout_lag_ns.total() - _c.timeout_lag_ns.total() != lag_n ||
        _c1.timeout_lag_ns.sum() - _c.timeout_lag_ns.sum() != lag_sum)
        fail("timeout lag histogram differs from the model (count " + std::to_string(lag_n) + ", sum " +
             std::to_string(lag_sum) + ")");
    if (_c1.cop_passes - _c.cop_passes != 1 || _c1.cop_visited - _c.cop_visited != r.wheel.visited)
        fail("cop pass counters do not match the pass");
    if (r.wheel.fired > fire_budget || r.wheel.visited > visit_budget || r.wheel.deferred != 0)
        fail("a cop pass went over its budget or deferred with no shard held");
    if (_c1.flows_created != _c.flows_created)
        fail("a cop pass created a flow");
    const uint64_t tick = now / kTickNs;
    if (!r.wheel.budget_exhausted && !_table.rebase_pending()) {
        for (const FlowSnapshot& g : s1.v) {
            if (g.reset || g.killed) {
                const Mark* m = mark_of(g);
                if (!m || m->drained_tick < tick)
                    fail("a RST/kill-marked flow survived the next tick's full pass");
            } else if (deadline(g) <= tick * kTickNs) {
                if (const Mark* m = find_mark(_lowered, g); m && m->drained_tick >= tick)
                    continue; // its deadline moved into a tick already drained: due on the next one
                fail("a flow outlived its deadline's tick: deadline " + std::to_string(deadline(g)) + ", now " +
                     std::to_string(now));
            }
        }
    }
    if (!r.wheel.budget_exhausted)
        _drained_tick = tick;
    commit(std::move(s1));
}

void Oracle::after_kill(const packet::FlowKey& key, bool found)
{
    _c1 = _table.counters();
    Flows s1 = take_snapshot();
    const FlowSnapshot* before = _flows.find(key);
    if (found != (before != nullptr))
        fail("kill() found a flow that is not in the table, or missed one that is");
    if (s1.v.size() != _flows.v.size())
        fail("kill() changed the number of flows");
    for (const FlowSnapshot& g : s1.v) {
        const FlowSnapshot* f = _flows.find(g.key);
        if (!f) {
            fail("kill() made a flow appear");
            continue;
        }
        FlowSnapshot expect = *f;
        if (g.key == key)
            expect.killed = true;
        if (!same_flow(expect, g))
            fail("kill() changed a flow beyond marking the killed one");
    }
    if (_c1.flows_created != _c.flows_created || _c1.expired_total() != _c.expired_total())
        fail("kill() created or ended a flow (it only marks: the cop reaps)");
    commit(std::move(s1));
}

void Oracle::after_set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_s)
{
    _c1 = _table.counters();
    std::vector<uint64_t> before;
    for (const FlowSnapshot& f : _flows.v)
        before.push_back(deadline(f));
    _timeouts = timeouts;
    _active_ns = uint64_t(active_s) * kSecNs;
    for (size_t i = 0; i < _flows.v.size(); ++i) {
        const FlowSnapshot& f = _flows.v[i];
        if (deadline(f) >= before[i])
            continue;
        Mark* m = nullptr;
        for (Mark& l : _lowered)
            if (l.key == f.key && l.first_seen_ns == f.first_seen_ns)
                m = &l;
        if (m)
            m->drained_tick = kRebasePending;
        else
            _lowered.push_back(Mark{f.key, f.first_seen_ns, kRebasePending});
    }
    Flows s1 = take_snapshot();
    if (s1.v.size() != _flows.v.size())
        fail("set_timeouts() changed the number of flows");
    for (size_t i = 0; i < s1.v.size() && i < _flows.v.size(); ++i)
        if (!same_flow(s1.v[i], _flows.v[i]))
            fail("set_timeouts() changed a flow");
    if (!_table.rebase_pending())
        fail("set_timeouts() did not start a rebase sweep");
    commit(std::move(s1));
}

void Oracle::after_rebase(uint32_t max_records, uint32_t seen)
{
    _c1 = _table.counters();
    Flows s1 = take_snapshot();
    if (seen > max_records || _c1.rebase_visited - _c.rebase_visited > seen)
        fail("rebase_step() looked at more records than asked");
    if (!_table.rebase_pending())
        for (Mark& m : _lowered)
            if (m.drained_tick == kRebasePending)
                m.drained_tick = _drained_tick;
    if (s1.v.size() != _flows.v.size())
        fail("rebase_step() changed the number of flows");
    for (size_t i = 0; i < s1.v.size() && i < _flows.v.size(); ++i)
        if (!same_flow(s1.v[i], _flows.v[i]))
            fail("rebase_step() changed a flow");
    commit(std::move(s1));
}

void Oracle::after_destroy_all(uint64_t now)
{
    _c1 = _table.counters();
    _now = std::max(_now, now);
    uint64_t want[conntrack::kReasonCount] = {};
    for (const FlowSnapshot& f : _flows.v) {
        if (f.reset || f.killed)
            ++want[static_cast<unsigned>(marked_reason(f))];
        else if (deadline(f) <= now)
            ++want[static_cast<unsigned>(timeout_reason(f, now))];
        else
            ++want[static_cast<unsigned>(Reason::shutdown)];
    }
    for (unsigned i = 0; i < conntrack::kReasonCount; ++i)
        if (d_expired(Reason(i)) != want[i])
            fail(std::string("destroy_all: expired as ") + conntrack::reason_name(Reason(i)) + " " +
                 std::to_string(d_expired(Reason(i))) + " != the model's " + std::to_string(want[i]));
    if (_c1.timeout_lag_ns.total() != _c.timeout_lag_ns.total())
        fail("destroy_all() observed a timeout lag");
    Flows s1 = take_snapshot();
    if (!s1.v.empty())
        fail("flows left after destroy_all()");
    commit(std::move(s1));
}

void Oracle::expect_empty()
{
    if (!_flows.v.empty() || _table.active() != 0)
        fail(std::to_string(_flows.v.size()) + " flows left after a full pass past every deadline");
}

} // namespace flowcop::fuzz
