// SPDX-License-Identifier: BSD-3-Clause
#include <ipfix/deltas.h>

namespace flowcop::ipfix {

void DeltaTracker::apply(events::Event& e)
{
    if ((e.present & events::kHasFlowId) == 0 || e.interims == 0)
        return;
    const auto slot = uint32_t(e.flow_id);
    const auto generation = uint32_t(e.flow_id >> 32);
    const Last totals{generation, {e.packets[0], e.packets[1]}, {e.bytes[0], e.bytes[1]}, e.last_seen_ns};
    auto it = _last.find(slot);
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
    if (e.kind == events::Kind::interim) {
        if (it != _last.end())
            it->second = totals;
        else
            _last.emplace(slot, totals);
    } else if (it != _last.end()) {
        _last.erase(it); // this flow's entry, or a stale one of an older flow in the slot
    }
}

} // namespace flowcop::ipfix
