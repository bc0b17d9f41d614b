// SPDX-License-Identifier: BSD-3-Clause
// Writer and Producer on a healthy output: every event lands once, in order, and the books balance.
#include <events/events.h>

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "helpers.h"
#include "json_check.h"

using namespace flowcop::events;
using namespace flowcop::events::test;

namespace {

void require_balanced(Writer& w, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) {
        const WriterStats s = w.stats(i);
        INFO("producer " << i);
        CHECK(s.written + s.dropped_full + s.dropped_write == s.offered);
    }
}

} // namespace

// The core contract: N lcores x M events, each line exactly once and in each lcore's emit order.
TEST_CASE("Every event from every producer is written exactly once, in per-producer order", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    constexpr unsigned kN = 4, kM = 500;
    std::string error;
    auto stream = make_stream(kN);
    auto w = Writer::open(path, *stream, 1023, error);
    REQUIRE(w);
    CHECK(error.empty());
    w->start();
    unsigned rejected = 0;
    for (uint64_t seq = 0; seq < kM; ++seq)
        for (unsigned p = 0; p < kN; ++p)
            rejected += !stream->producer(p).emit(numbered_event(static_cast<uint16_t>(p), seq));
    CHECK(rejected == 0); // 1023 slots per lcore outlast 500 events even if the writer never ran
    w->stop_and_flush();

    std::map<long long, long long> next_seq;
    const auto lines = lines_of(read_all(path));
    CHECK(lines.size() == kN * kM);
    size_t unparsable = 0, misplaced = 0;
    for (const auto& line : lines) {
        unparsable += !JsonCheck::object_keys(line);
        const long long lcore = field(line, "lcore");
        misplaced += field(line, "packets_orig") != next_seq[lcore]; // in order, no gap, no duplicate
        ++next_seq[lcore];
    }
    CHECK(unparsable == 0);
    CHECK(misplaced == 0);
    for (unsigned p = 0; p < kN; ++p) {
        CHECK(next_seq[p] == kM);
        const WriterStats s = w->stats(p);
        CHECK(s.written == kM);
        CHECK(s.dropped_full == 0);
        CHECK(s.dropped_write == 0);
        CHECK(s.write_errors == 0);
        CHECK(w->stats(p).offered == kM);
    }
}

// The ring must hold exactly what open() was asked for (RING_F_EXACT_SZ), and a full ring must drop,
// not block: the lcore would otherwise stall on its own event log.
TEST_CASE("A full ring drops and counts instead of blocking, and keeps exactly ring_events", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 64, error);
    REQUIRE(w);
    unsigned accepted = 0;
    for (uint64_t seq = 0; seq < 100; ++seq)
        accepted += stream->producer(0).emit(numbered_event(0, seq));
    CHECK(accepted == 64);
    CHECK(w->stats(0).offered == 100);
    CHECK(w->stats(0).dropped_full == 36);
    w->start();
    w->stop_and_flush();
    const WriterStats s = w->stats(0);
    CHECK(s.written == 64);
    CHECK(s.dropped_full == 36);
    CHECK(s.written + s.dropped_full + s.dropped_write == 100);
    const auto lines = lines_of(read_all(path));
    REQUIRE(lines.size() == 64);
    CHECK(field(lines.front(), "packets_orig") == 0); // the first 64 were kept, in order
    CHECK(field(lines.back(), "packets_orig") == 63);
}

TEST_CASE("stop_and_flush is idempotent and a later call flushes what was emitted since", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    std::string error;
    auto stream = make_stream(2);
    auto w = Writer::open(path, *stream, 127, error);
    REQUIRE(w);
    w->start();
    for (uint64_t seq = 0; seq < 10; ++seq)
        stream->producer(1).emit(numbered_event(1, seq));
    w->stop_and_flush();
    w->stop_and_flush();
    CHECK(w->stats(1).written == 10);
    CHECK(lines_of(read_all(path)).size() == 10);
    stream->producer(1).emit(numbered_event(1, 10));
    w->stop_and_flush();
    CHECK(w->stats(1).written == 11);
    CHECK(lines_of(read_all(path)).size() == 11);
    require_balanced(*w, 2);
}

