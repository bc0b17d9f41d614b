// SPDX-License-Identifier: BSD-3-Clause
// What a whole-table listing costs the owner lcore (issue 17; tests/benchmarks.md, "Issue 17: dumping the whole table"):
// the control socket's walk (FlowTable::read_slice in 256-position slices + the JSON line of each
// flow, ctl_format.h) on a reader thread, against a 10^6-flow table that the owner thread keeps
// tracking: flowgen's traffic (handshakes, data, FIN/RST closes, idle flows) through the real parser
// and table, with the cop every 10 ms of traffic time, exactly the work a worker lcore does.
//
// Reported, same run, interleaved (baseline, dump, baseline, dump, ...): the owner's time per burst of
// 32 packets (median, p99.9, max, and the cop passes' max) without and with a dump running, how long
// one dump of the whole table takes, and the packets an RX ring of kRxRing descriptors would have
// missed at the benchmark rate: a burst or cop pass longer than kRxRing / rate lets the ring overflow.
// No EAL (heap memory), so the numbers include no DPDK polling.
//
//   meson test -C build --benchmark --suite bench -v 'app ctl dump'
//
// The same measurement with a --state-checkpoint-s save as the reader (issue 32): FlowTable::export_slice
// in the same 256-position slices into statefile::Writer, fsync'd and renamed, as app/service/state.cpp
// saves: `build/tests/app/control/bench_ctl_dump '[state-checkpoint]'`.
#include <service/control/ctl_format.h>

#include <conntrack/flow_table.h>
#include <flowgen/core.h>
#include <packet/packet.h>
#include <statefile/statefile.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace flowcop;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kFlows = 1'000'000;
constexpr uint64_t kRatePps = 2'000'000; // the benchmark rate, per lcore
constexpr uint64_t kRxRing = 4096;       // RX descriptors: what a stall must fill to lose packets
constexpr unsigned kBurst = 32;
constexpr uint64_t kCopEveryNs = 10'000'000;

struct Round {
    std::vector<double> burst_us;
    double cop_max_us = 0;
    uint64_t lock_failures = 0;
    unsigned dumps = 0;
    double dump_s = 0; // total wall time of the completed dumps
    uint64_t dumped = 0;
};

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

class Owner {
public:
    explicit Owner(conntrack::FlowTable& t) : _table(t), _frames(kBurst, std::vector<uint8_t>(16384))
    {
        flowgen::Config c;
        c.flows = kFlows;
        c.lifetime_ms = 60'000;
        c.pps = kRatePps;
        c.idle_pct = 10;
        c.rst_pct = 10;
        c.seed = 17;
        _gen = std::make_unique<flowgen::Core>(c);
        REQUIRE(_gen->error().empty());
    }
    // Tracks `bursts` bursts; returns each one's time (us) and the cop passes' max into `r`.
    void run(unsigned bursts, Round& r)
    {
        packet::Packet pkts[kBurst];
        const packet::Packet* ptrs[kBurst];
        uint64_t times[kBurst];
        const uint64_t failures0 = _table.counters().cop_lock_failures;
        for (unsigned b = 0; b < bursts; ++b) {
            unsigned n = 0;
            for (; n < kBurst; ++n) {
                uint64_t ts_us = 0;
                const uint32_t len = _gen->next(_frames[n].data(), ts_us);
                if (len == 0)
                    break;
                packet::parse(_frames[n].data(), len, pkts[n]);
                ptrs[n] = &pkts[n];
                times[n] = ts_us * 1000;
            }
            const auto t0 = Clock::now();
            _table.process_burst(ptrs, n, times);
            const uint64_t now = n ? times[n - 1] : _last;
            _last = now;
            if (now >= _next_cop) {
                const auto c0 = Clock::now();
                _table.run_cop(now, 128, 2048);
                r.cop_max_us =
                    std::max(r.cop_max_us, std::chrono::duration<double, std::micro>(Clock::now() - c0).count());
                _next_cop = now + kCopEveryNs;
            }
            r.burst_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        r.lock_failures = _table.counters().cop_lock_failures - failures0;
    }

private:
    conntrack::FlowTable& _table;
    std::vector<std::vector<uint8_t>> _frames;
    std::unique_ptr<flowgen::Core> _gen;
    uint64_t _last = 0, _next_cop = 0;
};

// The control socket's walk of one table: slices of 256 positions, each flow formatted as its line.
uint64_t dump(const conntrack::FlowTable& t, std::string& out)
{
    std::vector<conntrack::FlowSnapshot> slice(256);
    uint64_t flows = 0;
    uint32_t at = 0;
    while (at != conntrack::kNoPosition) {
        size_t n = 0;
        at = t.read_slice(at, 256, slice.data(), n);
        for (size_t i = 0; i < n; ++i)
            app::append_flow_json(out, 0, slice[i], slice[i].last_seen_ns);
        flows += n;
        if (out.size() > (1u << 20))
            out.clear(); // the socket would have taken it
    }
    return flows;
}

// A --state-checkpoint-s save of one table, as app/service/state.cpp writes it (to FLOWCOP_BENCH_DIR or /tmp).
uint64_t checkpoint(const conntrack::FlowTable& t)
{
    const char* dir = std::getenv("FLOWCOP_BENCH_DIR");
    std::string error;
    auto w = statefile::Writer::create(std::string(dir ? dir : "/tmp") + "/bench_checkpoint.state", error);
    REQUIRE(w);
    conntrack::FlowImage slice[256];
    uint32_t at = 0;
    while (at != conntrack::kNoPosition) {
        size_t n = 0;
        at = t.export_slice(at, 256, {}, slice, n);
        w->append(slice, n);
    }
    REQUIRE(w->commit(statefile::Header{}, error));
    return w->flows();
}

void measure(const char* what, const std::function<uint64_t(const conntrack::FlowTable&)>& walk);

} // namespace

