// SPDX-License-Identifier: BSD-3-Clause
// The fragment attributor (fragment_attributor.h) on parsed fragments: in order, out of order,
// duplicates, overlapping ids, expiry, eviction and a flood of unmatched fragments.
#include <catch2/catch.hpp>

#include <fragattr/fragment_attributor.h>
#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

#include <cstdlib>
#include <memory>
#include <random>

using namespace flowcop;
using fragattr::Config;
using fragattr::FragmentAttributor;
using packet::Packet;
using test::FrameBuilder;

namespace {

constexpr uint64_t kMs = 1'000'000;

// An attributor with its own aligned memory.
struct Rig {
    explicit Rig(Config c = {})
        : memory(static_cast<uint8_t*>(std::aligned_alloc(64, FragmentAttributor::bytes_for(c))))
    {
        fa = std::make_unique<FragmentAttributor>(c, memory.get());
    }
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> memory;
    std::unique_ptr<FragmentAttributor> fa;

    const fragattr::Counters& c() const { return fa->counters(); }
    // Every later fragment is in exactly one bucket of the accounting.
    uint64_t later_total() const { return c().attributed + c().attributed_late + c().unattributed + c().pending; }
};

struct Datagram {
    test::Ipv4Spec ip{};
    uint16_t sport = 5353, dport = 53;
    uint8_t proto = 17;
};

// A UDP datagram of 8 + 3 * 16 bytes in three fragments (offsets 0, 24, 40 bytes).
Packet first_of(const Datagram& d, uint16_t id)
{
    test::Ipv4Spec ip = d.ip;
    ip.id = id;
    ip.more_fragments = true;
    return test::parse_bytes(FrameBuilder().ipv4(ip).udp({.sport = d.sport, .dport = d.dport}).payload(16).build());
}

Packet later_of(const Datagram& d, uint16_t id, unsigned index /* 1 or 2 */)
{
    test::Ipv4Spec ip = d.ip;
    ip.id = id;
    ip.frag_offset = uint16_t(1 + index * 2); // 24 bytes, then 40 bytes
    ip.more_fragments = index == 1;
    return test::parse_bytes(FrameBuilder().ipv4(ip).next_protocol(d.proto).payload(16).build());
}

Packet whole(const Datagram& d)
{
    return test::parse_bytes(FrameBuilder().ipv4(d.ip).udp({.sport = d.sport, .dport = d.dport}).payload(48).build());
}

} // namespace

TEST_CASE("in order: every later fragment gets the first one's flow key", "[fragattr]")
{
    Rig r;
    const Datagram d;
    const Packet f = first_of(d, 7);
    REQUIRE(f.verdict == packet::Verdict::udp);
    REQUIRE(f.extra.frag_flags == (packet::kFragmented | packet::kFragMore));
    const fragattr::Held h = r.fa->first(f, 0);
    CHECK(h.packets == 0);
    for (unsigned i : {1u, 2u}) {
        Packet l = later_of(d, 7, i);
        REQUIRE(l.verdict == packet::Verdict::fragment);
        CHECK_FALSE(l.key == f.key);
        CHECK(r.fa->later(l, i * kMs));
        CHECK(l.key == f.key);
        CHECK(l.key == whole(d).key);
        CHECK(l.sport == 5353);
        CHECK(l.dport == 53);
        CHECK(l.verdict == packet::Verdict::fragment); // the caller decides what to do with it
    }
    CHECK(r.c().first_fragments == 1);
    CHECK(r.c().attributed == 2);
    // Every byte of the datagram was seen: its slot is free at once.
    CHECK(r.c().completed == 1);
    CHECK(r.fa->live(3 * kMs) == 0);
    CHECK(r.later_total() == 2);
}

TEST_CASE("the reply direction's datagrams are attributed with the packet's own view of the ports", "[fragattr]")
{
    Rig r;
    Datagram back;
    back.ip = {.src = test::ip4("10.0.0.2"), .dst = test::ip4("10.0.0.1")};
    back.sport = 53, back.dport = 5353;
    const Packet f = first_of(back, 9);
    r.fa->first(f, 0);
    Packet l = later_of(back, 9, 2);
    CHECK(r.fa->later(l, 0));
    CHECK(l.key == whole(Datagram{}).key); // the same flow as the query's direction
    CHECK_FALSE(l.src_is_lo);
    CHECK(l.sport == 53);
    CHECK(l.dport == 5353);
}

