// SPDX-License-Identifier: BSD-3-Clause
// The smallest element pool and callbacks that satisfy the TimerWheel contract: a hook and a true
// deadline per index, and a Recorder that logs every visit and fire so tests can assert on them.
#pragma once

#include <timerwheel/timer_wheel.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace flowcop::timerwheel::test {

inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t kT0 = 1'700'000'000 * kSec; // a plausible Unix-epoch "now", second-aligned
inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

struct Pool {
    std::vector<Hook> hooks;
    std::vector<uint64_t> deadline; // the element's TRUE deadline, 0 = none

    explicit Pool(size_t n) : hooks(n), deadline(n, 0)
    {
        for (Hook& h : hooks)
            init_hook(h);
    }
};

struct HookAt {
    Pool* pool;
    Hook& operator()(uint32_t e) const noexcept { return pool->hooks[e]; }
};

using Wheel = TimerWheel<HookAt>;

inline Wheel make_wheel(Pool& p, uint32_t buckets, uint64_t tick_ns, uint64_t now_ns)
{
    return Wheel(Config{buckets, tick_ns}, HookAt{&p}, now_ns);
}

// Default fire(): the element is done (true deadline cleared) and counted fired. Tests that need
// deferral or re-entrant scheduling install on_fire.
struct Recorder {
    Pool& pool;
    std::vector<uint32_t> visited;
    std::vector<uint32_t> fired;
    std::function<bool(uint32_t)> on_fire;

    explicit Recorder(Pool& p) : pool(p) {}

    uint64_t deadline(uint32_t e)
    {
        visited.push_back(e);
        return pool.deadline[e];
    }
    bool fire(uint32_t e)
    {
        fired.push_back(e);
        if (on_fire)
            return on_fire(e);
        pool.deadline[e] = 0;
        return true;
    }
    void clear()
    {
        visited.clear();
        fired.clear();
    }
};

// Clears the recorder, then runs one expire() pass.
inline ExpireResult pass(Wheel& w, Recorder& r, uint64_t now_ns, uint64_t fire_budget = kUnlimited,
                         uint64_t visit_budget = kUnlimited)
{
    r.clear();
    return w.expire(now_ns, fire_budget, visit_budget, r);
}

// Arms e with a true deadline and tells the wheel, as a caller setting or shortening a deadline must.
inline void arm(Wheel& w, Pool& p, uint32_t e, uint64_t deadline_ns)
{
    p.deadline[e] = deadline_ns;
    w.schedule(e, deadline_ns);
}

} // namespace flowcop::timerwheel::test
