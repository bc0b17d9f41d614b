// SPDX-License-Identifier: BSD-3-Clause
// Writer under bad outputs: clear errors at open, counted losses while running, never a crash or hang.
#include <events/events.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "helpers.h"
#include "json_check.h"

using namespace flowcop::events;
using namespace flowcop::events::test;

namespace {

size_t count(const std::string& text, const std::string& what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

void check_open_fails(const std::string& path, int expected_errno)
{
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 15, error);
    CHECK(w == nullptr);
    INFO(error);
    CHECK(error.find("'" + path + "'") != std::string::npos);
    CHECK(error.find(std::strerror(expected_errno)) != std::string::npos);
    CHECK(error.find('\n') == std::string::npos); // one sentence the service prints as-is before exit(2)
}

// Reads whatever is in a non-blocking pipe right now.
std::string drain_pipe(int fd)
{
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<size_t>(n));
    return out;
}

} // namespace

// The service turns a failed open() into exit code 2 with this message, so it must name path and cause.
TEST_CASE("An unwritable events path fails at open with the path and strerror", "[events][faults]")
{
    TempDir dir;
    check_open_fails(dir.path(), EISDIR);
    check_open_fails(dir.file("no/such/dir/events.jsonl"), ENOENT);
    check_open_fails("/proc/forbidden", ENOENT);
}

// A daemon started with fd 1 closed must not later write events into whatever file reuses fd 1.
TEST_CASE("Path \"-\" with stdout closed fails at open with a clear error", "[events][faults]")
{
    std::fflush(nullptr);
    const int saved = dup(STDOUT_FILENO);
    close(STDOUT_FILENO);
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open("-", *stream, 15, error);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CHECK(w == nullptr);
    CHECK(error.find("'-'") != std::string::npos);
    CHECK(error.find(std::strerror(EBADF)) != std::string::npos);
}

TEST_CASE("Zero or absurd producer and ring sizes fail at setup with a clear error", "[events][faults]")
{
    std::string error;
    CHECK(Stream::create(0, error) == nullptr);
    CHECK(error.find("producer count 0") != std::string::npos);
    CHECK(Stream::create(70000, error) == nullptr);
    CHECK(error.find("producer count 70000") != std::string::npos);
    auto stream = make_stream(1);
    CHECK(Writer::open("/dev/null", *stream, 0, error) == nullptr);
    CHECK(error.find("ring size 0") != std::string::npos);
    CHECK(error.find("'/dev/null'") != std::string::npos);
    CHECK(Writer::open("/dev/null", *stream, (1u << 24) + 1, error) == nullptr);
    CHECK(error.find("ring size 16777217") != std::string::npos);
}

// Disk full while running: every event is counted as lost to the write, one stderr line in total, and
// the writer keeps draining (the second round is dequeued and counted too, not stuck in the ring).
TEST_CASE("On a full disk every event counts as dropped_write and stderr gets one line", "[events][faults]")
{
    CaptureFd err(STDERR_FILENO);
    std::string error;
    auto stream = make_stream(2);
    auto w = Writer::open("/dev/full", *stream, 127, error);
    REQUIRE(w);
    w->start();
    unsigned accepted = 0;
    for (uint64_t seq = 0; seq < 100; ++seq)
        accepted += stream->producer(0).emit(numbered_event(0, seq));
    w->stop_and_flush();
    w->start();
    for (uint64_t seq = 100; seq < 150; ++seq)
        accepted += stream->producer(0).emit(numbered_event(0, seq));
    w->stop_and_flush();
    const std::string text = err.text();
    const WriterStats s = w->stats(0);
    CHECK(accepted == 150); // a failing disk never backs up into the lcore's ring
    CHECK(s.written == 0);
    CHECK(s.dropped_full == 0);
    CHECK(s.dropped_write == 150);
    CHECK(s.write_errors >= 2);           // each stop_and_flush wrote (and failed) at least once
    CHECK(w->stats(1).write_errors == 0); // producer 1 lost nothing: it had nothing in those writes
    CHECK(count(text, "\n") == 1);
    CHECK(text.find("'/dev/full'") != std::string::npos);
    CHECK(text.find(std::strerror(ENOSPC)) != std::string::npos);
}

