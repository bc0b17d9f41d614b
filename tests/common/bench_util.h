// SPDX-License-Identifier: BSD-3-Clause
// Shared pieces of the benchmarks (tests/bench and tests/timerwheel, through bench_util_dep): a
// fixed-seed RNG, clocks (wall and this thread's CPU time, which excludes time the shared machine's
// scheduler took away), medians and percentiles, a cache flush, memory probes (malloc's in-use bytes,
// the process RSS) and the provenance line every result starts with. Nothing here is used by the
// service. "bench_version.h" is each benchmark directory's own vcs_tag output, found through the
// including target's build directory.
#pragma once

#include "bench_version.h"
#include "splitmix64.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include <malloc.h>
#include <sys/mman.h>

#ifndef FLOWCOP_BUILDTYPE
#define FLOWCOP_BUILDTYPE "unknown"
#endif

namespace flowcop::bench {

inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kSeed = 20240601;

// Fixed seeds give the same flows, deadlines and orders on every run.
using Rng = flowcop::test::SplitMix64;

// A random permutation of 0..n-1 (Fisher-Yates with Rng).
inline std::vector<uint32_t> permutation(uint32_t n, uint64_t seed)
{
    std::vector<uint32_t> p(n);
    for (uint32_t i = 0; i < n; ++i)
        p[i] = i;
    Rng rng(seed);
    for (uint32_t i = n; i > 1; --i)
        std::swap(p[i - 1], p[rng.below(i)]);
    return p;
}

inline void clobber()
{
    asm volatile("" ::: "memory");
}

inline uint64_t mono_ns()
{
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

inline uint64_t thread_cpu_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * kSec + uint64_t(ts.tv_nsec);
}

// One timed region: wall time and this thread's CPU time. On a machine shared with other builds the
// wall time of a short region sometimes includes a preemption; the CPU time never does.
struct Timed {
    double wall_ns;
    double cpu_ns;
};

// Wall time only, for loops too short to pay a CPU-clock read on each side (tests/timerwheel).
template <typename F>
double time_ns(F&& f)
{
    clobber();
    const uint64_t t0 = mono_ns();
    f();
    clobber();
    return double(mono_ns() - t0);
}

template <typename F>
Timed timed(F&& f)
{
    clobber();
    const uint64_t c0 = thread_cpu_ns();
    const uint64_t t0 = mono_ns();
    f();
    clobber();
    const uint64_t t1 = mono_ns();
    const uint64_t c1 = thread_cpu_ns();
    return {double(t1 - t0), double(c1 - c0)};
}

// q in [0, 1]: the nearest-rank quantile (q = 0.5 is the median, 1 the maximum).
inline double quantile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
    return v[i];
}
inline double median(const std::vector<double>& v)
{
    return quantile(v, 0.5);
}

// Writes a buffer larger than the last-level cache so the next timed pass starts cold, as a cop pass
// does a second after the last one, when the packet path has long since evicted its lines. The buffer
// asks for transparent huge pages: in 4 KiB pages its 65,536 pages would also empty the TLB, which the
// packet path, whose memory is in hugepages, does not do to a table in hugepages. (Where THP is off
// for anonymous memory it stays in 4 KiB pages and the flush is colder than the packet path.)
// Bytes of the last-level cache as the kernel reports it (cpu0's highest cache index), 0 if unknown.
inline size_t llc_bytes()
{
    size_t best = 0;
    for (int i = 0; i < 8; ++i) {
        std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
        std::string v;
        if (!(in >> v) || v.empty())
            continue;
        const char unit = v.back();
        size_t n = std::strtoull(v.c_str(), nullptr, 10);
        n <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
        best = std::max(best, n);
    }
    return best;
}

inline void flush_caches()
{
    // Twice the last level (this VM reports 260 MiB of L3), at least 256 MiB.
    static const size_t bytes = std::max(size_t{256} << 20, 2 * llc_bytes());
    static uint64_t* junk = [] {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            std::abort();
        madvise(p, bytes, MADV_HUGEPAGE);
        return static_cast<uint64_t*>(p);
    }();
    for (size_t i = 0; i < bytes / sizeof(uint64_t); i += 8)
        junk[i] += i;
    clobber();
}

// Bytes malloc has handed out and not yet taken back: small chunks in use (with their headers) plus
// mmap()ed large blocks. A delta across building a structure is that structure's heap footprint.
inline uint64_t malloc_in_use()
{
    const struct mallinfo2 m = mallinfo2();
    return uint64_t(m.uordblks) + uint64_t(m.hblkhd);
}

// Resident set size of this process in bytes (VmRSS).
inline uint64_t rss_bytes()
{
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stoull(line.substr(6)) * 1024;
    return 0;
}

// Memory of this process mapped with transparent huge pages, in MiB: anonymous memory plus shared
// memory (EAL's --no-huge memory is a memfd).
inline uint64_t thp_mib()
{
    std::ifstream in("/proc/self/smaps_rollup");
    uint64_t kib = 0;
    for (std::string line; std::getline(in, line);)
        if (line.rfind("AnonHugePages:", 0) == 0 || line.rfind("ShmemPmdMapped:", 0) == 0)
            kib += std::stoull(line.substr(line.find(':') + 1));
    return kib / 1024;
}

inline std::string cpu_model()
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0)
            return line.substr(line.find(':') + 2);
    return "unknown";
}

// Other work on the machine skews every timing; the load average is printed with each result: the
// first `fields` of the 1, 5 and 15 minute figures (the timer-wheel benchmarks print two, as their
// recorded results in tests/benchmarks.md show).
inline std::string load_average(int fields = 3)
{
    std::ifstream in("/proc/loadavg");
    std::string out;
    for (int i = 0; i < fields; ++i) {
        std::string figure;
        in >> figure;
        out += (i == 0 ? "" : " ") + figure;
    }
    return out;
}

inline void provenance(const char* what, int load_fields = 3)
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
                static_cast<unsigned long long>(kSeed), date, load_average(load_fields).c_str(), cpu_model().c_str());
    std::fflush(stdout);
}

} // namespace flowcop::bench
