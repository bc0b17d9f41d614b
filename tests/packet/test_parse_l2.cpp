// SPDX-License-Identifier: BSD-3-Clause
// Ethernet and VLAN rules of packet::parse().
#include <catch2/catch.hpp>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;

namespace {

std::vector<uint8_t> tagged_tcp(const std::vector<uint16_t>& vids, uint16_t tpid = 0x8100)
{
    FrameBuilder b;
    for (uint16_t vid : vids)
        b.vlan(vid, tpid);
    return b.ipv4().tcp().build();
}

} // namespace

// Any frame shorter than the 14-byte Ethernet header must be classified without reading past it.
TEST_CASE("a frame shorter than the Ethernet header is truncated_l2", "[packet][l2]")
{
    const auto full = FrameBuilder().ipv4().tcp().build();
    for (size_t n = 0; n < 14; ++n) {
        CAPTURE(n);
        std::vector<uint8_t> f(full.begin(), full.begin() + static_cast<long>(n));
        const auto p = test::parse_bytes(f);
        CHECK(p.verdict == Verdict::truncated_l2);
        CHECK(p.ip_len == 0);
        CHECK(p.ip_version == 0);
    }
}

// The tag is 4 bytes (TCI + inner ethertype); 14..17 bytes with a TPID cannot hold it.
TEST_CASE("a VLAN tag cut short is truncated_l2, one that exactly fits is not", "[packet][l2]")
{
    const auto full = FrameBuilder().vlan(7).ethertype(0x0806).build(); // tag + ARP ethertype, no body
    REQUIRE(full.size() == 18);
    for (size_t n = 14; n < 18; ++n) {
        CAPTURE(n);
        CHECK(test::verdict_of({full.begin(), full.begin() + static_cast<long>(n)}) == Verdict::truncated_l2);
    }
    const auto p = test::parse_bytes(full);
    CHECK(p.verdict == Verdict::non_ip);
    CHECK(p.vlan_outer == 7);
}

// Non-IP ethertypes are counted as such, whatever they carry (ARP, MPLS, LLDP, 802.3 length field).
TEST_CASE("non-IP ethertypes are non_ip, tagged or not", "[packet][l2]")
{
    for (uint16_t type : {0x0806, 0x8847, 0x88cc, 0x0042, 0x86de, 0x0801}) {
        CAPTURE(type);
        CHECK(test::verdict_of(FrameBuilder().ethertype(type).payload(46).build()) == Verdict::non_ip);
        CHECK(test::verdict_of(FrameBuilder().vlan(5).ethertype(type).payload(42).build()) == Verdict::non_ip);
    }
    // A non-IP frame with exactly the Ethernet header and nothing else.
    CHECK(test::verdict_of(FrameBuilder().ethertype(0x0806).build()) == Verdict::non_ip);
}

// Tags kept in the key: two; skipped: up to four in total; five is malformed.
TEST_CASE("0 to 4 VLAN tags parse, the first two IDs are kept, 5 tags are vlan_too_deep", "[packet][l2]")
{
    auto p = test::parse_bytes(tagged_tcp({}));
    CHECK(p.verdict == Verdict::tcp);
    CHECK((p.vlan_outer == 0 && p.vlan_inner == 0));

    p = test::parse_bytes(tagged_tcp({42}));
    CHECK(p.verdict == Verdict::tcp);
    CHECK((p.vlan_outer == 42 && p.vlan_inner == 0));
    CHECK(packet::key_vlan_outer(p.key) == 42);
    CHECK(packet::key_vlan_inner(p.key) == 0);

    p = test::parse_bytes(tagged_tcp({10, 20}));
    CHECK(p.verdict == Verdict::tcp);
    CHECK((p.vlan_outer == 10 && p.vlan_inner == 20));
    CHECK(packet::key_vlan_outer(p.key) == 10);
    CHECK(packet::key_vlan_inner(p.key) == 20);

    const auto three = test::parse_bytes(tagged_tcp({10, 20, 30}));
    CHECK(three.verdict == Verdict::tcp);
    CHECK((three.vlan_outer == 10 && three.vlan_inner == 20));
    CHECK(three.key == p.key); // the third tag is not in the key

    const auto four = test::parse_bytes(tagged_tcp({10, 20, 30, 40}));
    CHECK(four.verdict == Verdict::tcp);
    CHECK(four.key == p.key);

    CHECK(test::verdict_of(tagged_tcp({1, 2, 3, 4, 5})) == Verdict::vlan_too_deep);
}

// The key must separate the zeek vlan-collisions case: one 4-tuple in three VLAN contexts.
TEST_CASE("the same 4-tuple untagged, in VLAN 42 and in QinQ 10/20 gives three keys", "[packet][l2]")
{
    const auto untagged = test::parse_bytes(tagged_tcp({}));
    const auto v42 = test::parse_bytes(tagged_tcp({42}));
    const auto qinq = test::parse_bytes(tagged_tcp({10, 20}));
    CHECK_FALSE(untagged.key == v42.key);
    CHECK_FALSE(untagged.key == qinq.key);
    CHECK_FALSE(v42.key == qinq.key);
    // Outer and inner are not interchangeable.
    CHECK_FALSE(test::parse_bytes(tagged_tcp({20, 10})).key == qinq.key);
    // Same addresses and ports otherwise.
    CHECK(std::memcmp(untagged.key.addr_lo, qinq.key.addr_lo, 16) == 0);
    CHECK(untagged.key.port_lo == qinq.key.port_lo);
}

// 802.1Q, 802.1ad and the legacy 0x9100 TPID are all tags; the 12-bit VID excludes PCP/DEI.
TEST_CASE("TPIDs 0x8100, 0x88a8 and 0x9100 are all VLAN tags and PCP bits stay out of the ID", "[packet][l2]")
{
    for (uint16_t tpid : {0x8100, 0x88a8, 0x9100}) {
        CAPTURE(tpid);
        const auto p = test::parse_bytes(FrameBuilder().vlan(100, tpid).vlan(200).ipv4().tcp().build());
        CHECK(p.verdict == Verdict::tcp);
        CHECK((p.vlan_outer == 100 && p.vlan_inner == 200));
    }
    const auto p = test::parse_bytes(FrameBuilder().vlan(4095, 0x8100, 7).ipv4().tcp().build());
    CHECK(p.vlan_outer == 4095);
    CHECK(packet::key_vlan_outer(p.key) == 4095);
    // Key packing: outer in the high 12 bits of the 24, big-endian.
    const auto q = test::parse_bytes(FrameBuilder().vlan(0xabc).vlan(0x123).ipv4().tcp().build());
    CHECK(q.key.vlan[0] == 0xab);
    CHECK(q.key.vlan[1] == 0xc1);
    CHECK(q.key.vlan[2] == 0x23);
}

// IPv6 behind a QinQ stack uses the same L2 path.
TEST_CASE("IPv6 behind two VLAN tags parses as tcp with both IDs", "[packet][l2]")
{
    const auto p = test::parse_bytes(FrameBuilder().vlan(3, 0x88a8).vlan(4).ipv6().tcp().build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.ip_version == 6);
    CHECK((p.vlan_outer == 3 && p.vlan_inner == 4));
}
