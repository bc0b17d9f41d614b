// SPDX-License-Identifier: BSD-3-Clause
// tcp_window_bench: what window tracking adds to the steady established packet, the state machine alone
// (the flow table's step before issue 16) against step plus the window check (tcpstate::track, what the
// table calls now: the steady ACK's fast path, track_steady) and against the full path alone
// (track_full, what track() ran for every packet before the fast path), on the same records and the
// same segments in one process.
//
//   tcp_window_bench MODE FLOWS PACKETS      MODE: step | track | full | both (interleaved, 5 runs each)
//
// FLOWS connections in 128-byte records laid out as lib/conntrack's FlowRecord (tracker in the first
// line, the 40-byte WindowState at byte 88, in the second), brought through a handshake; then PACKETS
// segments over flows in a random order, alternately 1448 bytes of client data and the server's ACK of
// it, each one as a real stack would number it: the steady in-window ACK class that makes up a busy
// link. Prints CPU ns per packet (one run, or the medians and their ratio for `both`). Under valgrind
// (tests/benchmarks.md) the difference of the two modes' instruction counts divided by PACKETS is what
// window tracking costs per packet. Not a test: outside the default run.
#include <tcpstate/window.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

using namespace flowcop::tcpstate;

namespace {

struct alignas(128) Record {
    uint8_t key_and_flags[43];
    Tracker tracker; // bytes 43..44, as FlowRecord::l4
    uint8_t rest[43];
    WindowState window; // bytes 88..127, as FlowRecord::window
};
static_assert(sizeof(Record) == 128 && offsetof(Record, tracker) == 43 && offsetof(Record, window) == 88);

struct Ends {
    uint32_t client, server; // next sequence each sends
};

constexpr uint8_t kSyn = RTE_TCP_SYN_FLAG, kAck = RTE_TCP_ACK_FLAG,
                  kPsh = RTE_TCP_PSH_FLAG; // rte_tcp.h, via tcp_state.h
constexpr uint32_t kMss = 1448;

Segment seg(uint32_t seq, uint32_t ack, uint8_t flags, uint32_t len)
{
    return Segment{Seq(seq), Seq(ack), Seq(ack), len, 65535, flags, 0};
}

struct Bench {
    std::vector<Record> recs;
    std::vector<Ends> ends;
    std::vector<uint32_t> order;
    Timeouts timeouts = Timeouts::netfilter_defaults();
    WindowPolicy policy{};
    SteadyRules rules = steady_rules(policy, timeouts); // prepared once, as the flow table does

    Bench(uint32_t flows, uint64_t seed) : recs(flows), ends(flows), order(flows)
    {
        std::mt19937_64 rng(seed);
        for (uint32_t i = 0; i < flows; ++i) {
            Record& r = recs[i];
            std::memset(static_cast<void*>(&r), 0, sizeof r);
            Ends& e = ends[i];
            e.client = uint32_t(rng());
            e.server = uint32_t(rng());
            r.tracker = Tracker{initial_state(kSyn, true), 0};
            FlowRef f{r.tracker, r.window.seq, r.window.meta};
            window_create(f, seg(e.client, 0, kSyn, 0), timeouts);
            e.client += 1;
            track(f, Dir::reply, seg(e.server, e.client, kSyn | kAck, 0), policy, timeouts);
            e.server += 1;
            track(f, Dir::orig, seg(e.client, e.server, kAck, 0), policy, timeouts);
            order[i] = i;
        }
        std::shuffle(order.begin(), order.end(), rng);
    }

    // One packet for flow i: its client's next data segment, or the server's ACK of it.
    static Segment next(Ends& e, bool data, Dir& dir)
    {
        if (data) {
            dir = Dir::orig;
            const Segment s = seg(e.client, e.server, kAck | kPsh, kMss);
            e.client += kMss;
            return s;
        }
        dir = Dir::reply;
        return seg(e.server, e.client, kAck, 0);
    }

