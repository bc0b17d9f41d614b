// SPDX-License-Identifier: BSD-3-Clause
#include <policy/counters.h>

#include <string_view>
#include <unordered_map>

namespace flowcop::policy {

void Counters::carry_over(const Policy& old_policy, const Counters& from, const Policy& new_policy)
{
    // Old rule indexes by identity, in file order; each new rule takes the next unused one.
    std::unordered_map<std::string_view, std::vector<size_t>> old_by_identity;
    for (size_t i = old_policy.rule_count(); i-- > 0;)
        old_by_identity[old_policy.identity(i)].push_back(i); // reversed: back() is the first
    for (size_t i = 0; i < new_policy.rule_count() && i + 1 < _size; ++i) {
        auto it = old_by_identity.find(new_policy.identity(i));
        if (it == old_by_identity.end() || it->second.empty())
            continue;
        const size_t old = it->second.back();
        it->second.pop_back();
        if (old < from.size()) {
            const RuleCounter c = from.read(old);
            stats::store_relaxed(slot(i).packets, c.packets);
            stats::store_relaxed(slot(i).bytes, c.bytes);
        }
    }
    if (old_policy.default_action() == new_policy.default_action() && from.size() == old_policy.rule_count() + 1 &&
        _size == new_policy.rule_count() + 1) {
        const RuleCounter c = from.read(from.size() - 1);
        stats::store_relaxed(slot(_size - 1).packets, c.packets);
        stats::store_relaxed(slot(_size - 1).bytes, c.bytes);
    }
}

} // namespace flowcop::policy
