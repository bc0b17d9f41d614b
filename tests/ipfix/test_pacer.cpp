// SPDX-License-Identifier: BSD-3-Clause
// Pacer (lib/ipfix/pacer.h): the IPFIX exporter's token bucket over messages. Issue 28: a stop's burst of
// records overran nfcapd's socket buffer; the pacer keeps bursts within kBurstMessages and the rate at N/s.
#include <ipfix/pacer.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

using flowcop::ipfix::Pacer;

namespace {
constexpr uint64_t kSec = 1'000'000'000ull;
constexpr uint64_t kT0 = 5 * kSec; // any monotonic start
} // namespace

TEST_CASE("An unpaced pacer grants everything at once and never waits", "[ipfix][pacer]")
{
    Pacer p(0);
    CHECK_FALSE(p.paced());
    CHECK(p.grant(kT0, 100000) == 100000);
    CHECK(p.wait_ns(kT0) == 0);
}

TEST_CASE("A burst is at most kBurstMessages, then messages go at the rate", "[ipfix][pacer]")
{
    Pacer p(1000); // 1 ms a message
    CHECK(p.grant(kT0, 1000) == Pacer::kBurstMessages);
    CHECK(p.grant(kT0, 1000) == 0);
    CHECK(p.wait_ns(kT0) == 1'000'000);
    CHECK(p.grant(kT0 + 999'999, 1000) == 0);
    CHECK(p.grant(kT0 + 1'000'000, 1000) == 1);
    CHECK(p.grant(kT0 + 11'000'000, 1000) == 10);
}

// The stop of issue 28: 10^4 records in ~600 messages must take about messages / rate, never less, and a
// sender that follows wait_ns() never spins nor oversleeps.
TEST_CASE("Sending a backlog through the pacer takes messages / rate, in bursts no larger than allowed",
          "[ipfix][pacer]")
{
    const uint32_t rate = 10000, total = 600;
    Pacer p(rate);
    uint64_t now = kT0;
    uint32_t sent = 0, waits = 0, largest = 0;
    while (sent < total) {
        const uint32_t go = p.grant(now, total - sent);
        if (go == 0) {
            const uint64_t w = p.wait_ns(now);
            REQUIRE(w > 0);
            now += w;
            ++waits;
            continue;
        }
        largest = std::max(largest, go);
        sent += go;
    }
    CHECK(largest == Pacer::kBurstMessages);
    const uint64_t took = now - kT0;
    const uint64_t ideal = uint64_t(total - Pacer::kBurstMessages) * kSec / rate;
    CHECK(took == ideal);
    CHECK(waits == total - Pacer::kBurstMessages); // one wait per message after the first burst
}

TEST_CASE("An idle pacer refills to one burst, not more", "[ipfix][pacer]")
{
    Pacer p(100);
    CHECK(p.grant(kT0, 5) == 5);
    CHECK(p.grant(kT0 + 3600 * kSec, 1000) == Pacer::kBurstMessages);
    CHECK(p.grant(kT0 + 3600 * kSec, 1000) == 0);
}

TEST_CASE("The largest rate, 10^6 a second, still paces: 1 us a message", "[ipfix][pacer]")
{
    Pacer p(1'000'000);
    CHECK(p.paced());
    CHECK(p.grant(kT0, 100) == Pacer::kBurstMessages);
    CHECK(p.grant(kT0 + 1000, 100) == 1);
}
