// SPDX-License-Identifier: BSD-3-Clause
// SplitMix64: a fixed-seed pseudo-random stream that gives the same sequence on every platform and
// standard library (std::uniform_int_distribution does not), costs a few instructions per draw even in
// -O0 + ASan builds, and needs no state beyond one word. For tests and benchmarks, never for anything
// an attacker may predict.
#pragma once

#include <cstdint>

namespace flowcop::test {

class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : _s(seed) {}
    uint64_t operator()()
    {
        uint64_t z = (_s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
    }
    // Uniform enough for test data in [0, n), n > 0 (modulo bias below 2^-40 for n < 2^24).
    uint64_t below(uint64_t n) { return (*this)() % n; }

private:
    uint64_t _s;
};

} // namespace flowcop::test
