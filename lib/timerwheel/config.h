// SPDX-License-Identifier: BSD-3-Clause
// Contract: the wheel's setup-time parameters and the small value types its expire() pass uses.
// validate() is the single source of truth for what a TimerWheel accepts: it returns "" for a valid
// Config, otherwise one sentence naming the bad value and the accepted range (suitable for a config-file
// error message); the TimerWheel constructor throws std::invalid_argument with that same sentence.
// Nothing here allocates except validate()'s returned string (setup time only).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace flowcop::timerwheel {

// 4096 one-second buckets: 68 minutes of range for 128 KiB of heads per wheel (8 lanes each). Measured with
// bench_timerwheel's bucket-count sweep (tests/benchmarks.md, "Timer wheel"), busy flows extended every
// second: 30 s and 120 s timeouts cost exactly 1.0 visits per flow per timeout period at every size from
// 256 to 65536, so only timeouts longer than the ring care; they are revisited once per ring traversal,
// timeout / (buckets - 1) times per period. A 2 h timeout costs 1.76 at 4096 (3.5 at 2048, 28 at 256),
// netfilter's 5-day established timeout 105 (6.6 at 65536): one revisit per flow per 68 minutes, which
// at a million flows per lcore is ~240 visits/s against ~33,000/s for the same flows at 30 s. 4096 is
// the smallest size that keeps every timeout up to 2 h within 2x of ideal.
inline constexpr uint32_t kDefaultBuckets = 4096;
// One second: connection timeouts are configured in whole seconds and the cop runs once a second.
inline constexpr uint64_t kDefaultTickNs = 1'000'000'000;
// A pass also stops after visiting this many times its fire budget (ATS's VISIT_BUDGET_FACTOR): a
// visit that only re-links a busy element is far cheaper than a fire, which tears down a flow.
inline constexpr uint32_t kDefaultVisitBudgetFactor = 16;

// Intrusive lists per bucket (timer_wheel.h, "Lanes"): a pass walks this many chains side by side.
// Measured on a 10^6-flow correlated wave in the real flow table, records scattered, 2 MiB pages: one
// list 200 ns per fire (the chain's memory latency), 8 lanes 125 ns, 4 and 32 lanes the same as 8
// (instruction-bound from there; tests/benchmarks.md, part 5). 128 KiB of heads at 4096 buckets.
inline constexpr uint32_t kLanes = 8;

// Accepted ranges, enforced by validate(). Below 4 buckets the ring holds fewer than three ticks of
// range; above 2^24 the heads array alone is 64 MiB per wheel. Ticks below 1 ms multiply the revisits
// of long timeouts for a precision no connection timeout needs.
inline constexpr uint32_t kMinBuckets = 4;
inline constexpr uint32_t kMaxBuckets = 1u << 24;
inline constexpr uint64_t kMinTickNs = 1'000'000;

struct Config {
    uint32_t buckets = kDefaultBuckets; // power of two in [kMinBuckets, kMaxBuckets]
    uint64_t tick_ns = kDefaultTickNs;  // >= kMinTickNs; need not be a whole number of milliseconds
};

// "" if cfg is valid, else one sentence saying what is wrong and what to use instead.
inline std::string validate(const Config& cfg)
{
    const std::string b = std::to_string(cfg.buckets);
    if (cfg.buckets < kMinBuckets)
        return "bucket count " + b + " is below the minimum of 4 (use a power of two from 4 to 16777216)";
    if (cfg.buckets > kMaxBuckets)
        return "bucket count " + b + " is above the maximum of 16777216 (2^24)";
    if ((cfg.buckets & (cfg.buckets - 1)) != 0)
        return "bucket count " + b + " is not a power of two (use 4, 8, 16, ... 16777216; default 4096)";
    if (cfg.tick_ns == 0)
        return "tick_ns 0 must be positive (use at least 1000000, 1 ms; default 1000000000, 1 s)";
    if (cfg.tick_ns < kMinTickNs)
        return "tick_ns " + std::to_string(cfg.tick_ns) + " is below the minimum of 1000000 (1 ms)";
    return {};
}

// fire_budget * factor, saturating at UINT64_MAX instead of wrapping to a small budget.
inline uint64_t visit_budget(uint64_t fire_budget, uint32_t factor) noexcept
{
    if (factor != 0 && fire_budget > std::numeric_limits<uint64_t>::max() / factor)
        return std::numeric_limits<uint64_t>::max();
    return fire_budget * factor;
}

// What one expire() call did. visited counts every element examined (fired + deferred + re-linked +
// dropped); budget_exhausted means a budget stopped the pass while due ticks remained undrained, so the
// caller is behind and should call again soon (the cop re-runs ~1 ms later, not on its next period).
struct ExpireResult {
    uint64_t fired = 0;
    uint64_t visited = 0;
    uint64_t deferred = 0;
    bool budget_exhausted = false;
};

} // namespace flowcop::timerwheel
