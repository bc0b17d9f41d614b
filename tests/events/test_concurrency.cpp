// SPDX-License-Identifier: BSD-3-Clause
// Producers on their own threads emitting while the writer drains: the per-lcore books must balance.
#include <events/events.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"

using namespace flowcop::events;
using namespace flowcop::events::test;

// Producers are paced (a short sleep every 64 events, a yield after each drop) so that, over ~100 ms,
// enqueue and dequeue interleave on every ring, through both the accept and the ring-full paths,
// instead of each lcore filling its ring before the writer's first poll. Run under TSan as well.
TEST_CASE("Concurrent producers and writer: written + dropped == produced, order kept", "[events][concurrency]")
{
    TempDir dir;
    const std::string path = dir.file("events.jsonl");
    constexpr unsigned kN = 3;
    constexpr uint64_t kM = 30000;
    std::string error;
    auto stream = make_stream(kN);
    auto w = Writer::open(path, *stream, 255, error);
    REQUIRE(w);
    w->start();
    std::vector<std::thread> lcores;
    std::vector<uint64_t> accepted(kN, 0);
    for (unsigned p = 0; p < kN; ++p)
        lcores.emplace_back([&, p] {
            Producer& prod = stream->producer(p);
            for (uint64_t seq = 0; seq < kM; ++seq) {
                if (prod.emit(numbered_event(static_cast<uint16_t>(p), seq)))
                    ++accepted[p];
                else
                    std::this_thread::yield();
                if (seq % 64 == 63)
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    for (auto& t : lcores)
        t.join();
    w->stop_and_flush();

    uint64_t total_written = 0;
    for (unsigned p = 0; p < kN; ++p)
        total_written += w->stats(p).written;
    CHECK(total_written > kN * 255); // the writer drained while the lcores ran, not only at the end

    std::map<long long, long long> last, seen;
    size_t out_of_order = 0;
    for (const auto& line : lines_of(read_all(path))) {
        const long long lcore = field(line, "lcore");
        const long long seq = field(line, "packets_orig");
        if (seen[lcore]++ > 0 && seq <= last[lcore])
            ++out_of_order; // drops leave gaps, never reorderings
        last[lcore] = seq;
    }
    CHECK(out_of_order == 0);
    for (unsigned p = 0; p < kN; ++p) {
        const WriterStats s = w->stats(p);
        INFO("producer " << p << " written " << s.written << " dropped_full " << s.dropped_full);
        CHECK(w->stats(p).offered == kM);
        CHECK(s.written == accepted[p]);
        CHECK(s.written + s.dropped_full + s.dropped_write == kM);
        CHECK(s.dropped_write == 0);
        CHECK(static_cast<uint64_t>(seen[p]) == s.written);
    }
}
