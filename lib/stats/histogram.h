// SPDX-License-Identifier: BSD-3-Clause
// A fixed-bucket histogram with one writer (the owning lcore) and any number
// of concurrent readers (the exporter at scrape time).
//
// observe() costs a short linear scan over at most kMaxBounds upper bounds and
// two relaxed stores: no allocation, no atomic read-modify-write. Readers see
// per-bucket counts (not cumulative); the exporter turns them into Prometheus'
// cumulative buckets. Bounds are in the unit the owner observes (nanoseconds
// for every flowcop histogram: stats/family.h exports them in seconds) and are
// fixed at construction; bounds beyond kMaxBounds are ignored.
#pragma once

#include <stats/relaxed.h>

#include <array>
#include <cstdint>
#include <initializer_list>

namespace flowcop::stats {

class Histogram {
public:
    static constexpr unsigned kMaxBounds = 16;

    Histogram(std::initializer_list<uint64_t> upper_bounds) noexcept
    {
        for (uint64_t b : upper_bounds) {
            if (_n_bounds == kMaxBounds)
                break;
            _bounds[_n_bounds++] = b;
        }
    }

    void observe(uint64_t value) noexcept
    {
        unsigned i = 0;
        while (i < _n_bounds && value > _bounds[i])
            ++i;
        bump(_counts[i]); // i == n_bounds_ is the +Inf bucket
        bump(_sum, value);
    }

    unsigned bounds() const noexcept { return _n_bounds; }
    uint64_t bound(unsigned i) const noexcept { return _bounds[i]; }
    // i in [0, bounds()]: the last index is the +Inf bucket.
    uint64_t count_in(unsigned i) const noexcept { return load_relaxed(_counts[i]); }
    uint64_t sum() const noexcept { return load_relaxed(_sum); }
    uint64_t total() const noexcept
    {
        uint64_t t = 0;
        for (unsigned i = 0; i <= _n_bounds; ++i)
            t += count_in(i);
        return t;
    }

private:
    std::array<uint64_t, kMaxBounds> _bounds{};
    std::array<uint64_t, kMaxBounds + 1> _counts{};
    uint64_t _sum = 0;
    unsigned _n_bounds = 0;
};

} // namespace flowcop::stats
