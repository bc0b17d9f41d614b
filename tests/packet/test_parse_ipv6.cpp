// SPDX-License-Identifier: BSD-3-Clause
// IPv6 rules of packet::parse(): fixed header, payload length, extension-header walk.
#include <catch2/catch.hpp>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;
using test::Ipv6Spec;

namespace {
constexpr uint8_t kHbh = 0, kRouting = 43, kDstopts = 60;
}

// 40-byte fixed header; 39 must not be read as one.
TEST_CASE("an IPv6 header cut at 39 bytes is truncated_l3", "[packet][ipv6]")
{
    const auto f = FrameBuilder().ipv6().tcp().build();
    for (size_t n = 14; n < 54; ++n) {
        CAPTURE(n);
        CHECK(test::verdict_of({f.begin(), f.begin() + static_cast<long>(n)}) == Verdict::truncated_l3);
    }
    CHECK(test::verdict_of({f.begin(), f.begin() + 54}) == Verdict::ip_bad_total_length);
}

TEST_CASE("an IPv6 ethertype with a version other than 6 is ip_bad_version", "[packet][ipv6]")
{
    for (uint8_t version : {0, 4, 7}) {
        CAPTURE(int{version});
        CHECK(test::verdict_of(FrameBuilder().ipv6({.version = version}).tcp().build()) == Verdict::ip_bad_version);
    }
}

// Payload length must fit the frame; padding behind it is fine and not payload.
TEST_CASE("IPv6 payload length beyond the frame is ip_bad_total_length, padding is fine", "[packet][ipv6]")
{
    const auto ok = FrameBuilder().ipv6().tcp().payload(5).build();
    auto p = test::parse_bytes(ok);
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 5);
    CHECK(p.ip_version == 6);

    CHECK(test::verdict_of(FrameBuilder().ipv6({.payload_length = 26}).tcp().payload(5).build()) ==
          Verdict::ip_bad_total_length);
    std::vector<uint8_t> cut = ok;
    cut.pop_back();
    CHECK(test::verdict_of(cut) == Verdict::ip_bad_total_length);

    // Payload length shorter than the frame: the rest is padding, the IP length wins.
    p = test::parse_bytes(FrameBuilder().ipv6({.payload_length = 22}).tcp().payload(5).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 2);
    // ... and a payload length too short for the TCP header is not rescued by what follows.
    CHECK(test::verdict_of(FrameBuilder().ipv6({.payload_length = 19}).tcp().build()) == Verdict::truncated_l4);
    // Payload length 0 in an ordinary frame is not BIG TCP.
    CHECK(test::verdict_of(FrameBuilder().ipv6({.payload_length = 0}).tcp().build()) == Verdict::truncated_l4);
}

// Each walkable extension header type, alone and chained, reaches TCP.
TEST_CASE("hop-by-hop, routing, destination, fragment and AH headers are walked to TCP", "[packet][ipv6][ext]")
{
    for (uint8_t type : {kHbh, kRouting, kDstopts}) {
        for (size_t len : {8, 16, 24, 64}) {
            CAPTURE(int{type}, len);
            const auto p =
                test::parse_bytes(FrameBuilder().ipv6().ipv6_ext(type, len).tcp({.sport = 7}).payload(3).build());
            CHECK(p.verdict == Verdict::tcp);
            CHECK(p.sport == 7);
            CHECK(p.l4_proto == 6);
            CHECK(p.l4_payload_len == 3);
        }
    }
    auto p = test::parse_bytes(FrameBuilder().ipv6().ipv6_ah(24).tcp().payload(1).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 1);
    p = test::parse_bytes(FrameBuilder().ipv6().ipv6_ah(12).udp().build());
    CHECK(p.verdict == Verdict::udp);

    // RFC 8200 4.1 order, all at once.
    p = test::parse_bytes(FrameBuilder()
                              .ipv6()
                              .ipv6_ext(kHbh)
                              .ipv6_ext(kDstopts)
                              .ipv6_ext(kRouting, 24)
                              .ipv6_frag(0, false)
                              .ipv6_ah()
                              .ipv6_ext(kDstopts)
                              .tcp({.dport = 8080})
                              .payload(9)
                              .build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.dport == 8080);
    CHECK(p.l4_payload_len == 9);
}

