// SPDX-License-Identifier: BSD-3-Clause
// Private: the generator's one random source. splitmix64: one add and three xor-multiplies per draw,
// a full 2^64 period and good equidistribution for the handful of draws each flow takes. Being fully
// specified by its 64-bit state, it makes a run a pure function of the seed.
#pragma once

#include <cmath>
#include <cstdint>

namespace flowcop::flowgen::detail {

inline uint64_t mix64(uint64_t z) noexcept
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

class Rng {
public:
    explicit Rng(uint64_t seed) noexcept : _state(mix64(seed ^ 0x666c6f7767656e00ULL)) {}

    uint64_t next() noexcept { return mix64(_state += 0x9e3779b97f4a7c15ULL); }

    // Uniform in 0..99 (multiply-shift, no modulo bias worth naming at 2^32 resolution).
    uint32_t percent() noexcept { return static_cast<uint32_t>(((next() >> 32) * 100) >> 32); }

    // Uniform in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    // Exponential with the given mean; 1 - unit() is in (0, 1], so the log is finite (at most ~37 means).
    double exponential(double mean) noexcept { return -std::log(1.0 - unit()) * mean; }

private:
    uint64_t _state;
};

} // namespace flowcop::flowgen::detail
