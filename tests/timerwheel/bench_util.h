// SPDX-License-Identifier: BSD-3-Clause
// Shared pieces of the timer-wheel benchmarks: a 64-byte flow-record stand-in, a fixed-seed RNG, a
// cache flush, timed loops with medians, and the provenance line every result starts with.
#pragma once

#include <timerwheel/timer_wheel.h>

#include "bench_version.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include <sys/mman.h>

#ifndef FLOWCOP_BUILDTYPE
#define FLOWCOP_BUILDTYPE "unknown"
#endif

namespace flowcop::timerwheel::bench {

inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t kT0 = 1'700'000'000 * kSec;
inline constexpr uint64_t kSeed = 20240601;
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

class Rng { // splitmix64
public:
    explicit Rng(uint64_t seed) : _s(seed) {}
    uint64_t operator()()
    {
        uint64_t z = (_s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
    }

private:
    uint64_t _s;
};

inline void clobber() { asm volatile("" ::: "memory"); }

inline uint64_t mono_ns()
{
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

template <typename F>
double time_ns(F&& f)
{
    clobber();
    const uint64_t t0 = mono_ns();
    f();
    clobber();
    return static_cast<double>(mono_ns() - t0);
}

inline double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Writes a buffer larger than the last-level cache so the next timed pass starts cold, as the cop's
// does: between two passes a second apart the packet path has long since evicted the wheel.
inline void flush_caches()
{
    static std::vector<uint64_t> junk(256u << 20 >> 3); // 256 MiB, above this machine's 105 MiB L3
    for (size_t i = 0; i < junk.size(); i += 8)
        junk[i] += i;
    clobber();
}

inline std::string cpu_model()
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0)
            return line.substr(line.find(':') + 2);
    return "unknown";
}

// Other work on the machine skews every timing; the load average is printed with each result.
inline std::string load_average()
{
    std::ifstream in("/proc/loadavg");
    std::string one, five;
    in >> one >> five;
    return one + " " + five;
}

inline void provenance(const char* what)
{
    char date[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
    std::printf("\n== %s ==\ncommit %s, buildtype %s, %s, seed %llu, %s, load %s, cpu \"%s\"\n", what,
                FLOWCOP_BENCH_COMMIT, FLOWCOP_BUILDTYPE,
#ifdef NDEBUG
                "NDEBUG",
#else
                "asserts on",
#endif
                static_cast<unsigned long long>(kSeed), date, load_average().c_str(), cpu_model().c_str());
}

} // namespace flowcop::timerwheel::bench
