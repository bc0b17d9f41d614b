// SPDX-License-Identifier: BSD-3-Clause
// flowcop's packet path without I/O, and through a zero-copy ring port (issue 29, tests/benchmarks.md
// "Issue 29: the packet path without I/O, and through a zero-copy ring port").
//
// Input: the frames deploy/bench/flows_pcap.py writes for N established TCP flows, built once as mbufs
// (path_frames.h: one per flow and direction, a 64-byte data room), replayed in bursts of app::kBurst (64) with
// uniform flow popularity (the pcap's two passes) or Zipf-skewed (s = 1 by default). The flows are
// established first: a warm-up gives every flow both directions, and the benchmark then checks through
// the table's records that every flow is steady (FlowRecord::kSteady: the fused steady path applies to
// its next segment) and, around every timed round, through the table's counters that every packet was
// tracked as a TCP segment of a known flow (tcp_tracked, no flow created, none invalid, out of window,
// without a flow or refused). Any other outcome ends the program with exit status 1 and says why.
//
// Modes (--mode):
//   own       The real Worker::handle() (worker.h: parse, the table step, the free of monitor mode) on
//             the main lcore, called burst by burst as Worker::poll() calls it, with a TSC read per burst
//             as Worker::run() does. Beside it, interleaved round by round, the same loop doing only the
//             free (rte_pktmbuf_free_bulk: what testpmd's rxonly does with what it reads). ns per packet:
//             the median of --rounds rounds of each, by this thread's CPU time (a preemption on the
//             shared machine is not counted) and by wall time; own work = flowcop - free only. Two more
//             loops beside them, the floor of the lane's memory work (run_lines_only()): the lines the
//             lane touches (each frame's, its home bucket, both record lines), in its order and with its
//             dependencies, and nothing else; then the table's lines alone (the frames untouched, as the
//             pcap vdev's copy leaves them in the cache). Each minus free only is what those DRAM lines
//             cost a core that does nothing but fetch them; flowcop - lines only, what is not hidden.
//   callgrind The same two loops over a fixed --bursts, each bracketed by callgrind client requests
//             (zero, collect, dump: callgrind.out.PID.1 is flowcop's, .2 the free only's), for
//             instructions per packet on a VM without a PMU: deploy/bench/profile_handle.py runs it
//             under valgrind --tool=callgrind --collect-atstart=no and reads both dumps. Warm-up and
//             checks are not collected.
//   ring      Packet rate through a DPDK ring port (net_ring, rte_eth_from_rings over a ring of --ring
//             entries): a producer on the main lcore enqueues the pre-built mbufs (zero copy: a refcount
//             per copy, never a memcpy) as fast as the ring takes them; on the other lcore either flowcop's
//             real lcore body, Worker::run() (the poll loop with its cop and mailbox checks, monitor mode)
//             with the port as its one RX queue, or rxonly (rte_eth_rx_burst and rte_pktmbuf_free_bulk
//             only), alternately for --rounds rounds of --seconds each. Mpps: the medians of the
//             consumer's packets over each round's timed window; the ratio flowcop / rxonly. The consumer's
//             polls per kBurst packets say which side set the pace: 1.0, every poll found a full burst (the
//             consumer was the bottleneck); more, it waited for the producer (or the producer's core was
//             taken by another process on the shared machine). The producer pauses (rte_pause) when the
//             ring is full instead of hammering its indexes.
//             With --prefill, each round the producer first fills the ring (--ring, 2^20 entries unless
//             given) while the consumer is stopped, then the consumer drains it alone: its Mpps from its
//             own thread's CPU time (a preemption by another process is not counted), so on a shared
//             machine the consumer's cost is measured without the scheduler's share of two busy cores;
//             the mbufs' header lines still move from the producer's core to the consumer's. Both consumers
//             of a round drain the same stretch of the stream; the next round takes the next stretch.
//
// --lane-isa baseline|v3: the steady lane's compiled copy (lib/packet/lane_isa.h) instead of the one the
// worker chose (auto: v3 where the CPU runs it), to compare the two in one build.
//
// Replaying without freeing for real: every mbuf keeps one reference for the frames (refcnt 1); the
// loop adds one per copy it hands over (rte_mbuf_refcnt_update, a plain store from 1 to 2 and an atomic
// add only for a second copy in flight), and the free takes it back. So the free each packet pays is
// rte_pktmbuf_free_bulk's path for a shared mbuf, one atomic decrement (no mempool put), where a NIC
// host's free puts the mbuf in the mempool cache and its RX refills the ring from it. Both loops of a
// comparison pay exactly the same (the free-only loop is the same refcount and free), so the difference
// and the ratio hold flowcop's own work only; the absolute numbers carry the atomic and, at 10^6 flows
// and more, the misses on the mbufs themselves: 2N mbufs of 256 bytes read in a random order miss on the
// header and data lines as a NIC host's recycled, DMA-warmed mbufs would not (the free-only loop pays
// the header misses too). The alternative, letting the free return each mbuf to the pool and taking
// it again, fails for the Zipf streams, where one mbuf is often twice in a burst.
//
// The steady path's expiry test is one compare of a flow's last_seen with a per-burst horizon: now minus
// ESTABLISHED's timeout under the flow's cap (flow_table.h, steady_horizon(); 300 s with an unacknowledged
// or retransmission cap, 5 days without); a packet of a flow not seen for longer takes the exact test, the
// out-of-line FlowTable::track(). Before e172f8b the horizon was the smallest timeout of any state (CLOSE's
// 10 s), which sent most packets at 10^7 flows there. --timeout-floor S raises every TCP timeout and cap
// below S to S (the same code: only the values it compares with, the horizon and the timeout caps, change),
// so a run can still keep every flow inside the horizon whatever its pace.
//
// Memory: the mbuf pool (path_frames.h, ~5.1 GB at 10^7 flows) and a table of 1.25 N flows as
// packet_rate.py sizes it (~173 B a flow): EAL -m is computed from both (--no-huge: reserved up front,
// resident only where touched). At 10^7 flows ~7.5 GB in all.
//
// meson benchmarks (never in the default run): meson test -C BUILD --benchmark --suite bench -v 'packet path'
#include "path_frames.h"

