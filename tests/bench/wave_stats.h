// SPDX-License-Identifier: BSD-3-Clause
// A correlated wave drained by budgeted passes, as flowcop's worker drains it: a pass that a budget
// stopped is followed by the next one 1 ms (kCopRetryNs) after it started, or at once if it took
// longer. WaveLog records each pass and derives what the issue asks for: the longest pass, the time
// until every wave flow has fired, and the distribution of how long after the wave's tick a flow fired.
#pragma once

#include "bench_util.h"

#include <cstdint>
#include <vector>

namespace flowcop::bench {

inline constexpr uint64_t kRetryNs = 1'000'000; // app/service/dataplane/worker.h kCopRetryNs

struct WavePass {
    uint64_t start_ns; // virtual time of the pass, from the wave's tick
    double wall_ns, cpu_ns;
    uint64_t fired, visited;
};

class WaveLog {
public:
    // Records a pass that started at the current virtual time and returns when the next one starts.
    uint64_t add(double wall_ns, double cpu_ns, uint64_t fired, uint64_t visited)
    {
        _passes.push_back({_now, wall_ns, cpu_ns, fired, visited});
        _now += std::max<uint64_t>(kRetryNs, uint64_t(wall_ns));
        return _now;
    }
    uint64_t now() const { return _now; }
    const std::vector<WavePass>& passes() const { return _passes; }

    std::vector<double> wall() const
    {
        return field([](const WavePass& p) { return p.wall_ns; });
    }
    std::vector<double> cpu() const
    {
        return field([](const WavePass& p) { return p.cpu_ns; });
    }
    uint64_t fired() const
    {
        uint64_t f = 0;
        for (const WavePass& p : _passes)
            f += p.fired;
        return f;
    }
    // From the first pass's start to the end of the last pass that fired, by the worker's schedule.
    double drain_ns() const
    {
        for (size_t i = _passes.size(); i-- > 0;)
            if (_passes[i].fired != 0)
                return double(_passes[i].start_ns) + _passes[i].wall_ns;
        return 0;
    }
    // The upper bound: passes x 1 ms + the sum of pass times.
    double bound_ns() const
    {
        double s = 0;
        for (const WavePass& p : _passes)
            s += p.wall_ns;
        return double(_passes.size()) * double(kRetryNs) + s;
    }
    // What a NIC would drop meanwhile (a model; this machine's virtual ports back-pressure instead):
    // packets arriving at `mpps` while a pass runs queue in the port's RX ring of `ring` descriptors,
    // so a pass of wall time P loses max(0, mpps * P - ring) when it starts with the ring empty (true
    // whenever the lcore's spare rate drains a full ring within the 1 ms until the next pass).
    double missed(double mpps, double ring) const
    {
        double lost = 0;
        for (const WavePass& p : _passes)
            lost += std::max(0.0, mpps * p.wall_ns / 1e3 - ring);
        return lost;
    }
    uint64_t passes_over(double ns) const
    {
        uint64_t n = 0;
        for (const WavePass& p : _passes)
            n += p.wall_ns > ns;
        return n;
    }
    // Quantile over fired flows of (end of the pass that fired it - the wave's tick).
    double lag_quantile(double q) const
    {
        const uint64_t total = fired();
        const uint64_t rank = std::min<uint64_t>(total, uint64_t(q * double(total)) + 1);
        uint64_t seen = 0;
        for (const WavePass& p : _passes) {
            seen += p.fired;
            if (seen >= rank)
                return double(p.start_ns) + p.wall_ns;
        }
        return 0;
    }

private:
    template <typename F>
    std::vector<double> field(F f) const
    {
        std::vector<double> v;
        v.reserve(_passes.size());
        for (const WavePass& p : _passes)
            v.push_back(f(p));
        return v;
    }

    std::vector<WavePass> _passes;
    uint64_t _now = 0;
};

// The machine's own interruptions, measured in the same run: a fixed amount of register-only work
// sized to last `target_ns`, timed `n` times exactly as the passes are (timed()). Its tail is what any
// code of that length suffers on this machine (timer ticks, the hypervisor, other tenants), so a pass
// quantile is read against the same quantile here; only the excess is the pass's own.
inline std::vector<Timed> busy_baseline(double target_ns, size_t n)
{
    uint64_t x = 1;
    auto work = [&x](uint64_t iters) {
        for (uint64_t i = 0; i < iters; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            asm volatile("" : "+r"(x)); // one multiply-add per iteration, never folded
        }
    };
    // Calibrate on the fastest of a few tries (an interrupted try would size the work too small).
    uint64_t iters = 1000;
    for (int round = 0; round < 3; ++round) {
        double best = 1e300;
        for (int t = 0; t < 7; ++t)
            best = std::min(best, timed([&] { work(iters); }).wall_ns);
        iters = std::max<uint64_t>(1, uint64_t(double(iters) * target_ns / best));
    }
    std::vector<Timed> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
        out.push_back(timed([&] { work(iters); }));
    return out;
}

} // namespace flowcop::bench
