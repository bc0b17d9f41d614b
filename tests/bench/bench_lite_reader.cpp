// SPDX-License-Identifier: BSD-3-Clause
// The steady lane's reader alone (issue 29; tests/benchmarks.md, "The reader"): the reader loop of
// Worker::handle_lite() (prefetch the burst's frames, then per frame packet::parse_tcp_lite() as
// parse_mbuf_lite() calls it, up to the first frame declined; the hash step aside) over one burst of 32 of deploy/bench/flows_pcap.py's
// 60-byte PSH|ACK frames (16 flows, both directions), --bursts times. The mbufs are plain structs (no EAL,
// no pool: the loop reads only their data pointer and lengths). Two readers in one run: tcp_lite.h's as
// this target builds it (the vector one on x86-64, DPDK's -march=corei7) and its portable one.
// Prints ns per frame of each (wall time, median of --rounds); the instructions per frame come from
// callgrind, collection on only around each reader's loop:
//   valgrind --tool=callgrind --collect-atstart=no build/tests/bench/bench_lite_reader --bursts 10000 --rounds 1
// writes callgrind.out.PID.1 (the built reader) and .2 (the portable one): the Ir of each / (32 x bursts).
// Exit status 1 if the readers do not take every frame alike (the input is not the lane's).
#include <rte_mbuf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <valgrind/callgrind.h>

#include <packet/tcp_lite.h>
#include <text/decimal.h>

#include "bench_util.h"
#include "frame_builder.h"

using namespace flowcop;

namespace {

constexpr uint16_t kBurst = 32;
using Reader = bool (*)(const uint8_t*, uint32_t, uint32_t, packet::TcpLite&) noexcept;

// Where the worker hands the burst on (track_lite): the segments escape, so no store is dropped.
[[gnu::noinline]] void consume(const packet::TcpLite* segs)
{
    asm volatile("" : : "r"(segs) : "memory");
}

// handle_lite()'s loop with the reader `kRead`, without its hash step (FlowTable::LiteProber): read up to
// the first frame declined.
template <Reader kRead>
[[gnu::noinline]] unsigned read_burst(rte_mbuf* const* mbufs, uint16_t n)
{
    packet::TcpLite segs[kBurst];
    for (uint16_t i = 0; i < n; ++i)
        rte_prefetch0(rte_pktmbuf_mtod(mbufs[i], const void*));
    uint16_t read = 0;
    for (; read < n; ++read) {
        const rte_mbuf* m = mbufs[read];
        if (!kRead(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m), segs[read]))
            break;
    }
    consume(segs);
    return read;
}

template <Reader kRead>
unsigned run(rte_mbuf* const* mbufs, uint16_t n, unsigned bursts)
{
    unsigned taken = 0;
    for (unsigned b = 0; b < bursts; ++b)
        taken += read_burst<kRead>(mbufs, n);
    return taken;
}

const char kUsage[] = "usage: bench_lite_reader [--bursts N (1..10^9)] [--rounds R (1..1000)]\n";

[[noreturn]] void usage(const std::string& why)
{
    std::fprintf(stderr, "bench_lite_reader: %s\n%s", why.c_str(), kUsage);
    std::exit(2);
}

} // namespace

int main(int argc, char** argv)
{
    unsigned bursts = 1000000, rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string o = argv[i];
        uint64_t v = 0;
        if (o == "--help" || o == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (o == "--bursts" && i + 1 < argc && flowcop::text::parse_decimal_in(argv[i + 1], 1, 1000000000, v)) {
            bursts = unsigned(v);
            ++i;
        } else if (o == "--rounds" && i + 1 < argc && flowcop::text::parse_decimal_in(argv[i + 1], 1, 1000, v)) {
            rounds = unsigned(v);
            ++i;
        } else {
            usage("bad argument '" + o + "'");
        }
    }
    // flows_pcap.frame()'s frames: client 10.0.x.y:port to server 10.1.0.1:80 and the reply.
    std::vector<std::vector<uint8_t>> frames;
    for (uint8_t f = 0; f < kBurst / 2; ++f)
        for (const bool to_server : {true, false}) {
            const test::Ipv4Addr client{10, 0, 0, uint8_t(1 + f)}, server{10, 1, 0, 1};
            const uint16_t cport = uint16_t(40000 + f), sport = 80;
            frames.push_back(test::FrameBuilder()
                                 .ipv4({.src = to_server ? client : server, .dst = to_server ? server : client})
                                 .tcp({.sport = to_server ? cport : sport,
                                       .dport = to_server ? sport : cport,
                                       .seq = 1000u * f,
                                       .ack = 2000u * f,
                                       .flags = 0x18})
                                 .payload(6)
                                 .build());
        }
    std::vector<rte_mbuf> mbufs(kBurst);
    std::vector<rte_mbuf*> ptrs;
    for (uint16_t i = 0; i < kBurst; ++i) {
        rte_mbuf& m = mbufs[i];
        std::memset(&m, 0, sizeof m);
        m.buf_addr = frames[i].data();
        m.data_len = uint16_t(frames[i].size());
        m.pkt_len = uint32_t(frames[i].size());
        m.nb_segs = 1;
        ptrs.push_back(&m);
    }
    const auto n = uint16_t(ptrs.size());
    if (run<packet::parse_tcp_lite>(ptrs.data(), n, 1) != n ||
        run<packet::detail::parse_tcp_lite_portable>(ptrs.data(), n, 1) != n) {
        std::fprintf(stderr, "bench_lite_reader: a frame was not taken\n");
        return 1;
    }
    bench::provenance("the steady lane's reader: handle_lite's loop over a burst of 32 built frames");
    std::vector<double> built, portable;
    unsigned taken = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        // Callgrind: the first round's two loops only (dumps .1 and .2); no-ops natively.
        if (r == 0) {
            CALLGRIND_ZERO_STATS;
            CALLGRIND_TOGGLE_COLLECT;
        }
        built.push_back(bench::time_ns([&] { taken += run<packet::parse_tcp_lite>(ptrs.data(), n, bursts); }));
        if (r == 0) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT("parse_tcp_lite (as built)");
            CALLGRIND_ZERO_STATS;
            CALLGRIND_TOGGLE_COLLECT;
        }
        portable.push_back(
            bench::time_ns([&] { taken += run<packet::detail::parse_tcp_lite_portable>(ptrs.data(), n, bursts); }));
        if (r == 0) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT("parse_tcp_lite_portable");
        }
    }
    const double frames_run = double(bursts) * n;
    std::printf("reader as built (%s): %.2f ns/frame; portable: %.2f ns/frame (median of %u rounds of %u bursts)\n",
#if defined(__SSE4_2__)
                "SSE4.2",
#else
                "portable",
#endif
                bench::median(built) / frames_run, bench::median(portable) / frames_run, rounds, bursts);
    return taken == 2u * rounds * bursts * n ? 0 : 1;
}
