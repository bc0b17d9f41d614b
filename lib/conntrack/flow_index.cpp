// SPDX-License-Identifier: BSD-3-Clause
// FlowIndex's inserts and deletes (see flow_index.h).
#include <conntrack/flow_index.h>

#include <algorithm>
#include <cstring>

namespace flowcop::conntrack {

void FlowIndex::attach(Bucket* buckets, uint32_t n) noexcept
{
    _buckets = buckets;
    _n = n;
    _max_probe = std::min<uint32_t>(kMaxProbe, n);
    std::memset(static_cast<void*>(buckets), 0, size_t(n) * sizeof(Bucket));
}

bool FlowIndex::insert(const Probe& p, uint32_t pos) noexcept
{
    uint32_t b = p.bucket;
    for (unsigned k = 0; k < _max_probe; ++k, b = next(b)) {
        Bucket& bk = _buckets[b];
        const uint32_t empty = matches(bk, 0);
        if (empty == 0)
            continue;
        const unsigned slot = slot_of(empty);
        bk.sig[slot] = p.sig;
        bk.pos[slot] = pos;
        // Every full bucket walked past now has one more key beyond it.
        for (uint32_t x = p.bucket; x != b; x = next(x))
            ++_buckets[x].overflow;
        return true;
    }
    return false;
}

bool FlowIndex::erase(const Probe& p, uint32_t pos) noexcept
{
    uint32_t b = p.bucket;
    for (unsigned k = 0; k < _max_probe; ++k, b = next(b)) {
        Bucket& bk = _buckets[b];
        for (uint32_t m = matches(bk, p.sig); m != 0; m &= m - 1) {
            const unsigned slot = slot_of(m);
            if (bk.pos[slot] != pos)
                continue;
            bk.sig[slot] = 0;
            for (uint32_t x = p.bucket; x != b; x = next(x))
                --_buckets[x].overflow;
            return true;
        }
        if (bk.overflow == 0)
            return false;
    }
    return false;
}

} // namespace flowcop::conntrack