TEST_CASE("out of order: later fragments wait for their first and join its flow", "[fragattr]")
{
    Rig r;
    const Datagram d;
    Packet l2 = later_of(d, 11, 2);
    Packet l1 = later_of(d, 11, 1);
    CHECK_FALSE(r.fa->later(l2, 0));
    CHECK_FALSE(r.fa->later(l1, kMs));
    CHECK(r.c().pending == 2);
    CHECK(l2.key.port_lo == 0); // nothing is guessed
    const fragattr::Held h = r.fa->first(first_of(d, 11), 2 * kMs);
    CHECK(h.packets == 2);
    CHECK(h.bytes == 2 * (20 + 16)); // the held fragments' IP lengths (20-byte header, 16 of data): no frame
    CHECK(r.c().pending == 0);
    CHECK(r.c().attributed_late == 2);
    CHECK(r.c().completed == 1);
    CHECK(r.later_total() == 2);

    // The last fragment first, then the first, then the middle one.
    Packet m = later_of(d, 12, 2);
    CHECK_FALSE(r.fa->later(m, 0));
    CHECK(r.fa->first(first_of(d, 12), kMs).packets == 1);
    Packet mid = later_of(d, 12, 1);
    CHECK(r.fa->later(mid, 2 * kMs));
    CHECK(mid.key == whole(d).key);
    CHECK(r.later_total() == 4);
}

TEST_CASE("duplicates: a completed datagram's slot is free yet its duplicates find the flow; pending ones never "
          "complete by count",
          "[fragattr][duplicate]")
{
    Rig r(Config{.capacity = fragattr::kWays}); // one bucket
    const Datagram d;
    r.fa->first(first_of(d, 20), 0);
    for (unsigned i : {1u, 2u}) {
        Packet l = later_of(d, 20, i);
        CHECK(r.fa->later(l, kMs));
    }
    CHECK(r.c().completed == 1);
    CHECK(r.fa->live(kMs) == 0); // its slot is free...
    Packet dup = later_of(d, 20, 2);
    CHECK(r.fa->later(dup, 2 * kMs)); // ...and a duplicate still finds its flow
    CHECK(dup.key == whole(d).key);
    CHECK(r.fa->first(first_of(d, 20), 2 * kMs).packets == 0); // a duplicate first: nothing held
    CHECK(r.c().completed == 1);

    // Later fragments twice each before their first: their count passes the datagram's length, yet
    // the entry waits for the first, which takes all four.
    for (unsigned i : {2u, 2u, 1u, 1u}) {
        Packet l = later_of(d, 21, i);
        CHECK_FALSE(r.fa->later(l, 3 * kMs));
    }
    CHECK(r.c().pending == 4);
    CHECK(r.c().completed == 1);
    CHECK(r.fa->first(first_of(d, 21), 4 * kMs).packets == 4);
    CHECK(r.c().completed == 2);
    CHECK(r.c().unattributed == 0);
    // Both completed slots are taken by new datagrams without evicting anything.
    for (uint16_t id = 30; id < 30 + fragattr::kWays; ++id)
        r.fa->first(first_of(d, id), 5 * kMs);
    CHECK(r.c().evicted == 0);
    CHECK(r.fa->live(5 * kMs) == fragattr::kWays);
    CHECK(r.later_total() == 7);
}

TEST_CASE("overlapping ids: datagrams differ by id, direction, protocol, addresses and VLAN", "[fragattr]")
{
    Rig r;
    Datagram a, other_port, other_addr, gre_like;
    other_port.sport = 6000;
    other_addr.ip.dst = test::ip4("10.0.0.3");
    // Interleaved first fragments with distinct ids, then their later fragments in reverse.
    r.fa->first(first_of(a, 100), 0);
    r.fa->first(first_of(other_port, 101), 0);
    r.fa->first(first_of(other_addr, 100), 0); // the same id, other addresses
    Packet l = later_of(other_addr, 100, 1);
    CHECK(r.fa->later(l, 1));
    CHECK(l.key == whole(other_addr).key);
    l = later_of(other_port, 101, 1);
    CHECK(r.fa->later(l, 1));
    CHECK(l.key == whole(other_port).key);
    l = later_of(a, 100, 1);
    CHECK(r.fa->later(l, 1));
    CHECK(l.key == whole(a).key);
    // The same id from the other direction is another datagram: unknown.
    Datagram rev;
    rev.ip = {.src = a.ip.dst, .dst = a.ip.src};
    l = later_of(rev, 100, 1);
    CHECK_FALSE(r.fa->later(l, 1));
    // The same id under another protocol, or in a VLAN: unknown.
    gre_like.proto = 47;
    l = later_of(gre_like, 100, 1);
    CHECK_FALSE(r.fa->later(l, 1));
    test::Ipv4Spec ip = a.ip;
    ip.id = 100, ip.frag_offset = 3;
    l = test::parse_bytes(FrameBuilder().vlan(5).ipv4(ip).next_protocol(17).payload(16).build());
    CHECK_FALSE(r.fa->later(l, 1));
    // The id reused by a new datagram of another flow on the same addresses takes the entry over.
    r.fa->first(first_of(other_port, 100), 2);
    l = later_of(a, 100, 2);
    CHECK(r.fa->later(l, 3));
    CHECK(l.key == whole(other_port).key); // documented: id reuse within the hold time
}

