// SPDX-License-Identifier: BSD-3-Clause
// Issue 18's export benchmark (tests/benchmarks.md, "IPFIX export"): does export keep up with the data
// path? One lcore's worth of ended flows (a created and a destroyed event per flow, as the flow table
// emits them) is emitted from this thread at a fixed rate for a few seconds, with the consumers the
// service would run: none, the IPFIX exporter (to a loopback UDP socket), the JSON writer (to a file
// in /tmp and to /dev/null), or both; and the exporter with interim records (--ipfix-active-timeout): each
// flow reported twice while it lasts, then ended (three records a flow, turned into deltas by the
// exporter's DeltaTracker). Printed per configuration and rate, medians of interleaved runs:
//   - flows/s offered and flows/s the consumer took (IPFIX records, JSON lines / 2), drops (ring full);
//   - ns per flow spent in emit() on the lcore side (the data path's cost of export), and its ratio to
//     the same run with no consumer.
// Consumer threads run unpinned (the OS places them), as the service's do on a machine whose CPUs all
// poll. Run: meson test -C build --benchmark --suite ipfix-bench -v
#include <ipfix/exporter.h>

#include <conntrack/flow_id.h>

#include <events/stream.h>
#include <events/writer.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"

using namespace flowcop;
using bench::median;
using bench::mono_ns;

