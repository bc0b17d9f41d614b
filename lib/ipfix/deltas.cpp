// SPDX-License-Identifier: BSD-3-Clause
#include <ipfix/deltas.h>

#include <conntrack/flow_id.h>

#include <new>

namespace flowcop::ipfix {

bool DeltaTracker::apply(events::Event& e) noexcept
{
    if ((e.present & events::kHasFlowId) == 0 || e.interims == 0)
        return true;
    const uint32_t slot = conntrack::flow_id_slot(e.flow_id);
    const uint32_t generation = conntrack::flow_id_generation(e.flow_id);
    const Last totals{generation, {e.packets[0], e.packets[1]}, {e.bytes[0], e.bytes[1]}, e.last_seen_ns};
    auto it = _last.find(slot); // find() allocates nothing
    if (e.kind == events::Kind::interim && it == _last.end()) {
        // Room first, before `e` changes: a refused record is dropped whole, and the flow's next
        // record carries its counts.
        if (_last.size() >= _max)
            return false;
        try { // nothing exported yet: zero counts, so this record's delta is its totals
            it = _last.emplace(slot, Last{generation, {0, 0}, {0, 0}, 0}).first;
        } catch (const std::bad_alloc&) {
            return false;
        }
    }
    if (it != _last.end() && it->second.generation == generation) {
        const Last& prev = it->second;
        // Totals only grow; a smaller one would be a table bug: send the total rather than wrap.
        for (unsigned d = 0; d < 2; ++d) {
            if (e.packets[d] >= prev.packets[d] && e.bytes[d] >= prev.bytes[d]) {
                e.packets[d] -= prev.packets[d];
                e.bytes[d] -= prev.bytes[d];
            }
        }
        if (prev.end_ns > e.first_seen_ns && prev.end_ns <= e.last_seen_ns)
            e.first_seen_ns = prev.end_ns;
    }
    if (e.kind == events::Kind::interim)
        it->second = totals;
    else if (it != _last.end())
        _last.erase(it); // this flow's entry, or a stale one of an older flow in the slot
    return true;
}

bool DeltaTracker::reported(uint64_t flow_id, Reported& out) const noexcept
{
    const auto it = _last.find(conntrack::flow_id_slot(flow_id));
    if (it == _last.end() || it->second.generation != conntrack::flow_id_generation(flow_id))
        return false;
    const Last& l = it->second;
    out = Reported{{l.packets[0], l.packets[1]}, {l.bytes[0], l.bytes[1]}, l.end_ns};
    return true;
}

bool DeltaTracker::seed(uint64_t flow_id, const Reported& r) noexcept
{
    const uint32_t slot = conntrack::flow_id_slot(flow_id);
    const Last l{
        conntrack::flow_id_generation(flow_id), {r.packets[0], r.packets[1]}, {r.bytes[0], r.bytes[1]}, r.end_ns};
    if (auto it = _last.find(slot); it != _last.end()) {
        it->second = l;
        return true;
    }
    if (_last.size() >= _max)
        return false;
    try {
        _last.emplace(slot, l);
    } catch (const std::bad_alloc&) {
        return false;
    }
    return true;
}

} // namespace flowcop::ipfix
