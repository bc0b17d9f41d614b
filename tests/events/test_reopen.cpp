// SPDX-License-Identifier: BSD-3-Clause
// Writer::request_reopen(): logrotate's rename-then-signal, under a running writer and live producers.
#include <events/events.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"

using namespace flowcop::events;
using namespace flowcop::events::test;

namespace {

bool wait_reopens(const Writer& w, uint64_t n)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (w.reopens() < n && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return w.reopens() >= n;
}

} // namespace

// Issue 13: SIGHUP ended flowcop. A rotation while lcores emit must lose no line and repeat none:
// the lines of both files together are every emit, once, in order.
TEST_CASE("A reopen under load splits the lines between the old and the new file, none lost or doubled",
          "[events][writer][reopen]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    const std::string rotated_path = dir.file("events.jsonl.1");
    constexpr unsigned kN = 2;
    constexpr uint64_t kM = 20000;
    std::string error;
    auto stream = make_stream(kN);
    auto w = Writer::open(path, *stream, 4095, error);
    REQUIRE(w);
    w->start();
    std::atomic<bool> go{false};
    // The producers stop halfway until the file has been renamed and the reopen requested, so the
    // rotation falls inside the stream however the threads are scheduled (a loaded machine once let them
    // finish before the rename). The second half, 10000 events per producer, is more than one writer turn
    // drains (a ring's capacity, 4095), so some of it is drained after the reopen: both files get lines.
    std::atomic<unsigned> at_half{0};
    std::atomic<bool> rotated{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::vector<std::thread> lcores;
    std::vector<uint64_t> accepted(kN, 0);
    for (unsigned p = 0; p < kN; ++p)
        lcores.emplace_back([&, p] {
            while (!go.load())
                std::this_thread::yield();
            for (uint64_t seq = 0; seq < kM; ++seq) {
                if (seq == kM / 2) {
                    at_half.fetch_add(1);
                    while (!rotated.load() && std::chrono::steady_clock::now() < deadline)
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                while (!stream->producer(p).emit(numbered_event(static_cast<uint16_t>(p), seq)))
                    std::this_thread::yield(); // a full ring: retry, so every seq is written once
                if (seq % 100 == 99)           // ~0.2 s of emitting: the rotation lands in the middle
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            accepted[p] = kM;
        });
    go.store(true);
    // Rotate halfway: once both producers wait there and the file holds lines, rename, ask for the
    // reopen and let them go on.
    while ((at_half.load() < kN || read_all(path).empty()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool renamed = std::rename(path.c_str(), rotated_path.c_str()) == 0;
    w->request_reopen();
    rotated.store(true);
    REQUIRE(renamed);
    REQUIRE(wait_reopens(*w, 1));
    for (auto& t : lcores)
        t.join();
    w->stop_and_flush();

    const auto old_lines = lines_of(read_all(rotated_path));
    const auto new_lines = lines_of(read_all(path));
    CHECK(!old_lines.empty());
    CHECK(!new_lines.empty()); // the producers were still running when the reopen happened
    std::map<long long, long long> next;
    size_t misplaced = 0;
    for (const auto* lines : {&old_lines, &new_lines})
        for (const auto& line : *lines) {
            const long long lcore = field(line, "lcore");
            misplaced += field(line, "packets_orig") != next[lcore];
            ++next[lcore];
        }
    CHECK(misplaced == 0);
    for (unsigned p = 0; p < kN; ++p)
        CHECK(next[p] == static_cast<long long>(kM));
    CHECK(old_lines.size() + new_lines.size() == kN * kM);
}

// A rotation into a directory that is gone must not stop the log: the writer keeps the old file.
TEST_CASE("A reopen that cannot open the path keeps writing to the old file", "[events][writer][reopen]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open(path, *stream, 1023, error);
    REQUIRE(w);
    w->start();
    REQUIRE(stream->producer(0).emit(numbered_event(0, 0)));
    // Make the path unopenable: replace the file by a directory of the same name.
    const std::string moved = dir.file("moved.jsonl");
    REQUIRE(std::rename(path.c_str(), moved.c_str()) == 0);
    std::filesystem::create_directory(path);
    CaptureFd err(STDERR_FILENO);
    w->request_reopen();
    REQUIRE(wait_reopens(*w, 1));
    REQUIRE(stream->producer(0).emit(numbered_event(0, 1)));
    w->stop_and_flush();
    CHECK(lines_of(read_all(moved)).size() == 2);
    CHECK(w->stats(0).written == 2);
    CHECK(err.text().find("still writing to the file opened before") != std::string::npos);
}

// stdout ("-") is not reopened, and the request is still acknowledged.
TEST_CASE("A reopen of stdout is acknowledged and changes nothing", "[events][writer][reopen]")
{
    std::string error;
    auto stream = make_stream(1);
    auto w = Writer::open("-", *stream, 15, error);
    REQUIRE(w);
    w->start();
    w->request_reopen();
    CHECK(wait_reopens(*w, 1));
    w->stop_and_flush();
}
