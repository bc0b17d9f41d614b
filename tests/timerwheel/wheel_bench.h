// SPDX-License-Identifier: BSD-3-Clause
// The timer-wheel benchmarks' own pieces: a 64-byte flow-record stand-in in (optionally huge-page)
// anonymous memory and the wheel over it. The RNG, clocks, medians, cache flush and provenance line
// come from the benchmarks' shared header (tests/common/bench_util.h, through bench_util_dep).
#pragma once

#include <timerwheel/timer_wheel.h>

#include "bench_util.h"

#include <cstdint>
#include <fstream>
#include <new>
#include <string>

#include <sys/mman.h>

namespace flowcop::timerwheel::bench {

using flowcop::bench::kSec;
using flowcop::bench::kSeed;
inline constexpr uint64_t kT0 = 1'700'000'000 * kSec;
inline constexpr uint64_t kUnlimited = ~uint64_t{0};

// The flow table's record is 64 bytes with the hook and the deadline on the same line; measuring on
// a bare Hook array would hide the cache misses a real pass pays.
struct alignas(64) Flow {
    Hook hook;
    uint32_t pad;
    uint64_t deadline;
    uint8_t rest[40];
};
static_assert(sizeof(Flow) == 64);

struct FlowHook {
    Flow* flows;
    Hook& operator()(uint32_t e) const noexcept { return flows[e].hook; }
};
using Wheel = TimerWheel<FlowHook>;

// Flow records in anonymous memory, optionally backed by transparent huge pages: production records
// live in DPDK's hugepage memory, and with 4 KiB pages a scattered walk over 640 MB pays a page-table
// walk per record that the wheel has nothing to do with.
class FlowArray {
public:
    FlowArray(size_t n, bool huge) : _n(n)
    {
        constexpr size_t kHuge = size_t{2} << 20;
        _bytes = (n * sizeof(Flow) + 2 * kHuge - 1) / kHuge * kHuge;
        _map = ::mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (_map == MAP_FAILED)
            throw std::bad_alloc();
        auto* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(_map) + kHuge - 1) & ~(kHuge - 1));
        ::madvise(aligned, n * sizeof(Flow), huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        _flows = static_cast<Flow*>(aligned);
        for (size_t i = 0; i < n; ++i) {
            new (&_flows[i]) Flow{};
            init_hook(_flows[i].hook);
        }
    }
    FlowArray(const FlowArray&) = delete;
    FlowArray& operator=(const FlowArray&) = delete;
    ~FlowArray() { ::munmap(_map, _bytes); }

    Flow* data() const { return _flows; }
    size_t size() const { return _n; }
    Flow& operator[](size_t i) const { return _flows[i]; }
    Flow* begin() const { return _flows; }
    Flow* end() const { return _flows + _n; }

private:
    size_t _n;
    size_t _bytes;
    void* _map;
    Flow* _flows;
};

// AnonHugePages of this process in MiB: shows whether the kernel granted the huge pages asked for.
inline uint64_t huge_mib()
{
    std::ifstream in("/proc/self/smaps_rollup");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("AnonHugePages:", 0) == 0)
            return std::stoull(line.substr(14)) / 1024;
    return 0;
}

// The pieces shared with tests/bench, under the names these benchmarks have always used.
using flowcop::bench::clobber;
using flowcop::bench::flush_caches;
using flowcop::bench::median;
using flowcop::bench::mono_ns;
using flowcop::bench::Rng;
using flowcop::bench::time_ns;

// The provenance line with the 1 and 5 minute load averages, as recorded in tests/benchmarks.md.
inline void provenance(const char* what)
{
    flowcop::bench::provenance(what, 2);
}

} // namespace flowcop::timerwheel::bench