// The chain limit bounds per-packet work.
TEST_CASE("8 extension headers are walked, a 9th is ipv6_ext_too_long", "[packet][ipv6][ext]")
{
    for (unsigned n = 0; n <= packet::kMaxIpv6ExtHeaders + 1; ++n) {
        CAPTURE(n);
        FrameBuilder b;
        b.ipv6();
        for (unsigned i = 0; i < n; ++i)
            b.ipv6_ext(kDstopts);
        const auto v = test::verdict_of(b.tcp().build());
        CHECK(v == (n <= packet::kMaxIpv6ExtHeaders ? Verdict::tcp : Verdict::ipv6_ext_too_long));
    }
}

// Header bytes are capped so the mbuf entry (which copies at most 256) classifies the same.
TEST_CASE("an extension chain reaching past the header-byte cap is ipv6_ext_too_long", "[packet][ipv6][ext]")
{
    // 14 + 40 + ext + 20: a 176-byte header ends TCP at byte 250, inside the cap; 184 ends it at 258.
    auto fits = FrameBuilder().ipv6().ipv6_ext(kHbh, 176).tcp().payload(100).build();
    REQUIRE(14 + 40 + 176 + 20 <= packet::kMaxHeaderBytes);
    CHECK(test::verdict_of(fits) == Verdict::tcp);
    auto past = FrameBuilder().ipv6().ipv6_ext(kHbh, 184).tcp().payload(100).build();
    CHECK(test::verdict_of(past) == Verdict::ipv6_ext_too_long);
    // A single extension header running past the cap (the next header starts beyond it).
    auto long_ext = FrameBuilder().ipv6().ipv6_ext(kHbh, 256).ipv6_ext(kDstopts).tcp().build();
    CHECK(test::verdict_of(long_ext) == Verdict::ipv6_ext_too_long);
    // But one that runs past the *frame* is truncation, not length.
    auto cut = FrameBuilder().ipv6().ipv6_ext(kHbh, 256).truncate(14 + 40 + 100).build();
    CHECK(test::verdict_of(cut) == Verdict::ipv6_ext_truncated);
}

// An extension header must fit in the IPv6 payload, both its first 8 bytes and its declared length.
TEST_CASE("an extension header running off the payload is ipv6_ext_truncated", "[packet][ipv6][ext]")
{
    // Payload of 7 bytes where an 8-byte header is announced.
    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_ext(kHbh).truncate(14 + 40 + 7).build()) ==
          Verdict::ipv6_ext_truncated);
    // Declared 16 bytes, 15 present.
    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_ext(kRouting, 16).truncate(14 + 40 + 15).build()) ==
          Verdict::ipv6_ext_truncated);
    // Exactly 16 present and nothing after: the walk ends in a TCP header that does not fit.
    const auto exact = FrameBuilder().ipv6().ipv6_ext(kRouting, 16).next_protocol(6).build();
    CHECK(test::verdict_of(exact) == Verdict::truncated_l4);
    // AH length field past the payload.
    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_ah(24).truncate(14 + 40 + 23).build()) ==
          Verdict::ipv6_ext_truncated);
    // A payload length that ends inside an extension header that the frame does hold.
    CHECK(test::verdict_of(FrameBuilder().ipv6({.payload_length = 12}).ipv6_ext(kHbh, 16).tcp().build()) ==
          Verdict::ipv6_ext_truncated);
    // A fragment header is 8 bytes; 7 is truncated.
    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_frag(0, true).truncate(14 + 40 + 7).build()) ==
          Verdict::ipv6_ext_truncated);
}

// First, non-first and atomic fragments (RFC 8200 4.5, RFC 6946).
TEST_CASE("IPv6 fragments: first carries ports, non-first is fragment, atomic is a normal packet",
          "[packet][ipv6][frag]")
{
    auto p = test::parse_bytes(FrameBuilder().ipv6().ipv6_frag(0, true).tcp({.dport = 22}).payload(50).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.dport == 22);
    CHECK(p.l4_payload_len == 50);

    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_frag(0, true).next_protocol(6).payload(12).build()) ==
          Verdict::truncated_l4);

    for (bool more : {true, false}) {
        CAPTURE(more);
        p = test::parse_bytes(FrameBuilder().ipv6().ipv6_frag(185, more).next_protocol(6).payload(64).build());
        CHECK(p.verdict == Verdict::fragment);
        CHECK(p.l4_proto == 6);
        CHECK(p.ip_version == 6);
        CHECK(p.key.port_lo == 0);
    }
    // Behind another header too.
    CHECK(test::verdict_of(
              FrameBuilder().ipv6().ipv6_ext(kHbh).ipv6_frag(1, false).next_protocol(17).payload(8).build()) ==
          Verdict::fragment);

    const auto atomic = test::parse_bytes(FrameBuilder().ipv6().ipv6_frag(0, false).tcp().payload(4).build());
    const auto plain = test::parse_bytes(FrameBuilder().ipv6().tcp().payload(4).build());
    CHECK(atomic.verdict == Verdict::tcp);
    CHECK(atomic.key == plain.key);
    CHECK(atomic.l4_payload_len == 4);
    CHECK(atomic.extra.frag_flags == 0); // a whole datagram: nothing for the fragment attributor
    CHECK(atomic.extra.frag_id == 0);
}

