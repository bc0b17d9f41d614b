// SPDX-License-Identifier: BSD-3-Clause
// Benchmarks (hidden: [!benchmark]; run with `meson test --benchmark` or the binary directly).
// Per-frame generation cost against a baseline measured in the same run: copying a pkt_size frame
// from a buffer (the floor any generator pays to produce bytes). Medians of 5 runs, fixed seeds.
// Work counts printed next to time are hardware-independent: bytes written and flows started per
// frame, and resident bytes per flow for the memory figure.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <flowgen/core.h>
#include <flowgen/generator.h>

#include "eal.h"
#include "run.h"

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;
using Clock = std::chrono::steady_clock;

#ifndef FLOWGEN_COMMIT
#define FLOWGEN_COMMIT "unknown"
#endif

namespace {

constexpr uint64_t kFramesPerRun = 2'000'000;
constexpr int kRuns = 5;

template <typename F>
double median_ns_per_frame(F&& body)
{
    std::vector<double> v;
    for (int i = 0; i < kRuns; ++i) {
        const auto t0 = Clock::now();
        const uint64_t n = body();
        v.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(n));
    }
    std::sort(v.begin(), v.end());
    return v[kRuns / 2];
}

double baseline_copy_ns(uint32_t len)
{
    std::vector<uint8_t> src(len, 0x5a), dst(len);
    return median_ns_per_frame([&] {
        for (uint64_t i = 0; i < kFramesPerRun; ++i) {
            src[i % 64] = static_cast<uint8_t>(i);
            std::memcpy(dst.data(), src.data(), len);
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
        return kFramesPerRun;
    });
}

void provenance()
{
#ifdef NDEBUG
    const char* build = "release (NDEBUG)";
#else
    const char* build = "debug asserts on";
#endif
    std::printf("flowgen benchmark: commit %s, %s, seed fixed per case, %d runs x %llu frames, medians\n",
                FLOWGEN_COMMIT, build, kRuns, static_cast<unsigned long long>(kFramesPerRun));
}

uint64_t rss_bytes()
{
    std::ifstream statm("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

} // namespace

TEST_CASE("flowgen Core: ns per frame against a plain frame copy", "[flowgen][!benchmark]")
{
    provenance();
    const char* cases[] = {
        "flows=1000,seed=1",
        "flows=100000,lifetime=100,seed=1",
        "flows=1000,ipv6_pct=50,vlan=10,seed=1",
        "flows=1000,pkt_size=64,lifetime=1,seed=1",
        "flows=1000,pkt_size=1500,seed=1",
    };
    for (const char* kv : cases) {
        const Config cfg = config(kv);
        const double base = baseline_copy_ns(cfg.pkt_size);
        uint64_t bytes = 0, started = 0;
        const double ns = median_ns_per_frame([&] {
            Core core(cfg);
            std::vector<uint8_t> buf(core.max_frame_len());
            uint64_t ts = 0;
            bytes = 0;
            for (uint64_t i = 0; i < kFramesPerRun; ++i)
                bytes += core.next(buf.data(), ts);
            started = core.stats().flows_started;
            return kFramesPerRun;
        });
        std::printf("  %-42s %6.1f ns/frame  %6.2f Mpps  copy baseline %5.1f ns (x%.1f)  "
                    "%.0f bytes/frame  %.4f flows started/frame\n",
                    kv, ns, 1e3 / ns, base, ns / base, static_cast<double>(bytes) / kFramesPerRun,
                    static_cast<double>(started) / kFramesPerRun);
    }
}

// The per-flow memory figure of help() and core.h, measured: resident growth once every flow of a
// 10^6-flow run has started.
TEST_CASE("flowgen Core: resident bytes per concurrent flow", "[flowgen][!benchmark]")
{
    const Config cfg = config("flows=1000000,lifetime=100,pps=10000000,seed=1");
    const uint64_t before = rss_bytes();
    Core core(cfg);
    std::vector<uint8_t> buf(core.max_frame_len());
    uint64_t ts = 0;
    while (core.stats().flows_started < cfg.flows + 1000)
        core.next(buf.data(), ts);
    const uint64_t after = rss_bytes();
    std::printf("  flows=1000000: %.1f resident bytes per flow (32-byte record, 1/16 slack), active %llu\n",
                static_cast<double>(after - before) / cfg.flows,
                static_cast<unsigned long long>(core.stats().active_flows));
}

TEST_CASE("flowgen Generator: ns per frame into mbufs (alloc, fill, free)", "[flowgen][!benchmark]")
{
    REQUIRE(eal_up());
    rte_mempool* mp = rte_pktmbuf_pool_create("fg_bench", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    REQUIRE(mp != nullptr);
    const Config cfg = config("flows=1000,seed=1");
    const double core_ns = median_ns_per_frame([&] {
        Core core(cfg);
        std::vector<uint8_t> buf(core.max_frame_len());
        uint64_t ts = 0;
        for (uint64_t i = 0; i < kFramesPerRun; ++i)
            core.next(buf.data(), ts);
        return kFramesPerRun;
    });
    const double ns = median_ns_per_frame([&] {
        Generator gen(cfg);
        rte_mbuf* m[32];
        uint64_t n = 0;
        while (n < kFramesPerRun) {
            const unsigned k = gen.next_burst(mp, m, 32);
            rte_pktmbuf_free_bulk(m, k);
            n += k;
        }
        return n;
    });
    std::printf("  Generator burst=32 (EAL lcore, pool cache 256): %.1f ns/frame, %.2f Mpps; Core alone %.1f ns "
                "(mbuf overhead x%.2f)\n",
                ns, 1e3 / ns, core_ns, ns / core_ns);
    rte_mempool_free(mp);
}