    // The state machine alone: what FlowTable::track did per packet before issue 16.
    uint64_t run_step(uint64_t packets)
    {
        uint64_t ok = 0;
        const size_t n = order.size();
        for (uint64_t p = 0; p < packets; ++p) {
            const uint32_t i = order[(p >> 1) % n];
            Record& r = recs[i];
            Dir dir;
            Ends e = ends[i]; // numbered as in run_track, but not advanced: the window never saw these
            const Segment s = next(e, (p & 1) == 0, dir);
            Tracker t = r.tracker;
            const Outcome o = steady(t, s.flags) ? Outcome::ok : step(t, dir, s.flags);
            if (t.flags != r.tracker.flags || t.state != r.tracker.state)
                r.tracker = t;
            ok += o == Outcome::ok ? 1 : 0;
        }
        return ok;
    }

    // step plus the window check, as FlowTable::track does now (full: the full path for every packet).
    template <bool kFull>
    uint64_t run_track(uint64_t packets)
    {
        uint64_t ok = 0;
        const size_t n = order.size();
        for (uint64_t p = 0; p < packets; ++p) {
            const uint32_t i = order[(p >> 1) % n];
            Record& r = recs[i];
            Dir dir;
            const Segment s = next(ends[i], (p & 1) == 0, dir);
            Tracker t = r.tracker;
            const FlowRef f{t, r.window.seq, r.window.meta};
            const TrackResult res =
                kFull ? track_full(f, dir, s, policy, timeouts) : track(f, dir, s, policy, timeouts, rules);
            if (t.flags != r.tracker.flags || t.state != r.tracker.state)
                r.tracker = t;
            ok += res.outcome == Outcome::ok ? 1 : 0;
        }
        return ok;
    }
};

// This thread's CPU time: on a shared machine, wall time would count other jobs' slices too.
double thread_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

enum class Mode { step, track, full };

double ns_per_packet(Bench& b, Mode mode, uint64_t packets, uint64_t& ok)
{
    const double t0 = thread_ns();
    ok = mode == Mode::step    ? b.run_step(packets)
         : mode == Mode::track ? b.run_track<false>(packets)
                               : b.run_track<true>(packets);
    return (thread_ns() - t0) / double(packets);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s step|track|full|both FLOWS PACKETS\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const uint32_t flows = uint32_t(std::strtoul(argv[2], nullptr, 10));
    const uint64_t packets = std::strtoull(argv[3], nullptr, 10);
    if ((mode != "step" && mode != "track" && mode != "full" && mode != "both") || flows == 0 || packets == 0) {
        std::fprintf(stderr, "%s: bad arguments (MODE step|track|full|both, FLOWS > 0, PACKETS > 0)\n", argv[0]);
        return 2;
    }
    Bench b(flows, 16);
    uint64_t ok = 0;
    if (mode != "both") {
        const Mode m = mode == "step" ? Mode::step : mode == "track" ? Mode::track : Mode::full;
        const double ns = ns_per_packet(b, m, packets, ok);
        std::printf("%s flows=%u packets=%llu ns/packet=%.2f accepted=%llu\n", mode.c_str(), flows,
                    (unsigned long long)packets, ns, (unsigned long long)ok);
        return ok == packets ? 0 : 1;
    }
    std::vector<double> step_ns, track_ns, full_ns;
    ns_per_packet(b, Mode::track, packets, ok); // warm the records and the code
    for (int run = 0; run < 5; ++run) {
        for (const Mode m : {Mode::step, Mode::full, Mode::track}) {
            const double ns = ns_per_packet(b, m, packets, ok);
            if (ok != packets)
                return 1;
            (m == Mode::step ? step_ns : m == Mode::full ? full_ns : track_ns).push_back(ns);
        }
    }
    const double s = median(step_ns), f = median(full_ns), t = median(track_ns);
    std::printf("flows=%u packets=%llu per run, 5 interleaved runs, medians: step %.2f ns/packet, step+window "
                "(full path) %.2f, step+window (track: fast path) %.2f; track/step %.2f, track/full %.2f\n",
                flows, (unsigned long long)packets, s, f, t, t / s, t / f);
    return 0;
}