// The service may fail between open() and start(); destroying the Writer must still write what it has.
TEST_CASE("Events emitted without start() are written by stop_and_flush and by the destructor", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    std::string error;
    {
        auto stream = make_stream(1);
        auto w = Writer::open(path, *stream, 15, error);
        REQUIRE(w);
        for (uint64_t seq = 0; seq < 5; ++seq)
            stream->producer(0).emit(numbered_event(0, seq));
        w->stop_and_flush();
        CHECK(w->stats(0).written == 5);
        for (uint64_t seq = 5; seq < 8; ++seq)
            stream->producer(0).emit(numbered_event(0, seq));
    }
    CHECK(lines_of(read_all(path)).size() == 8);
}

TEST_CASE("The writer can be restarted after stop_and_flush", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 15, error);
    REQUIRE(w);
    w->start();
    stream->producer(0).emit(numbered_event(0, 0));
    w->stop_and_flush();
    w->start();
    w->start(); // no-op while running
    stream->producer(0).emit(numbered_event(0, 1));
    w->stop_and_flush();
    CHECK(w->stats(0).written == 2);
}

// The service's --events log may be an existing file (log rotation, restarts): never truncate it.
TEST_CASE("An existing events file is appended to, not truncated", "[events][writer]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        std::fputs("earlier line\n", f);
        std::fclose(f);
    }
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 15, error);
    REQUIRE(w);
    stream->producer(0).emit(numbered_event(0, 0));
    w->stop_and_flush();
    const auto lines = lines_of(read_all(path));
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "earlier line");
    CHECK(field(lines[1], "packets_orig") == 0);
}

// "-" is how the service streams events into jq or a log shipper.
TEST_CASE("Path \"-\" writes to stdout and leaves stdout open", "[events][writer]")
{
    std::string text;
    WriterStats s{};
    {
        CaptureFd out(STDOUT_FILENO);
        std::string error;
        auto stream = make_stream(1);
        auto w = Writer::open("-", *stream, 15, error);
        if (w) {
            w->start();
            for (uint64_t seq = 0; seq < 3; ++seq)
                stream->producer(0).emit(numbered_event(0, seq));
            w->stop_and_flush();
            s = w->stats(0);
        }
        w.reset();
        text = out.text();
    }
    CHECK(s.written == 3);
    const auto lines = lines_of(text);
    REQUIRE(lines.size() == 3);
    for (const auto& l : lines)
        CHECK(JsonCheck::object_keys(l));
    CHECK(fcntl(STDOUT_FILENO, F_GETFD) != -1); // the Writer did not close fd 1
}

TEST_CASE("stats are readable while the writer runs and never exceed produced", "[events][writer]")
{
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open("/dev/null", *stream, 255, error);
    REQUIRE(w);
    w->start();
    unsigned ahead = 0;
    for (uint64_t seq = 0; seq < 2000; ++seq) {
        stream->producer(0).emit(numbered_event(0, seq));
        const WriterStats s = w->stats(0);
        ahead += s.written + s.dropped_full + s.dropped_write > s.offered;
    }
    CHECK(ahead == 0);
    w->stop_and_flush();
    require_balanced(*w, 1);
}

// Issue 13: --events-ring 65536 allocated 131072 slots. A ring of 2^k - 1 events takes 2^k slots
// and nothing more (plus rte_ring's header, two cache lines and the producer/consumer heads).
TEST_CASE("A ring of 2^k - 1 events takes 2^k slots, 2^k events twice that", "[events][writer]")
{
    std::string error;
    auto stream = make_stream(1);
    auto exact = Writer::open("/dev/null", *stream, 65535, error);
    REQUIRE(exact);
    CHECK(exact->ring_bytes() >= 65536 * sizeof(Event));
    CHECK(exact->ring_bytes() <= 65536 * sizeof(Event) + 1024);
    auto stream2 = make_stream(1);
    auto doubled = Writer::open("/dev/null", *stream2, 65536, error);
    REQUIRE(doubled);
    CHECK(doubled->ring_bytes() >= 131072 * sizeof(Event));
}
