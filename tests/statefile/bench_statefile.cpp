// SPDX-License-Identifier: BSD-3-Clause
// The state file's benchmark (issue 32, tests/benchmarks.md "State file"): N flows (default 10^6) saved
// from a full table and restored into a new one, through the same calls the service makes
// (app/service/state.cpp: FlowTable::export_slice in 256-record slices into statefile::Writer, fsync
// and rename; statefile::Reader, then FlowTable::restore_flow and finish_restore). Heap memory, no EAL.
// Usage: bench_statefile DIR [FLOWS]. Prints one line per phase and leaves DIR/flows.state, whose
// times are now's wall clock, for a restore by the real binary (the command in tests/benchmarks.md).
#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>
#include <statefile/statefile.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

using namespace flowcop;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

uint64_t wall_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

std::unique_ptr<conntrack::FlowTable> table(uint32_t capacity)
{
    conntrack::TableConfig c;
    c.name = "bench_statefile";
    c.capacity = capacity;
    c.wheel.buckets = 4096;
    c.wheel.tick_ns = 1'000'000'000;
    std::string error;
    auto t = conntrack::FlowTable::create(c, error);
    if (!t) {
        std::fprintf(stderr, "bench_statefile: %s\n", error.c_str());
        std::exit(1);
    }
    return t;
}

// An established TCP flow with a window, distinct per i (IPv4 10.x.y.z:port -> 192.0.2.1:443).
conntrack::FlowImage flow(uint32_t i, uint64_t now)
{
    conntrack::FlowImage im;
    const uint8_t lo[16] = {0,         0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, uint8_t(i >> 16), uint8_t(i >> 8),
                            uint8_t(i)};
    const uint8_t hi[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
    std::memcpy(im.addr_lo, lo, 16);
    std::memcpy(im.addr_hi, hi, 16);
    im.port_lo = uint16_t(1024 + i % 60000);
    im.port_hi = 443;
    im.proto = 6;
    im.orig_is_lo = true;
    im.state = 3; // ESTABLISHED
    im.state_bits = 0x0c;
    for (int d = 0; d < 2; ++d) {
        im.dir[d].packets = 10 + i % 7;
        im.dir[d].bytes = 1500 * (10 + i % 7);
        im.dir[d].end = 1000 + i;
        im.dir[d].maxend = 70000 + i;
        im.dir[d].maxwin = 64240;
        im.dir[d].maxack = 1000 + i;
        im.dir[d].scale = 7;
        im.dir[d].maxack_set = true;
    }
    im.flow_id = conntrack::make_flow_id(1, i);
    im.first_seen_ns = now - 60'000'000'000ull;
    im.last_seen_ns = now - 1'000'000'000ull;
    return im;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_statefile DIR [FLOWS]\n");
        return 2;
    }
    const std::string path = std::string(argv[1]) + "/flows.state";
    const uint32_t n = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 1'000'000;
    const uint32_t capacity = n + n / 16 + 64;
    const uint64_t now = wall_ns();

    auto src = table(capacity);
    auto t0 = Clock::now();
    for (uint32_t i = 0; i < n; ++i)
        if (src->restore_flow(flow(i, now), {}, now, 0) != conntrack::RestoreOutcome::restored)
            return std::fprintf(stderr, "bench_statefile: flow %u not placed\n", i), 1;
    src->finish_restore();
    std::printf("fill: %u flows in %.0f ms\n", n, ms_since(t0));

    t0 = Clock::now();
    std::string error;
    auto w = statefile::Writer::create(path, error);
    if (!w)
        return std::fprintf(stderr, "bench_statefile: %s\n", error.c_str()), 1;
    conntrack::FlowImage slice[256];
    for (uint32_t start = 0; start != conntrack::kNoPosition;) {
        size_t got = 0;
        start = src->export_slice(start, 256, {}, slice, got);
        w->append(slice, got);
    }
    const double write_ms = ms_since(t0);
    statefile::Header h;
    h.written_ns = wall_ns();
    h.base_now_ns = h.written_ns;
    h.build = "bench_statefile";
    if (!w->commit(h, error))
        return std::fprintf(stderr, "bench_statefile: %s\n", error.c_str()), 1;
    const double save_ms = ms_since(t0);
    std::printf("save: %llu flows, %llu bytes (%.1f bytes per flow) in %.0f ms: export and write(2) %.0f ms, "
                "then header, fsync, rename and directory fsync %.0f ms\n",
                (unsigned long long)w->flows(), (unsigned long long)w->bytes(), double(w->bytes()) / n, save_ms,
                write_ms, save_ms - write_ms);
    src.reset();

    auto dst = table(capacity);
    t0 = Clock::now();
    statefile::Reader r(path);
    if (r.status() != statefile::Status::ok)
        return std::fprintf(stderr, "bench_statefile: %s\n", r.why().c_str()), 1;
    const double check_ms = ms_since(t0);
    conntrack::FlowImage im;
    uint64_t restored = 0;
    for (uint64_t i = 0; i < r.header().flows; ++i) {
        r.entry(i, im);
        restored += dst->restore_flow(im, {}, now, 0) == conntrack::RestoreOutcome::restored;
    }
    dst->finish_restore();
    const double restore_ms = ms_since(t0);
    std::printf("restore: %llu of %llu flows in %.0f ms (map and checksum %.0f ms)\n", (unsigned long long)restored,
                (unsigned long long)r.header().flows, restore_ms, check_ms);
    return restored == n ? 0 : 1;
}