TEST_CASE("IPv6 fragments carry the 32-bit id, offset, M and data length", "[packet][ipv6][frag]")
{
    auto p = test::parse_bytes(
        FrameBuilder().ipv6().ipv6_ext(kHbh).ipv6_frag(0, true, 0xdeadbeef).udp().payload(1000).build());
    CHECK(p.verdict == Verdict::udp);
    CHECK(p.extra.frag_flags == (packet::kFragmented | packet::kFragMore));
    CHECK(p.extra.frag_id == 0xdeadbeef);
    CHECK(p.extra.frag_offset == 0);
    CHECK(p.extra.frag_data_len == 1008);
    p = test::parse_bytes(
        FrameBuilder().ipv6().ipv6_frag(126, false, 0xdeadbeef).next_protocol(17).payload(72).build());
    CHECK(p.verdict == Verdict::fragment);
    CHECK(p.extra.frag_flags == packet::kFragmented);
    CHECK(p.extra.frag_offset == 1008);
    CHECK(p.extra.frag_data_len == 72);
    CHECK(p.extra.frag_id == 0xdeadbeef);
}

// ESP and No Next Header end the walk; ICMPv6 needs its 4-byte header.
TEST_CASE("IPv6 ICMPv6, UDP, ESP and No Next Header are classified, not walked", "[packet][ipv6][l4]")
{
    auto p = test::parse_bytes(FrameBuilder().ipv6().icmp().build());
    CHECK(p.verdict == Verdict::icmp);
    CHECK(p.l4_proto == 58);
    // Type 0xab (the payload's fill) is neither a query nor an error.
    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(58).payload(4).build()) == Verdict::icmp_other);
    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(58).payload(3).build()) == Verdict::truncated_l4);
    // ICMPv4's protocol number over IPv6 is not ICMP.
    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(1).payload(8).build()) == Verdict::other_l4);

    p = test::parse_bytes(FrameBuilder().ipv6().ipv6_ext(kDstopts).udp({.sport = 546, .dport = 547}).build());
    CHECK(p.verdict == Verdict::udp);
    CHECK(p.sport == 546);

    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(59).build()) == Verdict::other_l4);
    CHECK(test::verdict_of(FrameBuilder().ipv6().ipv6_ext(kHbh).next_protocol(59).build()) == Verdict::other_l4);
    p = test::parse_bytes(FrameBuilder().ipv6().next_protocol(50).payload(16).build());
    CHECK(p.verdict == Verdict::other_l4);
    CHECK(p.l4_proto == 50);
}

// Linux BIG TCP over IPv6: payload length 0 (jumbo HBH or none), TCP over 65535 bytes only.
TEST_CASE("IPv6 payload length 0 takes the length from the frame only for TCP over 65535 bytes",
          "[packet][ipv6][bigtcp]")
{
    auto p = test::parse_bytes(FrameBuilder().ipv6({.payload_length = 0}).tcp().payload(70000).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 70000);
    p = test::parse_bytes(FrameBuilder().ipv6({.payload_length = 0}).ipv6_ext(kHbh).tcp().payload(70000).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 70000);
    CHECK(test::verdict_of(FrameBuilder().ipv6({.payload_length = 0}).udp().payload(70000).build()) ==
          Verdict::ip_bad_total_length);
    CHECK(
        test::verdict_of(FrameBuilder().ipv6({.payload_length = 0}).ipv6_frag(0, true).tcp().payload(70000).build()) ==
        Verdict::ip_bad_total_length);
}
