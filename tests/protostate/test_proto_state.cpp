// SPDX-License-Identifier: BSD-3-Clause
// protostate (proto_state.h): netfilter's UDP, ICMP and generic rules, timeouts and names.
#include <catch2/catch.hpp>

#include <protostate/proto_state.h>

#include <string>

using namespace flowcop::protostate;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

} // namespace

TEST_CASE("the IP protocol picks the family: UDP, ICMP of either version, everything else generic", "[protostate]")
{
    CHECK(family_of(17) == Family::udp);
    CHECK(family_of(1) == Family::icmp);
    CHECK(family_of(58) == Family::icmp);
    for (unsigned p : {0u, 2u, 4u, 41u, 47u, 50u, 51u, 89u, 132u, 136u, 255u})
        CHECK(family_of(uint8_t(p)) == Family::generic);
    CHECK(std::string(family_name(Family::udp)) == "udp");
    CHECK(std::string(family_name(Family::icmp)) == "icmp");
    CHECK(std::string(family_name(Family::generic)) == "generic");
    CHECK(std::string(family_name(Family::count)) == "unknown");
}

TEST_CASE("UDP: unreplied, replied, and assured with the stream timeout once replied and older than 2 s",
          "[protostate][udp]")
{
    Tracker t = initial(Family::udp);
    CHECK(t.family() == Family::udp);
    CHECK(timeout_of(t) == Timeout::udp_unreplied);
    CHECK(std::string(state_name(t)) == "UNREPLIED");
    // More from the originator, however old: a one-way stream is never assured.
    CHECK_FALSE(step(t, Dir::orig, 1));
    CHECK_FALSE(step(t, Dir::orig, 3600 * kSecond));
    CHECK_FALSE(t.seen_reply());
    CHECK_FALSE(t.assured());
    // The first reply: seen, still under the unreplied timeout (netfilter sets SEEN_REPLY after the
    // protocol handler ran), even when it comes late.
    CHECK(step(t, Dir::reply, 10 * kSecond));
    CHECK(t.seen_reply());
    CHECK_FALSE(t.assured());
    CHECK(timeout_of(t) == Timeout::udp_unreplied);
    CHECK(std::string(state_name(t)) == "REPLIED");
    // The next packet, past 2 s: a stream.
    CHECK(step(t, Dir::orig, 10 * kSecond + 1));
    CHECK(t.assured());
    CHECK(timeout_of(t) == Timeout::udp_stream);
    CHECK_FALSE(step(t, Dir::reply, 11 * kSecond));
    CHECK_FALSE(step(t, Dir::orig, 12 * kSecond));
    CHECK(t.assured());
}

TEST_CASE("UDP: a quick query and answer is not assured; the 2 s boundary is strict", "[protostate][udp]")
{
    Tracker t = initial(Family::udp);
    CHECK(step(t, Dir::reply, 20'000'000));           // a DNS answer 20 ms later
    CHECK_FALSE(step(t, Dir::orig, kUdpStreamAgeNs)); // exactly 2 s: not yet (netfilter's time_after)
    CHECK_FALSE(t.assured());
    CHECK(step(t, Dir::orig, kUdpStreamAgeNs + 1));
    CHECK(t.assured());
}

TEST_CASE("ICMP and generic flows record a reply and are never assured", "[protostate][icmp][generic]")
{
    for (Family f : {Family::icmp, Family::generic}) {
        CAPTURE(family_name(f));
        Tracker t = initial(f);
        const Timeout want = f == Family::icmp ? Timeout::icmp : Timeout::generic;
        CHECK(timeout_of(t) == want);
        CHECK_FALSE(step(t, Dir::orig, 5 * kSecond));
        CHECK(step(t, Dir::reply, 6 * kSecond));
        CHECK(t.seen_reply());
        CHECK_FALSE(step(t, Dir::reply, 600 * kSecond));
        CHECK_FALSE(step(t, Dir::orig, 6000 * kSecond));
        CHECK_FALSE(t.assured());
        CHECK(timeout_of(t) == want);
        CHECK(t.family() == f);
    }
}

// Every byte a record could hold, both directions, ages around the boundary: step() only adds bits,
// keeps the family, and reports exactly whether it changed the byte.
TEST_CASE("step() is monotonic and honest for every tracker byte", "[protostate]")
{
    unsigned broken = 0;
    for (unsigned b = 0; b < 256; ++b) {
        for (Dir d : {Dir::orig, Dir::reply}) {
            for (uint64_t age : {uint64_t{0}, kUdpStreamAgeNs, kUdpStreamAgeNs + 1, ~uint64_t{0}}) {
                Tracker t{uint8_t(b)};
                const Tracker before = t;
                const bool changed = step(t, d, age);
                const bool newly_assured = t.assured() && !before.assured();
                const bool ok = changed == !(t == before) && (t.bits & before.bits) == before.bits &&
                                t.family() == before.family() && (d == Dir::orig || t.seen_reply()) &&
                                (!newly_assured ||
                                 (before.family() == Family::udp && before.seen_reply() && age > kUdpStreamAgeNs)) &&
                                state_name(t) != nullptr && size_t(timeout_of(t)) < kTimeoutCount;
                if (!ok) {
                    ++broken;
                    UNSCOPED_INFO("byte " << b << " dir " << int(d) << " age " << age);
                }
            }
        }
    }
    CHECK(broken == 0);
}

TEST_CASE("timeouts: netfilter's defaults, one fallback, never 0", "[protostate][timeouts]")
{
    constexpr Timeouts kDefaults = Timeouts::netfilter_defaults();
    static_assert(kDefaults.seconds(Timeout::udp_unreplied) == 30, "usable at compile time");
    CHECK(kDefaults.seconds(Timeout::udp_unreplied) == 30);
    CHECK(kDefaults.seconds(Timeout::udp_stream) == 120);
    CHECK(kDefaults.seconds(Timeout::icmp) == 30);
    CHECK(kDefaults.seconds(Timeout::generic) == 600);
    Timeouts z{};
    for (size_t i = 0; i < kTimeoutCount; ++i)
        CHECK(z.seconds(Timeout(i)) == Timeouts::kFallback);
    CHECK(kDefaults.seconds(Timeout::count) == Timeouts::kFallback);
    CHECK(kDefaults.seconds(Timeout(200)) == Timeouts::kFallback);
}

TEST_CASE("timeout flag names: netfilter's sysctl names, exact round trip", "[protostate][timeouts]")
{
    CHECK(std::string(timeout_flag_name(Timeout::udp_unreplied)) == "udp-timeout");
    CHECK(std::string(timeout_flag_name(Timeout::udp_stream)) == "udp-timeout-stream");
    CHECK(std::string(timeout_flag_name(Timeout::icmp)) == "icmp-timeout");
    CHECK(std::string(timeout_flag_name(Timeout::generic)) == "generic-timeout");
    CHECK(std::string(timeout_flag_name(Timeout::count)) == "unknown");
    for (size_t i = 0; i < kTimeoutCount; ++i) {
        Timeout got = Timeout::count;
        CHECK(parse_timeout_flag_name(timeout_flag_name(Timeout(i)), got));
        CHECK(got == Timeout(i));
    }
    Timeout unchanged = Timeout::icmp;
    for (const char* bad : {"", "udp", "udp_timeout", "UDP-timeout", "icmp-timeout ", "unknown"})
        CHECK_FALSE(parse_timeout_flag_name(bad, unchanged));
    CHECK(unchanged == Timeout::icmp);
}