namespace {

constexpr unsigned kRing = 65535;     // the service's default --events-ring (65536 rounded to 2^k - 1)
constexpr unsigned kBatch = 32;       // flows ended per burst, as a cop pass or a burst of RSTs ends them
constexpr unsigned kInterims = 2;     // interim reports per flow in the ipfix-interim configuration
constexpr uint32_t kSlots = 1u << 20; // flow ids: a table of flowcop's default capacity

events::Event make(uint64_t i, events::Kind kind)
{
    events::Event e{};
    e.kind = kind;
    e.time_ns = e.first_seen_ns = e.last_seen_ns = 1'700'000'000'000'000'000ull + i;
    e.packets[0] = 10, e.packets[1] = 8, e.bytes[0] = 1500, e.bytes[1] = 9000;
    const uint8_t src[16] = {0,         0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, uint8_t(i >> 16), uint8_t(i >> 8),
                             uint8_t(i)};
    const uint8_t dst[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
    std::memcpy(e.src, src, 16);
    std::memcpy(e.dst, dst, 16);
    e.sport = uint16_t(1024 + i % 60000), e.dport = 443, e.proto = 6;
    e.state_code = 7, e.reason_code = kind == events::Kind::destroyed ? 2 : 0;
    e.state = "TIME_WAIT";
    e.reason = kind == events::Kind::destroyed ? "closed" : nullptr;
    return e;
}

// Flow i's event as the table makes it with interim reports on: its id, the boundaries passed and
// totals that grow with each report.
events::Event make_reported(uint64_t i, events::Kind kind, uint16_t interims)
{
    events::Event e = make(i, kind);
    e.flow_id = conntrack::make_flow_id(uint32_t(i / kSlots + 1), uint32_t(i % kSlots));
    e.present |= events::kHasFlowId;
    e.interims = interims;
    const uint64_t k = interims + (kind == events::Kind::destroyed ? 1 : 0);
    e.packets[0] *= k, e.packets[1] *= k, e.bytes[0] *= k, e.bytes[1] *= k;
    return e;
}

// A UDP socket on loopback that nobody reads: the kernel drops what overflows its buffer, the sender
// pays the full send path (what a remote collector costs).
struct Sink {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    uint16_t port = 0;
    Sink()
    {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        bind(fd, reinterpret_cast<sockaddr*>(&a), len);
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
    }
    ~Sink() { close(fd); }
};

enum class Consumers { none, ipfix, ipfix_interim, json_file, json_null, both };
const char* name_of(Consumers c)
{
    switch (c) {
    case Consumers::none: return "none";
    case Consumers::ipfix: return "ipfix";
    case Consumers::ipfix_interim: return "ipfix-interim";
    case Consumers::json_file: return "json-file";
    case Consumers::json_null: return "json-devnull";
    case Consumers::both: return "ipfix+json-file";
    }
    return "?";
}

struct Result {
    double offered_fps = 0; // flows per second actually emitted
    double ipfix_fps = 0;   // flows per second exported (all of a flow's records)
    double json_fps = 0;    // flows per second written (lines / 2)
    double drop_pct = 0;    // of the flows, lost by any consumer (ring full)
    double emit_ns = 0;     // lcore-side ns per flow (all its emits: 2, or 2 + kInterims)
};

Result run(Consumers c, uint64_t rate_fps, double seconds, const std::string& json_path)
{
    std::string error;
    auto stream = events::Stream::create(1, error);
    REQUIRE(stream);
    Sink sink;
    std::unique_ptr<events::Writer> writer;
    std::unique_ptr<ipfix::Exporter> exporter;
    const bool interim = c == Consumers::ipfix_interim;
    if (c == Consumers::ipfix || interim || c == Consumers::both) {
        ipfix::ExporterConfig xc;
        xc.collectors = {{"127.0.0.1", sink.port}};
        xc.ring_events = kRing;
        xc.domain_id = {1};
        xc.max_tracked_flows = kSlots;
        exporter = ipfix::Exporter::open(xc, *stream, error);
        REQUIRE(exporter);
        exporter->start();
    }
    if (c == Consumers::json_file || c == Consumers::json_null || c == Consumers::both) {
        ::unlink(json_path.c_str());
        writer = events::Writer::open(c == Consumers::json_null ? "/dev/null" : json_path, *stream, kRing, error);
        REQUIRE(writer);
        writer->start();
    }
    events::Producer& p = stream->producer(0);
    const uint64_t t0 = mono_ns();
    const uint64_t end = t0 + uint64_t(seconds * 1e9);
    uint64_t flows = 0, in_emit = 0;
    for (uint64_t now = t0; now < end; now = mono_ns()) {
        const uint64_t due = uint64_t(double(now - t0) * double(rate_fps) / 1e9);
        if (flows + kBatch > due)
            continue; // ahead of schedule: spin (an lcore polls anyway)
        // Per flow: created, destroyed; with interim reports, created, kInterims interim reports and
        // destroyed. A real flow's reports are minutes apart: here each one follows the last at once.
        constexpr unsigned kPerFlow = 2 + kInterims;
        events::Event batch[kPerFlow * kBatch];
        unsigned k = 0;
        for (unsigned i = 0; i < kBatch; ++i) {
            batch[k++] = make(flows + i, events::Kind::created);
            if (interim) {
                for (uint16_t r = 1; r <= kInterims; ++r)
                    batch[k++] = make_reported(flows + i, events::Kind::interim, r);
                batch[k++] = make_reported(flows + i, events::Kind::destroyed, kInterims);
            } else {
                batch[k++] = make(flows + i, events::Kind::destroyed);
            }
        }
        const uint64_t a = mono_ns();
        for (unsigned e = 0; e < k; ++e)
            p.emit(batch[e]);
        in_emit += mono_ns() - a;
        flows += kBatch;
    }
    const double elapsed = double(mono_ns() - t0) / 1e9;
    Result r;
    r.offered_fps = double(flows) / elapsed;
    r.emit_ns = double(in_emit) / double(flows);
    uint64_t lost = 0;
    if (exporter) {
        exporter->stop_and_flush();
        const auto s = exporter->stats(0);
        const uint64_t per_flow = interim ? 1 + kInterims : 1;
        r.ipfix_fps = double(s.records) / double(per_flow) / elapsed;
        lost = std::max(lost, (s.dropped_full + s.dropped_untracked + per_flow - 1) / per_flow);
    }
    if (writer) {
        writer->stop_and_flush();
        const auto s = writer->stats(0);
        r.json_fps = double(s.written) / 2 / elapsed;
        lost = std::max(lost, (s.dropped_full + s.dropped_write + 1) / 2);
    }
    r.drop_pct = 100.0 * double(lost) / double(flows);
    ::unlink(json_path.c_str());
    return r;
}

} // namespace

TEST_CASE("IPFIX export and the JSON writer against the rate of ended flows", "[!benchmark][ipfix-export]")
{
    bench::provenance("IPFIX export: ended flows per second per lcore, drops and the lcore's emit cost");
    const std::string json_path = "/tmp/flowcop-bench-export-" + std::to_string(getpid()) + ".jsonl";
    constexpr double kSeconds = 2.0;
    constexpr int kRounds = 3;
    const uint64_t rates[] = {500'000, 1'000'000, 2'000'000, 4'000'000};
    const Consumers configs[] = {Consumers::none,      Consumers::ipfix,     Consumers::ipfix_interim,
                                 Consumers::json_file, Consumers::json_null, Consumers::both};
    std::printf("%-16s %9s %12s %12s %12s %8s %10s %8s\n", "consumers", "target", "offered/s", "ipfix/s", "json/s",
                "drop%", "emit ns", "x none");
    for (uint64_t rate : rates) {
        // Rounds interleave the configurations, so a noisy neighbour hits them alike.
        std::vector<std::vector<Result>> by(std::size(configs));
        for (int round = 0; round < kRounds; ++round)
            for (size_t c = 0; c < std::size(configs); ++c)
                by[c].push_back(run(configs[c], rate, kSeconds, json_path));
        auto med = [&](size_t c, double Result::*f) {
            std::vector<double> v;
            for (const Result& r : by[c])
                v.push_back(r.*f);
            return median(v);
        };
        const double base_emit = med(0, &Result::emit_ns);
        for (size_t c = 0; c < std::size(configs); ++c)
            std::printf("%-16s %8.1fM %12.0f %12.0f %12.0f %8.2f %10.1f %8.2f\n", name_of(configs[c]),
                        double(rate) / 1e6, med(c, &Result::offered_fps), med(c, &Result::ipfix_fps),
                        med(c, &Result::json_fps), med(c, &Result::drop_pct), med(c, &Result::emit_ns),
                        med(c, &Result::emit_ns) / base_emit);
        std::fflush(stdout);
    }
    SUCCEED();
}