// A reader that goes away (`flowcop --events - | head`) must not kill the service with SIGPIPE.
TEST_CASE("A closed pipe yields counted EPIPE losses, not SIGPIPE", "[events][faults]")
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const std::string path = "/proc/self/fd/" + std::to_string(fds[1]);
    CaptureFd err(STDERR_FILENO);
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 63, error);
    REQUIRE(w);
    close(fds[1]);
    close(fds[0]); // no reader left
    w->start();
    for (uint64_t seq = 0; seq < 20; ++seq)
        stream->producer(0).emit(numbered_event(0, seq));
    w->stop_and_flush();
    const std::string text = err.text();
    const WriterStats s = w->stats(0);
    CHECK(s.written == 0);
    CHECK(s.dropped_write == 20);
    CHECK(s.write_errors >= 1);
    CHECK(text.find(std::strerror(EPIPE)) != std::string::npos);
    CHECK(count(text, "\n") == 1);
    struct sigaction sa {};
    sigaction(SIGPIPE, nullptr, &sa);
    CHECK(sa.sa_handler == SIG_DFL); // we blocked it in our thread, not ignored it for the process
}

// A reader that stops reading must not hang shutdown; what did get through must still be whole lines,
// and a line cut in half by the give-up must not glue itself to the next line written later.
TEST_CASE("A stalled pipe reader delays shutdown by about shutdown_stall_ms, then losses are counted",
          "[events][faults]")
{
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK) == 0); // our read end only: the writer opens its own description
    const std::string path = "/proc/self/fd/" + std::to_string(fds[1]);
    CaptureFd err(STDERR_FILENO);
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 1023, error);
    REQUIRE(w);
    close(fds[1]);
    unsigned accepted = 0;
    for (uint64_t seq = 0; seq < 1000; ++seq)
        accepted += stream->producer(0).emit(numbered_event(0, seq));
    REQUIRE(accepted == 1000); // ~250 KB queued for a 64 KB pipe
    const auto t0 = std::chrono::steady_clock::now();
    w->stop_and_flush();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    CHECK(ms >= Writer::kShutdownStallMs * 9 / 10);
    CHECK(ms < Writer::kShutdownStallMs * 5);
    WriterStats s = w->stats(0);
    CHECK(s.written > 0);
    CHECK(s.dropped_write > 0);
    CHECK(s.written + s.dropped_write == 1000);

    std::string got = drain_pipe(fds[0]);
    const size_t whole = count(got, "\n");
    CHECK(whole == s.written);

    // The reader is back: the next write must start on a fresh line.
    stream->producer(0).emit(numbered_event(0, 1000));
    w->stop_and_flush();
    got += drain_pipe(fds[0]);
    close(fds[0]);
    const std::string text = err.text();
    s = w->stats(0);
    CHECK(s.written + s.dropped_write == 1001);
    size_t valid = 0, invalid = 0;
    for (const auto& l : lines_of(got))
        (JsonCheck::object_keys(l) ? valid : invalid)++;
    CHECK(valid == s.written);
    CHECK(invalid <= 1); // at most the one fragment cut at the give-up, alone on its line
    CHECK(field(lines_of(got).back(), "packets_orig") == 1000);
    CHECK(count(text, "accepted nothing") == 1);
}

// A line that can never fit the batch (absurd state string) is lost and counted, and does not wedge
// the writer or count as an I/O error.
TEST_CASE("An event too large for the batch counts as dropped_write without a write error", "[events][faults]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    static const std::string huge(Writer::kBatchBytes + 1, 'x');
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 15, error);
    REQUIRE(w);
    Event big = numbered_event(0, 0);
    big.state = huge.c_str();
    stream->producer(0).emit(numbered_event(0, 1));
    stream->producer(0).emit(big);
    stream->producer(0).emit(numbered_event(0, 2));
    w->stop_and_flush();
    const WriterStats s = w->stats(0);
    CHECK(s.written == 2);
    CHECK(s.dropped_write == 1);
    CHECK(s.write_errors == 0);
    const auto lines = lines_of(read_all(path));
    REQUIRE(lines.size() == 2);
    CHECK(field(lines[0], "packets_orig") == 1);
    CHECK(field(lines[1], "packets_orig") == 2);
}