TEST_CASE("an entry lives hold_ns after its last fragment; held fragments then count as unattributed",
          "[fragattr][expiry]")
{
    Rig r(Config{.capacity = 64, .hold_ns = 100 * kMs});
    const Datagram d;
    r.fa->first(first_of(d, 1), 0);
    Packet l = later_of(d, 1, 1);
    CHECK(r.fa->later(l, 99 * kMs)); // extends to 199 ms
    l = later_of(d, 1, 2);
    CHECK_FALSE(r.fa->later(l, 199 * kMs)); // expired: held instead
    CHECK(r.c().pending == 1);
    CHECK(r.fa->live(199 * kMs) == 1);
    // A full sweep at a time past its hold ends it.
    CHECK(r.fa->expire(300 * kMs, 1u << 20) == r.fa->capacity());
    CHECK(r.c().pending == 0);
    CHECK(r.c().unattributed == 1);
    CHECK(r.fa->live(300 * kMs) == 0);
    CHECK(r.later_total() == 2);
}

TEST_CASE("a full bucket: first fragments evict the least recently touched, pending ones never a resolved one",
          "[fragattr][bounds]")
{
    Rig r(Config{.capacity = fragattr::kWays}); // one bucket
    REQUIRE(r.fa->capacity() == fragattr::kWays);
    const Datagram d;
    for (uint16_t id = 0; id < fragattr::kWays; ++id)
        r.fa->first(first_of(d, id), id * kMs);
    // Pending fragments cannot take a slot from resolved datagrams.
    Packet stray = later_of(d, 999, 1);
    CHECK_FALSE(r.fa->later(stray, 10 * kMs));
    CHECK(r.c().unattributed == 1);
    CHECK(r.c().pending == 0);
    // A new first fragment evicts id 0, touched longest ago.
    r.fa->first(first_of(d, 500), 11 * kMs);
    CHECK(r.c().evicted == 1);
    Packet l = later_of(d, 0, 1);
    CHECK_FALSE(r.fa->later(l, 12 * kMs)); // forgotten, and no slot to wait in: unattributed
    l = later_of(d, 1, 1);
    CHECK(r.fa->later(l, 12 * kMs));
    CHECK(r.later_total() == 3);
}

// The flood: 200,000 later fragments of datagrams whose first never comes, with random ids and
// sources, against a small table holding the datagrams of real flows.
TEST_CASE("a flood of unmatched fragments cannot grow memory or push out real datagrams", "[fragattr][flood]")
{
    const Config cfg{.capacity = 1024, .hold_ns = 1000 * kMs};
    Rig r(cfg);
    const size_t bytes = FragmentAttributor::bytes_for(cfg);
    CHECK(bytes == 1024 * 64);
    // 64 real datagrams, resolved before the flood (a quarter of the table at most per bucket).
    Datagram real;
    for (uint16_t id = 0; id < 64; ++id)
        r.fa->first(first_of(real, id), 0);
    std::mt19937 rng(42);
    uint64_t now = kMs;
    unsigned wrongly_attributed = 0;
    for (unsigned i = 0; i < 200'000; ++i) {
        Datagram junk;
        junk.ip.src = {10, uint8_t(rng()), uint8_t(rng()), uint8_t(rng())};
        Packet l = later_of(junk, uint16_t(rng()), 1);
        wrongly_attributed += r.fa->later(l, now);
        if (i % 1000 == 0) {
            now += kMs;
            r.fa->expire(now, 256);
        }
    }
    CHECK(wrongly_attributed == 0);
    CHECK(FragmentAttributor::bytes_for(cfg) == bytes);
    CHECK(r.fa->live(now) <= r.fa->capacity());
    CHECK(r.c().pending <= r.fa->capacity());
    CHECK(r.later_total() == 200'000);
    CHECK(r.c().unattributed > 100'000); // most could not even be held
    // Every real datagram survived: pending entries only ever evicted each other.
    CHECK(r.c().evicted > 0);
    uint64_t attributed = 0;
    for (uint16_t id = 0; id < 64; ++id) {
        Packet l = later_of(real, id, 1);
        attributed += r.fa->later(l, now);
    }
    CHECK(attributed == 64);
}

TEST_CASE("IPv6 fragments use the 32-bit identification", "[fragattr][ipv6]")
{
    Rig r;
    const auto first = test::parse_bytes(
        FrameBuilder().ipv6().ipv6_frag(0, true, 0x10000001).udp({.sport = 1, .dport = 2}).payload(8).build());
    r.fa->first(first, 0);
    auto other =
        test::parse_bytes(FrameBuilder().ipv6().ipv6_frag(2, true, 0x00000001).next_protocol(17).payload(8).build());
    CHECK_FALSE(r.fa->later(other, 0));
    auto mine =
        test::parse_bytes(FrameBuilder().ipv6().ipv6_frag(2, false, 0x10000001).next_protocol(17).payload(8).build());
    CHECK(r.fa->later(mine, 0));
    CHECK(mine.key == first.key);
    CHECK(r.c().completed == 1);
}