#include <bench_util.h>
#include <bench_version.h>
#include <eal_boot.h>

#include <service/dataplane/clock.h>
#include <service/dataplane/worker.h>

#include <conntrack/flow_record.h>
#include <conntrack/flow_table.h>
#include <conntrack/table_inspector.h>
#include <conntrack/table_memory.h>
#include <packet/packet_mbuf.h>
#include <stats/relaxed.h>
#include <text/decimal.h>

#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <valgrind/callgrind.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <pthread.h>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace flowcop::app {

// The seam worker.h opens for this benchmark: handle() as Worker::poll() calls it.
struct WorkerBench {
    static void handle(Worker& w, rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef* rx) noexcept
    {
        w.handle(mbufs, n, tsc, rx);
    }
};

} // namespace flowcop::app

namespace {

using namespace flowcop;
using bench::PathFrames;

constexpr unsigned kBurst = app::kBurst;

struct Args {
    std::string mode = "own";
    uint32_t flows = 10'000;
    std::vector<std::string> popularity{"uniform", "zipf"};
    double zipf_s = 1.0;
    unsigned rounds = 7;
    uint64_t min_packets = 4'000'000; // own: packets a round, at least (the stream repeated)
    uint64_t bursts = 20'000;         // callgrind
    double seconds = 1.0;             // ring: a round's timed window
    unsigned ring = 1024;
    bool prefill = false;
    std::string write_frames;      // the built frames to this file, then exit (checked against flows_pcap.py)
    uint32_t timeout_floor = 0;    // every TCP timeout and cap below it raised to it; 0: flowcop's defaults
    std::string lane_isa = "auto"; // the lane's compiled copy: the worker's choice, or baseline / v3
};

[[noreturn]] void fail(const std::string& why)
{
    std::fprintf(stderr, "bench_packet_path: %s\n", why.c_str());
    std::fflush(stdout);
    std::exit(1);
}

const char kUsage[] =
    "usage: bench_packet_path [--mode own|callgrind|ring] [--flows N] [--popularity uniform|zipf|both]\n"
    "                         [--zipf-s S] [--rounds R] [--min-packets P] [--bursts B] [--seconds T] [--ring E]\n"
    "                         [--prefill] [--write-frames FILE] [--timeout-floor S] [--lane-isa auto|baseline|v3]\n";

Args parse_args(int argc, char** argv)
{
    Args a;
    auto number = [&](int& i, uint64_t lo, uint64_t hi) {
        uint64_t v = 0;
        if (i + 1 >= argc || !text::parse_decimal_in(argv[i + 1], lo, hi, v))
            fail(std::string(argv[i]) + ": a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                 "]\n" + kUsage);
        ++i;
        return v;
    };
    auto real = [&](int& i) {
        char* end = nullptr;
        const double v = i + 1 < argc ? std::strtod(argv[i + 1], &end) : 0;
        if (i + 1 >= argc || end == argv[i + 1] || *end != '\0' || !(v > 0 && v < 1e6))
            fail(std::string(argv[i]) + ": a positive number\n" + kUsage);
        ++i;
        return v;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string o = argv[i];
        if (o == "--help" || o == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (o == "--mode" && i + 1 < argc) {
            a.mode = argv[++i];
            if (a.mode != "own" && a.mode != "callgrind" && a.mode != "ring")
                fail("--mode: own, callgrind or ring\n" + std::string(kUsage));
        } else if (o == "--flows") {
            a.flows = uint32_t(number(i, 32, 1u << 24)); // flows_pcap.py's keys are distinct up to 2^24
        } else if (o == "--popularity" && i + 1 < argc) {
            const std::string p = argv[++i];
            if (p == "both")
                a.popularity = {"uniform", "zipf"};
            else if (p == "uniform" || p == "zipf")
                a.popularity = {p};
            else
                fail("--popularity: uniform, zipf or both\n" + std::string(kUsage));
        } else if (o == "--zipf-s") {
            a.zipf_s = real(i);
        } else if (o == "--rounds") {
            a.rounds = unsigned(number(i, 1, 1000));
        } else if (o == "--min-packets") {
            a.min_packets = number(i, 32, uint64_t(1) << 40);
        } else if (o == "--bursts") {
            a.bursts = number(i, 1, uint64_t(1) << 32);
        } else if (o == "--seconds") {
            a.seconds = real(i);
        } else if (o == "--write-frames" && i + 1 < argc) {
            a.write_frames = argv[++i];
        } else if (o == "--lane-isa" && i + 1 < argc) {
            a.lane_isa = argv[++i];
            if (a.lane_isa != "auto" && a.lane_isa != "baseline" && a.lane_isa != "v3")
                fail("--lane-isa: auto, baseline or v3\n" + std::string(kUsage));
        } else if (o == "--timeout-floor") {
            a.timeout_floor = uint32_t(number(i, 0, 1u << 30));
        } else if (o == "--prefill") {
            a.prefill = true;
        } else if (o == "--ring") {
            a.ring = unsigned(number(i, 64, 1u << 20));
            if ((a.ring & (a.ring - 1)) != 0)
                fail("--ring: a power of two");
        } else {
            fail("unknown argument '" + o + "'\n" + kUsage);
        }
    }
    return a;
}

// The table's view of what a round did: every packet tracked as a known flow's TCP segment.
struct Tally {
    uint64_t tcp, tracked, created, refused;
};

Tally tally(const conntrack::FlowTable& t)
{
    const conntrack::Counters& c = t.counters();
    using stats::load_relaxed;
    return {load_relaxed(c.packets_by_verdict[size_t(packet::Verdict::tcp)]), load_relaxed(c.tcp_tracked),
            load_relaxed(c.flows_created),
            load_relaxed(c.tcp_invalid) + load_relaxed(c.tcp_no_flow) + load_relaxed(c.tcp_table_full) +
                c.out_of_window_total()};
}

void check_tracked(const Tally& a, const Tally& b, uint64_t packets, const char* what)
{
    if (b.tcp - a.tcp != packets || b.tracked - a.tracked != packets || b.created != a.created ||
        b.refused != a.refused)
        fail(std::string(what) + ": of " + std::to_string(packets) + " packets the table saw " +
             std::to_string(b.tcp - a.tcp) + " TCP segments and tracked " + std::to_string(b.tracked - a.tracked) +
             "; flows created " + std::to_string(b.created - a.created) + ", invalid/out of window/no flow/full " +
             std::to_string(b.refused - a.refused) + ": not the steady path of established flows");
}

// Flows whose record says the steady path takes their next segment (kSteady, no mark); fails if a flow
// is not in the table at all.
uint32_t steady_flows(const conntrack::FlowTable& t, const PathFrames& frames)
{
    uint32_t steady = 0;
    for (uint32_t f = 0; f < frames.flows(); ++f) {
        packet::Packet pkt;
        packet::parse_mbuf(frames.frame(f, true), pkt);
        const int32_t pos = conntrack::TableInspector::find(t, pkt.key);
        if (pos < 0)
            fail("flow " + std::to_string(f) + " is not in the table after the warm-up");
        const uint8_t flags = conntrack::TableInspector::record(t, uint32_t(pos)).flags;
        steady += (flags & conntrack::FlowRecord::kSteady) != 0 ? 1 : 0;
    }
    return steady;
}

// A stream `reps` times in bursts, each mbuf with one more reference (what the consumer frees), handed to
// consume(burst, n): both loops below are this one, so they differ only in what they do with a burst.
template <typename Consume>
void replay(const std::vector<rte_mbuf*>& s, uint64_t reps, Consume&& consume)
{
    rte_mbuf* burst[kBurst];
    for (uint64_t r = 0; r < reps; ++r)
        for (size_t b = 0; b < s.size(); b += kBurst) {
            const uint16_t n = uint16_t(std::min<size_t>(kBurst, s.size() - b));
            for (uint16_t i = 0; i < n; ++i) {
                burst[i] = s[b + i];
                rte_mbuf_refcnt_update(burst[i], 1);
            }
            consume(burst, n);
        }
}

// A stream through flowcop's handle(), `reps` times; one TSC read per burst as Worker::run() does.
void run_handle(app::Worker& w, const std::vector<rte_mbuf*>& s, uint64_t reps, const app::RxQueueRef& rx)
{
    replay(s, reps, [&](rte_mbuf** burst, uint16_t n) { app::WorkerBench::handle(w, burst, n, rte_rdtsc(), &rx); });
}

// The same loop doing only the free: what an rxonly reader does with what it read.
void run_free_only(const std::vector<rte_mbuf*>& s, uint64_t reps)
{
    replay(s, reps, [](rte_mbuf** burst, uint16_t n) { rte_pktmbuf_free_bulk(burst, n); });
}

// What the lines-only loop knows of a stream's packet beforehand: its flow's home bucket and signature
// (the lane's hash, probe_lite(), taken once before timing), so the loop spends no instruction on them.
struct LineProbe {
    const conntrack::Bucket* home;
    uint16_t sig;
};

std::vector<LineProbe> line_probes(const conntrack::FlowTable& t, const std::vector<rte_mbuf*>& s)
{
    const conntrack::FlowTable::LiteProber probe = t.probe_lite();
    conntrack::FlowTable::LiteProbes one;
    std::vector<LineProbe> out(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        packet::TcpLite seg;
        if (!packet::parse_mbuf_lite(s[i], seg))
            fail("a stream frame the lane's reader declines");
        probe(seg, one, 0);
        out[i] = {one.home[0], one.sig[0]};
    }
    return out;
}

// A value the compiler cannot see is zero: it ties an address to a load (a dependent miss) at one add.
template <typename T>
[[gnu::always_inline]] inline T opaque_zero(T v) noexcept
{
    T zero = v ^ v;
    asm("" : "+r"(zero));
    return zero;
}

// The lines-only loop: the memory work of the lane's own work and nothing else. Per burst, in the
// lane's order and with its dependencies: each frame's line asked for (through its mbuf's header, as
// the lane does), then each frame's first word read and its home bucket asked for (in the lane the
// bucket's address is the frame's hash: here it is the precomputed one plus a zero taken from that
// word), then each bucket read for the flow's record (FlowIndex::first_candidate, the lane's own)
// and both record lines asked for, then each record's two lines read and written back unchanged
// (the lane writes last_seen in line 0 and the window in line 1: both lines end dirty), then the
// free. So lines-only minus free-only is what the lane's DRAM lines cost a core that does nothing
// else: the floor of its own work at a flow count where they miss.
// kFrames false: the table's lines alone (the frames not read, as on the pcap vdev, whose copy leaves
// them in the cache).
template <bool kFrames>
void run_lines_only(conntrack::FlowTable& t, const std::vector<rte_mbuf*>& s, const std::vector<LineProbe>& probes,
                    uint64_t reps)
{
    conntrack::FlowRecord* const records = const_cast<conntrack::FlowRecord*>(&conntrack::TableInspector::record(t, 0));
    static conntrack::FlowRecord none{};
    size_t at = 0;
    replay(s, reps, [&](rte_mbuf** burst, uint16_t n) {
        const LineProbe* p = &probes[at];
        at = at + n == s.size() ? 0 : at + n;
        const conntrack::Bucket* homes[kBurst];
        conntrack::FlowRecord* cands[kBurst];
        if constexpr (kFrames) {
            for (uint16_t i = 0; i < n; ++i)
                rte_prefetch0(rte_pktmbuf_mtod(burst[i], const void*));
            for (uint16_t i = 0; i < n; ++i) {
                uint64_t word;
                std::memcpy(&word, rte_pktmbuf_mtod(burst[i], const void*), sizeof word);
                homes[i] = p[i].home + opaque_zero(word);
                rte_prefetch0(homes[i]);
            }
        } else {
            for (uint16_t i = 0; i < n; ++i) {
                homes[i] = p[i].home;
                rte_prefetch0(homes[i]);
            }
        }
        for (uint16_t i = 0; i < n; ++i) {
            conntrack::FlowRecord* const r = conntrack::FlowIndex::first_candidate(*homes[i], p[i].sig, records, &none);
            cands[i] = r;
            rte_prefetch0(r);
            rte_prefetch0(reinterpret_cast<const uint8_t*>(r) + 64);
        }
        for (uint16_t i = 0; i < n; ++i) {
            volatile uint64_t* const line0 = &cands[i]->last_seen_ns;
            volatile uint64_t* const line1 = &cands[i]->window.words[4];
            const uint64_t a = *line0, b = *line1;
            *line0 = a;
            *line1 = b;
        }
        rte_pktmbuf_free_bulk(burst, n);
    });
}

std::vector<rte_mbuf*> stream_of(const PathFrames& frames, const std::string& popularity, const Args& a)
{
    return popularity == "zipf" ? frames.zipf(a.zipf_s, bench::kSeed) : frames.uniform(bench::kSeed);
}

std::string describe(const std::string& popularity, const Args& a)
{
    char s[64];
    std::snprintf(s, sizeof s, "zipf s=%.2f", a.zipf_s);
    return popularity == "zipf" ? s : "uniform";
}

// The packets of the stream that the 10 most popular flows hold, as a share: how skewed it is.
double top10_share(const std::vector<rte_mbuf*>& s)
{
    std::vector<rte_mbuf*> v(s);
    std::sort(v.begin(), v.end());
    std::vector<size_t> counts;
    for (size_t i = 0; i < v.size();) {
        size_t j = i;
        while (j < v.size() && v[j] == v[i])
            ++j;
        counts.push_back(j - i);
        i = j;
    }
    std::sort(counts.rbegin(), counts.rend());
    size_t top = 0;
    for (size_t i = 0; i < counts.size() && i < 20; ++i) // 10 flows, both directions
        top += counts[i];
    return double(top) / double(s.size());
}

void own(app::Worker& w, conntrack::FlowTable& t, const PathFrames& frames, const Args& a)
{
    const app::RxQueueRef rx{0, 0, 0, 0};
    for (const std::string& pop : a.popularity) {
        const std::vector<rte_mbuf*> s = stream_of(frames, pop, a);
        const uint64_t reps = std::max<uint64_t>(1, (a.min_packets + s.size() - 1) / s.size());
        const uint64_t packets = reps * s.size();
        run_handle(w, s, 1, rx); // a first pass of this stream, untimed
        const std::vector<LineProbe> probes = line_probes(t, s);
        std::vector<double> fc_cpu, fc_wall, fo_cpu, fo_wall, diff, lo_cpu, lines, unhidden, to_cpu, table_lines;
        for (unsigned r = 0; r < a.rounds; ++r) {
            const Tally before = tally(t);
            const bench::Timed fc = bench::timed([&] { run_handle(w, s, reps, rx); });
            check_tracked(before, tally(t), packets, "a timed round");
            const bench::Timed fo = bench::timed([&] { run_free_only(s, reps); });
            const bench::Timed lo = bench::timed([&] { run_lines_only<true>(t, s, probes, reps); });
            const bench::Timed to = bench::timed([&] { run_lines_only<false>(t, s, probes, reps); });
            fc_cpu.push_back(fc.cpu_ns / double(packets));
            fc_wall.push_back(fc.wall_ns / double(packets));
            fo_cpu.push_back(fo.cpu_ns / double(packets));
            fo_wall.push_back(fo.wall_ns / double(packets));
            lo_cpu.push_back(lo.cpu_ns / double(packets));
            to_cpu.push_back(to.cpu_ns / double(packets));
            table_lines.push_back(to_cpu.back() - fo_cpu.back());
            diff.push_back(fc_cpu.back() - fo_cpu.back());
            lines.push_back(lo_cpu.back() - fo_cpu.back());
            unhidden.push_back(fc_cpu.back() - lo_cpu.back());
        }
        const uint32_t steady = steady_flows(t, frames);
        std::printf("own work, %u flows, %s (top 10 flows: %.1f%% of packets): %zu packets a stream x %llu a round, "
                    "%u rounds, interleaved\n",
                    frames.flows(), describe(pop, a).c_str(), 100.0 * top10_share(s), s.size(),
                    (unsigned long long)reps, a.rounds);
        std::printf("  flowcop Worker::handle : %7.1f ns/packet (cpu median; min %.1f, max %.1f), wall %.1f\n",
                    bench::median(fc_cpu), *std::min_element(fc_cpu.begin(), fc_cpu.end()),
                    *std::max_element(fc_cpu.begin(), fc_cpu.end()), bench::median(fc_wall));
        std::printf("  free only (rxonly-like): %7.1f ns/packet (cpu median; min %.1f, max %.1f), wall %.1f\n",
                    bench::median(fo_cpu), *std::min_element(fo_cpu.begin(), fo_cpu.end()),
                    *std::max_element(fo_cpu.begin(), fo_cpu.end()), bench::median(fo_wall));
        std::printf("  own work (median of per-round differences): %.1f ns/packet; ratio flowcop / free only %.2f\n",
                    bench::median(diff), bench::median(fc_cpu) / bench::median(fo_cpu));
        std::printf("  lines only (the lane's lines, nothing else): %.1f ns/packet (cpu median; min %.1f, max %.1f)\n",
                    bench::median(lo_cpu), *std::min_element(lo_cpu.begin(), lo_cpu.end()),
                    *std::max_element(lo_cpu.begin(), lo_cpu.end()));
        std::printf("  the lines' own cost (lines only - free only): %.1f ns/packet; flowcop - lines only: %.1f "
                    "ns/packet (medians of per-round differences)\n",
                    bench::median(lines), bench::median(unhidden));
        std::printf("  the table's lines only (bucket, record lines 0 and 1): %.1f ns/packet (cpu median); their own "
                    "cost %.1f ns/packet\n",
                    bench::median(to_cpu), bench::median(table_lines));
        std::printf("  table: every timed packet tracked on a known flow (%llu rounds x %llu); steady flows "
                    "after: %u of %u\n",
                    (unsigned long long)a.rounds, (unsigned long long)packets, steady, frames.flows());
        std::fflush(stdout);
    }
}

void callgrind(app::Worker& w, conntrack::FlowTable& t, const PathFrames& frames, const Args& a)
{
    const app::RxQueueRef rx{0, 0, 0, 0};
    const std::string& pop = a.popularity.front();
    const std::vector<rte_mbuf*> s = stream_of(frames, pop, a);
    run_handle(w, s, 1, rx);
    // A window of whole bursts from the stream's start: `reps` passes and a prefix.
    std::vector<rte_mbuf*> window;
    const uint64_t want = a.bursts * kBurst;
    window.reserve(want);
    for (uint64_t k = 0; k < want; ++k)
        window.push_back(s[k % s.size()]);
    const Tally before = tally(t);
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
    run_handle(w, window, 1, rx);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT("flowcop Worker::handle");
    check_tracked(before, tally(t), want, "the callgrind window");
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
    run_free_only(window, 1);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT("free only");
    std::printf("callgrind: %u flows, %s, packets %llu in each of 2 dumps (1: flowcop Worker::handle, 2: free "
                "only); every packet tracked on a known flow\n",
                frames.flows(), describe(pop, a).c_str(), (unsigned long long)want);
    std::fflush(stdout);
}

// --- ring mode ---

struct Consumer {
    app::Worker* worker = nullptr;
    uint16_t port = 0;
    std::atomic<bool> quit{false};
    alignas(64) std::atomic<uint64_t> rxonly_packets{0}; // rxonly's count and polls, one writer
    std::atomic<uint64_t> rxonly_polls{0};
    // The consumer's CPU clock and its reading when the consumer started (--prefill).
    clockid_t cpu_clock{};
    uint64_t cpu0 = 0, wall0 = 0;
    std::atomic<bool> started{false};
};

uint64_t cpu_clock_ns(clockid_t id)
{
    timespec ts{};
    clock_gettime(id, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

void consumer_starts(Consumer& c)
{
    pthread_getcpuclockid(pthread_self(), &c.cpu_clock);
    c.cpu0 = cpu_clock_ns(c.cpu_clock);
    c.wall0 = bench::mono_ns();
    c.started.store(true, std::memory_order_release);
}

int run_worker(void* arg)
{
    auto* c = static_cast<Consumer*>(arg);
    consumer_starts(*c);
    c->worker->run(c->quit);
    return 0;
}

int run_rxonly(void* arg)
{
    auto* c = static_cast<Consumer*>(arg);
    rte_mbuf* burst[kBurst];
    uint64_t count = 0, polls = 0;
    consumer_starts(*c);
    while (!c->quit.load(std::memory_order_relaxed)) {
        const uint16_t n = rte_eth_rx_burst(c->port, 0, burst, kBurst);
        c->rxonly_polls.store(++polls, std::memory_order_relaxed);
        if (n != 0) {
            rte_pktmbuf_free_bulk(burst, n);
            count += n;
            c->rxonly_packets.store(count, std::memory_order_relaxed);
        }
    }
    return 0;
}

// Enqueues the stream (from `pos`, circularly) into the ring until mono_ns() passes `until`.
void produce(rte_ring* ring, const std::vector<rte_mbuf*>& s, size_t& pos, uint64_t until)
{
    rte_mbuf* burst[kBurst];
    unsigned have = 0, sent = 0;
    for (uint64_t k = 0;; ++k) {
        if ((k & 63) == 0 && bench::mono_ns() >= until)
            break;
        if (sent == have) {
            have = unsigned(std::min<size_t>(kBurst, s.size() - pos));
            for (unsigned i = 0; i < have; ++i) {
                burst[i] = s[pos + i];
                rte_mbuf_refcnt_update(burst[i], 1);
            }
            pos = (pos + have) % s.size();
            sent = 0;
        }
        const unsigned e =
            rte_ring_sp_enqueue_burst(ring, reinterpret_cast<void* const*>(burst + sent), have - sent, nullptr);
        if (e == 0)
            rte_pause();
        sent += e;
    }
    // What was taken a reference for and not enqueued goes back.
    for (unsigned i = sent; i < have; ++i)
        rte_pktmbuf_free(burst[i]);
}

void drain(rte_ring* ring)
{
    void* objs[kBurst];
    unsigned n = 0;
    while ((n = rte_ring_sc_dequeue_burst(ring, objs, kBurst, nullptr)) != 0)
        rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), n);
}

uint16_t make_ring_port(unsigned size, rte_ring*& rx)
{
    rx = rte_ring_create("bench_ring_rx", size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring* tx = rte_ring_create("bench_ring_tx", size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (rx == nullptr || tx == nullptr)
        fail("cannot create the ring port's rings");
    const int id = rte_eth_from_rings("bench_ring", &rx, 1, &tx, 1, unsigned(rte_socket_id()));
    if (id < 0)
        fail("rte_eth_from_rings failed");
    const uint16_t port = uint16_t(id);
    // The ring PMD takes no mbufs from the queue's pool, but ethdev checks that its data room holds a
    // headroom (the frames' pool has none): a small pool of the default size, never used.
    rte_mempool* setup_pool =
        rte_pktmbuf_pool_create("bench_ring_setup", 64, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (setup_pool == nullptr)
        fail("cannot create the ring port's queue pool");
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
        rte_eth_rx_queue_setup(port, 0, uint16_t(std::min(size, 32768u)), SOCKET_ID_ANY, nullptr, setup_pool) != 0 ||
        rte_eth_tx_queue_setup(port, 0, uint16_t(std::min(size, 32768u)), SOCKET_ID_ANY, nullptr) != 0 ||
        rte_eth_dev_start(port) != 0)
        fail("cannot configure and start the ring port");
    return port;
}

void ring(app::Worker& w, conntrack::FlowTable& t, const PathFrames& frames, const Args& a, uint16_t port,
          rte_ring* rx_ring, unsigned lcore)
{
    Consumer c;
    c.worker = &w;
    c.port = port;
    const uint64_t warm_ns = 200 * bench::kMs;
    const uint64_t window_ns = uint64_t(a.seconds * 1e9);
    for (const std::string& pop : a.popularity) {
        const std::vector<rte_mbuf*> s = stream_of(frames, pop, a);
        size_t pos = 0;
        std::vector<double> fc_mpps, ro_mpps, fc_polls, ro_polls;
        for (unsigned r = 0; r < a.rounds; ++r) {
            for (int which = 0; which < 2; ++which) { // flowcop, then rxonly
                c.quit.store(false);
                c.rxonly_packets.store(0);
                c.rxonly_polls.store(0);
                const uint64_t rx0 = stats::load_relaxed(w.stats().rx_packets);
                const Tally before = tally(t);
                if (rte_eal_remote_launch(which == 0 ? run_worker : run_rxonly, &c, lcore) != 0)
                    fail("cannot launch the consumer on lcore " + std::to_string(lcore));
                const uint64_t turns0 = stats::load_relaxed(w.stats().turns);
                auto polls = [&] {
                    return which == 0 ? stats::load_relaxed(w.stats().turns) - turns0
                                      : c.rxonly_polls.load(std::memory_order_relaxed);
                };
                auto consumed = [&] {
                    return which == 0 ? stats::load_relaxed(w.stats().rx_packets) - rx0
                                      : c.rxonly_packets.load(std::memory_order_relaxed);
                };
                produce(rx_ring, s, pos, bench::mono_ns() + warm_ns);
                const uint64_t n0 = consumed(), p0 = polls(), t0 = bench::mono_ns();
                produce(rx_ring, s, pos, t0 + window_ns);
                const uint64_t n1 = consumed(), p1 = polls(), t1 = bench::mono_ns();
                c.quit.store(true);
                rte_eal_wait_lcore(lcore);
                drain(rx_ring);
                const double mpps = double(n1 - n0) * 1e3 / double(t1 - t0);
                const double per_burst = n1 > n0 ? double(p1 - p0) * kBurst / double(n1 - n0) : 0;
                if (which == 0) {
                    const uint64_t handled = stats::load_relaxed(w.stats().rx_packets) - rx0;
                    check_tracked(before, tally(t), handled, "a ring round");
                    fc_mpps.push_back(mpps);
                    fc_polls.push_back(per_burst);
                } else {
                    ro_mpps.push_back(mpps);
                    ro_polls.push_back(per_burst);
                }
            }
        }
        const double fc = bench::median(fc_mpps), ro = bench::median(ro_mpps);
        std::printf("ring port, %u flows, %s: net_ring of %u entries, producer on lcore %u, consumer on lcore %u, "
                    "%u rounds of %.1f s, interleaved\n",
                    frames.flows(), describe(pop, a).c_str(), a.ring, rte_get_main_lcore(), lcore, a.rounds, a.seconds);
        std::printf("  flowcop Worker::run : %6.2f Mpps (median; min %.2f, max %.2f); %.2f polls per %u packets\n", fc,
                    *std::min_element(fc_mpps.begin(), fc_mpps.end()),
                    *std::max_element(fc_mpps.begin(), fc_mpps.end()), bench::median(fc_polls), kBurst);
        std::printf("  rxonly (rx + free)  : %6.2f Mpps (median; min %.2f, max %.2f); %.2f polls per %u packets\n", ro,
                    *std::min_element(ro_mpps.begin(), ro_mpps.end()),
                    *std::max_element(ro_mpps.begin(), ro_mpps.end()), bench::median(ro_polls), kBurst);
        std::printf("  ratio flowcop / rxonly %.2f%s\n", fc / ro,
                    bench::median(ro_polls) > 1.5
                        ? "  (rxonly often found less than a burst: the producer set its "
                          "pace, so rxonly's rate is a lower bound and the ratio an upper one)"
                        : "");
        std::printf("  table: every packet flowcop read tracked on a known flow\n");
        std::fflush(stdout);
    }
}

// --prefill: the producer fills the ring, then the consumer drains it alone (see the header).
void ring_prefilled(app::Worker& w, conntrack::FlowTable& t, const PathFrames& frames, const Args& a, uint16_t port,
                    rte_ring* rx_ring, unsigned lcore)
{
    Consumer c;
    c.worker = &w;
    c.port = port;
    const unsigned fill = unsigned(rte_ring_get_capacity(rx_ring));
    for (const std::string& pop : a.popularity) {
        const std::vector<rte_mbuf*> s = stream_of(frames, pop, a);
        size_t pos = 0;
        std::vector<double> fc_cpu, ro_cpu, fc_wall, ro_wall;
        for (unsigned r = 0; r < a.rounds + 1; ++r) { // round 0: a warm-up, not counted
            const size_t start = pos; // flowcop and rxonly drain the same packets; the next round the next ones
            for (int which = 0; which < 2; ++which) {
                pos = start;
                rte_mbuf* burst[kBurst];
                for (unsigned k = 0; k < fill; k += kBurst) {
                    const unsigned n = std::min(kBurst, fill - k);
                    for (unsigned i = 0; i < n; ++i) {
                        burst[i] = s[pos];
                        pos = (pos + 1) % s.size();
                        rte_mbuf_refcnt_update(burst[i], 1);
                    }
                    if (rte_ring_sp_enqueue_bulk(rx_ring, reinterpret_cast<void* const*>(burst), n, nullptr) != n)
                        fail("the ring took less than its capacity");
                }
                c.quit.store(false);
                c.started.store(false);
                c.rxonly_packets.store(0);
                const uint64_t rx0 = stats::load_relaxed(w.stats().rx_packets);
                const Tally before = tally(t);
                if (rte_eal_remote_launch(which == 0 ? run_worker : run_rxonly, &c, lcore) != 0)
                    fail("cannot launch the consumer on lcore " + std::to_string(lcore));
                while (!c.started.load(std::memory_order_acquire))
                    rte_pause();
                auto consumed = [&] {
                    return which == 0 ? stats::load_relaxed(w.stats().rx_packets) - rx0
                                      : c.rxonly_packets.load(std::memory_order_relaxed);
                };
                const uint64_t deadline = bench::mono_ns() + 60 * bench::kSec;
                while (consumed() < fill) {
                    if (bench::mono_ns() > deadline)
                        fail("the consumer did not drain the ring in 60 s");
                    usleep(20);
                }
                const uint64_t cpu = cpu_clock_ns(c.cpu_clock) - c.cpu0, wall = bench::mono_ns() - c.wall0;
                c.quit.store(true);
                rte_eal_wait_lcore(lcore);
                if (which == 0)
                    check_tracked(before, tally(t), fill, "a prefilled ring round");
                if (r == 0)
                    continue;
                (which == 0 ? fc_cpu : ro_cpu).push_back(double(fill) * 1e3 / double(cpu));
                (which == 0 ? fc_wall : ro_wall).push_back(double(fill) * 1e3 / double(wall));
            }
        }
        const double fc = bench::median(fc_cpu), ro = bench::median(ro_cpu);
        std::printf("ring port, prefilled, %u flows, %s: net_ring of %u packets filled on lcore %u, drained on lcore "
                    "%u, %u rounds, interleaved\n",
                    frames.flows(), describe(pop, a).c_str(), fill, rte_get_main_lcore(), lcore, a.rounds);
        std::printf("  flowcop Worker::run : %6.2f Mpps by the consumer's CPU time (median; min %.2f, max %.2f), "
                    "%.2f by wall time\n",
                    fc, *std::min_element(fc_cpu.begin(), fc_cpu.end()),
                    *std::max_element(fc_cpu.begin(), fc_cpu.end()), bench::median(fc_wall));
        std::printf("  rxonly (rx + free)  : %6.2f Mpps by the consumer's CPU time (median; min %.2f, max %.2f), "
                    "%.2f by wall time\n",
                    ro, *std::min_element(ro_cpu.begin(), ro_cpu.end()),
                    *std::max_element(ro_cpu.begin(), ro_cpu.end()), bench::median(ro_wall));
        std::printf("  ratio flowcop / rxonly %.2f; table: every packet flowcop read tracked on a known flow\n",
                    fc / ro);
        std::fflush(stdout);
    }
}

} // namespace

int main(int argc, char** argv)
{
    Args a = parse_args(argc, argv);
    if (a.prefill && a.ring == Args{}.ring)
        a.ring = 1u << 20;
    const uint32_t capacity = std::max<uint32_t>(1024, uint32_t(std::ceil(a.flows * 1.25))); // packet_rate.py's
    const uint64_t bytes = PathFrames::pool_bytes(a.flows) + conntrack::FlowTable::block_bytes(capacity) +
                           uint64_t(a.ring) * 64 + (512ull << 20);
    test::EalOptions eal;
    eal.memory_mb = unsigned((bytes >> 20) + 1);
    eal.main_lcore_only = a.mode != "ring";
    // As the other EAL benchmarks (eal_bench_main.cpp): hugetlbfs pages instead of --no-huge memory.
    if (const char* huge = std::getenv("FLOWCOP_BENCH_HUGE_DIR"); huge != nullptr)
        eal.huge_dir = huge;
    if (const std::string why = test::start_eal(argv[0], eal); !why.empty())
        fail(why);
    unsigned worker_lcore = rte_get_main_lcore();
    if (a.mode == "ring") {
        worker_lcore = rte_get_next_lcore(-1, 1, 0);
        if (worker_lcore >= RTE_MAX_LCORE)
            fail("--mode ring needs two lcores (EAL found one)");
    }
    bench::provenance(("packet path, --mode " + a.mode).c_str());
    std::printf("EAL %s -m %u (mbuf pool %llu MiB, table of %u flows %llu MiB)\n",
                eal.huge_dir.empty() ? "--no-huge" : ("--huge-dir " + eal.huge_dir).c_str(), eal.memory_mb,
                (unsigned long long)(PathFrames::pool_bytes(a.flows) >> 20), capacity,
                (unsigned long long)(conntrack::FlowTable::block_bytes(capacity) >> 20));

    std::string error;
    const uint64_t b0 = bench::mono_ns();
    conntrack::TableConfig tc;
    tc.name = "bench_path";
    tc.capacity = capacity;
    tc.memory = conntrack::eal_memory();
    tc.lcore = uint16_t(worker_lcore);
    if (a.timeout_floor != 0) { // see the header: the steady path's expiry horizon
        for (uint32_t& t : tc.timeouts.seconds)
            t = t != 0 ? std::max(t, a.timeout_floor) : 0;
        tc.timeouts.max_retrans = std::max(tc.timeouts.max_retrans, a.timeout_floor);
        tc.timeouts.unacknowledged = std::max(tc.timeouts.unacknowledged, a.timeout_floor);
        std::printf("--timeout-floor %u: every TCP timeout and cap at least %u s\n", a.timeout_floor, a.timeout_floor);
    }
    // The table first: its block is one contiguous allocation, the pool's may span several.
    auto table = conntrack::FlowTable::create(tc, error);
    if (!table)
        fail(error);
    auto frames = PathFrames::create(a.flows, error);
    if (!frames)
        fail(error);
    if (!a.write_frames.empty()) {
        // Flow by flow, client->server then server->client, 60 bytes each: deploy/bench/check_path_frames.py
        // compares them with flows_pcap.py's frame().
        FILE* f = std::fopen(a.write_frames.c_str(), "wb");
        for (uint32_t i = 0; f != nullptr && i < a.flows; ++i)
            for (bool to_server : {true, false})
                std::fwrite(rte_pktmbuf_mtod(frames->frame(i, to_server), const void*), 1, PathFrames::kFrameLen, f);
        if (f == nullptr || std::fclose(f) != 0)
            fail("cannot write " + a.write_frames);
        std::printf("wrote %u flows' frames to %s\n", a.flows, a.write_frames.c_str());
        return 0;
    }
    rte_ring* rx_ring = nullptr;
    app::WorkerPlan plan{worker_lcore, 0, {}};
    uint16_t port = 0;
    if (a.mode == "ring") {
        port = make_ring_port(a.ring, rx_ring);
        plan.rx.push_back({port, 0, port, 0});
    }
    const app::TscClock clock;
    app::WorkerSettings ws;       // flowcop's defaults: monitor mode, the TSC clock, no policy
    ws.keep_flows_at_stop = true; // ring mode runs Worker::run() once per round on the same table
    auto worker =
        app::Worker::create(plan, app::WorkerPlace{}, *table, clock, app::TimestampField::lookup(), ws, error);
    if (!worker)
        fail(error);
    // The lane's compiled copy (packet/lane_isa.h): the worker chose one; --lane-isa names one instead.
    if (a.lane_isa != "auto" &&
        !table->set_lane_isa(a.lane_isa == "v3" ? packet::LaneIsa::v3 : packet::LaneIsa::baseline))
        fail("--lane-isa " + a.lane_isa + ": this CPU does not run that copy");
    std::printf("steady lane code: %s\n", packet::lane_isa_name(table->lane_isa()));

    // Warm-up: every flow's client->server segment, then its reply; then every flow must be steady.
    const app::RxQueueRef rx{port, 0, port, 0};
    const std::vector<rte_mbuf*> warm = frames->warm_up(bench::kSeed);
    run_handle(*worker, warm, 1, rx);
    if (table->counters().flows_created != a.flows)
        fail("the warm-up created " + std::to_string(table->counters().flows_created) + " flows, not " +
             std::to_string(a.flows));
    uint32_t steady = steady_flows(*table, *frames);
    if (steady != a.flows) { // a second exchange, in case a flow needs more than one reply to be steady
        run_handle(*worker, warm, 1, rx);
        steady = steady_flows(*table, *frames);
    }
    if (steady != a.flows)
        fail("after the warm-up only " + std::to_string(steady) + " of " + std::to_string(a.flows) +
             " flows are steady (FlowRecord::kSteady)");
    std::printf("built %u flows (%zu mbufs) and warmed them up in %.1f s: every flow in the table and steady\n",
                a.flows, size_t(2) * a.flows, double(bench::mono_ns() - b0) / 1e9);
    std::fflush(stdout);

    if (a.mode == "own")
        own(*worker, *table, *frames, a);
    else if (a.mode == "callgrind")
        callgrind(*worker, *table, *frames, a);
    else if (a.prefill)
        ring_prefilled(*worker, *table, *frames, a, port, rx_ring, worker_lcore);
    else
        ring(*worker, *table, *frames, a, port, rx_ring, worker_lcore);

    if (a.mode == "ring") {
        rte_eth_dev_stop(port);
        rte_eth_dev_close(port);
    }
    worker.reset();
    table->destroy_all(clock.now_ns(), conntrack::Reason::shutdown);
    return 0;
}
