// SPDX-License-Identifier: BSD-3-Clause
// Contract: per-rule packet and byte counters of one lcore, declared the way lib/stats/stats.md
// says: plain uint64_t fields with one writer (the lcore that owns this object, through
// count()), read by other threads with stats::load_relaxed at scrape time. One slot per rule of
// the Policy it was sized for, plus the last slot for the default `policy` action, so a Decision's
// rule index is its slot.
//
// Reload: a new Policy gets a new Counters; carry_over() copies the counts of every rule whose
// identity (its text without comments, Rule::identity) is in both policies, so an edit to one rule
// restarts only that rule's counts. A rule that appears k times is matched to the k-th occurrence
// in the old policy. The default slot carries over when the default action is unchanged. Call it
// on the owning lcore between bursts (or after the old counters' writer stopped): what the old
// writer adds after the copy is not carried.
#pragma once

#include <policy/policy.h>

#include <cstdint>
#include <stats/relaxed.h>
#include <vector>

namespace flowcop::policy {

struct RuleCounter {
    uint64_t packets = 0;
    uint64_t bytes = 0;
};

class alignas(64) Counters {
public:
    Counters() : Counters(1) {} // the empty policy: its default slot only
    explicit Counters(const Policy& p) : Counters(p.rule_count() + 1) {}

    // Packet path: counts one packet of `bytes` for the decision's rule. Precondition: d came
    // from the Policy these counters were sized for.
    void count(Decision d, uint32_t bytes) noexcept
    {
        RuleCounter& c = slot(d.rule);
        stats::bump(c.packets);
        stats::bump(c.bytes, uint64_t{bytes});
    }

    // Any thread: slot i (i < size(); the last is the default's), loaded relaxed.
    RuleCounter read(size_t i) const noexcept
    {
        const RuleCounter& c = slot(i);
        return {stats::load_relaxed(c.packets), stats::load_relaxed(c.bytes)};
    }
    size_t size() const noexcept { return _size; }
    // The owner's direct handle on slot i (i < size()), for a caller that counts one rule over and over
    // (the data plane's per-state shortcut, lib/conntrack/ct_judge.h); valid as long as this object.
    RuleCounter* slot_ptr(size_t i) noexcept { return &slot(i); }

    // See the contract above; `from` was sized for `old_policy`, this object for `new_policy`.
    void carry_over(const Policy& old_policy, const Counters& from, const Policy& new_policy);

private:
    // Whole cache lines (aligned new), so no other lcore's data shares a line with these slots.
    struct alignas(64) Line {
        RuleCounter slot[4];
    };
    explicit Counters(size_t n) : _lines((n + 3) / 4), _size(n) {}
    RuleCounter& slot(size_t i) noexcept { return _lines[i / 4].slot[i % 4]; }
    const RuleCounter& slot(size_t i) const noexcept { return _lines[i / 4].slot[i % 4]; }

    std::vector<Line> _lines;
    size_t _size;
};

} // namespace flowcop::policy