TEST_CASE("A whole-table dump against the owner lcore's bursts, 10^6 flows", "[!benchmark][ctl-dump]")
{
    measure("dump", [](const conntrack::FlowTable& t) {
        std::string out;
        return dump(t, out);
    });
}

TEST_CASE("A state checkpoint against the owner lcore's bursts, 10^6 flows", "[!benchmark][state-checkpoint]")
{
    measure("checkpoint", checkpoint);
}

namespace {

void measure(const char* what, const std::function<uint64_t(const conntrack::FlowTable&)>& walk)
{
    conntrack::TableConfig tc;
    tc.name = "bench_ctl_dump";
    tc.capacity = kFlows * 2;
    tc.wheel.buckets = 4096;
    tc.wheel.tick_ns = 10'000'000;
    std::string err;
    auto table = conntrack::FlowTable::create(tc, err);
    REQUIRE(table);
    Owner owner(*table);
    // Warm up: let the flows arrive and settle (about 10^6 open).
    Round warm;
    while (table->active() < kFlows * 9 / 10) {
        warm.burst_us.clear();
        owner.run(4096, warm);
    }
    std::printf("# table: %llu flows open after warm-up\n", static_cast<unsigned long long>(table->active()));

    // Each round: the owner tracks while a reader dumps the table until one whole dump is done, then
    // tracks as many bursts again with no reader (the baseline, right after, on the same table).
    constexpr unsigned kRounds = 3, kChunk = 10'000;
    Round base, with;
    for (unsigned round = 0; round < kRounds; ++round) {
        std::atomic<bool> stop{false};
        std::atomic<unsigned> done{0};
        Round reader;
        std::thread t([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                const auto t0 = Clock::now();
                const uint64_t n = walk(*table);
                if (stop.load(std::memory_order_relaxed))
                    break; // cut short: not a whole dump
                reader.dump_s += std::chrono::duration<double>(Clock::now() - t0).count();
                reader.dumped += n;
                ++reader.dumps;
                done.store(reader.dumps, std::memory_order_release);
            }
        });
        unsigned bursts = 0;
        while (done.load(std::memory_order_acquire) == 0) {
            owner.run(kChunk, with);
            bursts += kChunk;
        }
        stop.store(true);
        t.join();
        with.dumps += reader.dumps;
        with.dump_s += reader.dump_s;
        with.dumped += reader.dumped;
        owner.run(bursts, base);
    }
    const double tolerance_us = double(kRxRing) * 1e6 / double(kRatePps);
    auto missed = [&](const Round& r) {
        uint64_t m = 0;
        for (const double us : r.burst_us)
            if (us > tolerance_us)
                m += uint64_t((us - tolerance_us) * double(kRatePps) / 1e6);
        return m;
    };
    auto report = [&](const char* name, const Round& r) {
        std::printf("%-13s bursts %zu: median %.2f us, p99.9 %.2f us, max %.1f us; cop max %.1f us; "
                    "cop lock failures %llu; packets missed at %.1f Mpps with %llu RX descriptors: %llu\n",
                    name, r.burst_us.size(), percentile(r.burst_us, 0.5), percentile(r.burst_us, 0.999),
                    percentile(r.burst_us, 1.0), r.cop_max_us, static_cast<unsigned long long>(r.lock_failures),
                    double(kRatePps) / 1e6, static_cast<unsigned long long>(kRxRing),
                    static_cast<unsigned long long>(missed(r)));
    };
    report((std::string("no ") + what).c_str(), base);
    report((std::string(what) + " running").c_str(), with);
    REQUIRE(with.dumps > 0);
    std::printf("%s: %u whole-table walks, %.0f flows each, %.3f s each (%.2f us per flow); "
                "ratio of the owner's median burst with/without: %.3f, p99.9: %.3f\n",
                what, with.dumps, double(with.dumped) / with.dumps, with.dump_s / with.dumps,
                with.dump_s * 1e6 / double(with.dumped),
                percentile(with.burst_us, 0.5) / percentile(base.burst_us, 0.5),
                percentile(with.burst_us, 0.999) / percentile(base.burst_us, 0.999));
}

} // namespace
