// SPDX-License-Identifier: BSD-3-Clause
// IPv4 rules of packet::parse(): header checks, lengths, fragments, BIG TCP, L4 dispatch.
#include <catch2/catch.hpp>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;
using test::Ipv4Spec;
using test::TcpSpec;

// The fixed header is 20 bytes; 19 must not be read as a header.
TEST_CASE("an IPv4 header cut at 19 bytes is truncated_l3, 20 bytes reach the next check", "[packet][ipv4]")
{
    const auto f = FrameBuilder().ipv4().tcp().build();
    for (size_t n = 14; n < 34; ++n) {
        CAPTURE(n);
        CHECK(test::verdict_of({f.begin(), f.begin() + static_cast<long>(n)}) == Verdict::truncated_l3);
    }
    // 20 bytes of header whose total length claims 40: the frame is short of the datagram.
    CHECK(test::verdict_of({f.begin(), f.begin() + 34}) == Verdict::ip_bad_total_length);
    // A datagram that is exactly the 20-byte header (no L4 at all).
    const auto hdr_only = FrameBuilder().ipv4().next_protocol(6).build();
    REQUIRE(hdr_only.size() == 34);
    CHECK(test::verdict_of(hdr_only) == Verdict::truncated_l4);
}

// The version nibble must agree with the ethertype.
TEST_CASE("an IPv4 ethertype with a version other than 4 is ip_bad_version", "[packet][ipv4]")
{
    for (uint8_t version : {0, 5, 6, 15}) {
        CAPTURE(int{version});
        CHECK(test::verdict_of(FrameBuilder().ipv4({.version = version}).tcp().build()) == Verdict::ip_bad_version);
    }
}

// IHL < 5 cannot hold the fixed header; IHL*4 past the frame would read beyond it.
TEST_CASE("IHL below 5 or past the frame is ipv4_bad_ihl", "[packet][ipv4]")
{
    for (uint8_t ihl = 0; ihl < 5; ++ihl) {
        CAPTURE(int{ihl});
        CHECK(test::verdict_of(FrameBuilder().ipv4({.ihl = ihl}).tcp().build()) == Verdict::ipv4_bad_ihl);
    }
    // 20-byte header, IHL 15 (60 bytes) but only 20 + 19 bytes in the frame.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.ihl = 15}).next_protocol(6).payload(19).build()) ==
          Verdict::ipv4_bad_ihl);
    // Exactly 60 bytes available: IHL passes; the datagram then has no room for TCP.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.ihl = 15}).next_protocol(6).payload(40).build()) ==
          Verdict::truncated_l4);
}

// Options are skipped by IHL and do not disturb the TCP fields.
TEST_CASE("IPv4 options of every length are skipped to the TCP header", "[packet][ipv4]")
{
    for (size_t words = 1; words <= 10; ++words) {
        CAPTURE(words);
        std::vector<uint8_t> opts(words * 4, 0x01); // NOPs
        const auto p = test::parse_bytes(
            FrameBuilder().ipv4({.options = opts}).tcp({.sport = 1111, .dport = 2222}).payload(3).build());
        CHECK(p.verdict == Verdict::tcp);
        CHECK(p.sport == 1111);
        CHECK(p.dport == 2222);
        CHECK(p.l4_payload_len == 3);
    }
}

// Total length is checked against IHL and against the frame, not the window of bytes read.
TEST_CASE("IPv4 total length below IHL*4 or beyond the frame is ip_bad_total_length", "[packet][ipv4]")
{
    const auto ok = FrameBuilder().ipv4().tcp().payload(10).build(); // total length 50
    CHECK(test::verdict_of(ok) == Verdict::tcp);
    for (uint16_t tot : {1, 19}) {
        CAPTURE(tot);
        CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = tot}).tcp().build()) ==
              Verdict::ip_bad_total_length);
    }
    // With options: IHL 6 = 24 bytes; total length 23 is below it.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.options = {1, 1, 1, 0}, .total_length = 23}).tcp().build()) ==
          Verdict::ip_bad_total_length);
    // One byte past the frame (the snaplen-truncated capture case).
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 51}).tcp().payload(10).build()) ==
          Verdict::ip_bad_total_length);
    std::vector<uint8_t> cut = ok;
    cut.pop_back();
    CHECK(test::verdict_of(cut) == Verdict::ip_bad_total_length);
    // Total length exactly the frame.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 50}).tcp().payload(10).build()) == Verdict::tcp);
}

// Frames under 60 bytes are padded by the sender; padding is not payload.
TEST_CASE("Ethernet padding after the datagram is fine and not counted as payload", "[packet][ipv4]")
{
    const auto f = FrameBuilder().ipv4().tcp({.flags = packet::kTcpAck}).payload(2).pad_to(60).build();
    REQUIRE(f.size() == 60);
    const auto p = test::parse_bytes(f);
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 2);
    CHECK(p.ip_len == 20 + 20 + 2); // the IP packet: neither the Ethernet header nor the padding
    // A shorter total length than the TCP header, inside a padded frame, is not rescued by padding.
    CHECK(test::verdict_of(FrameBuilder().ipv4().next_protocol(6).payload(19).pad_to(60).build()) ==
          Verdict::truncated_l4);
}

// Fragments: only the first one carries ports.
TEST_CASE("an IPv4 first fragment is parsed as TCP, a non-first fragment is fragment", "[packet][ipv4][frag]")
{
    auto p = test::parse_bytes(FrameBuilder().ipv4({.more_fragments = true}).tcp({.dport = 443}).payload(100).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.dport == 443);
    CHECK(p.l4_payload_len == 100); // the bytes of this fragment

    // First fragment holding only 8 bytes of the TCP header.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.more_fragments = true}).next_protocol(6).payload(8).build()) ==
          Verdict::truncated_l4);

    for (bool more : {true, false}) {
        CAPTURE(more);
        p = test::parse_bytes(
            FrameBuilder().ipv4({.frag_offset = 1, .more_fragments = more}).next_protocol(6).payload(8).build());
        CHECK(p.verdict == Verdict::fragment);
        CHECK(p.ip_version == 4);
        CHECK(p.l4_proto == 6);
        CHECK(p.key.port_lo == 0);
        CHECK(p.key.port_hi == 0);
    }
    // The largest offset is still a fragment; DF alone is not.
    CHECK(test::parse_bytes(FrameBuilder().ipv4({.frag_offset = 0x1fff}).next_protocol(17).payload(8).build())
              .extra.frag_offset == 0x1fff * 8);
    CHECK(test::verdict_of(FrameBuilder().ipv4({.frag_offset = 0x1fff}).next_protocol(17).payload(8).build()) ==
          Verdict::fragment);
    CHECK(test::verdict_of(FrameBuilder().ipv4({.dont_fragment = true}).tcp().build()) == Verdict::tcp);
}

// What lib/fragattr needs: identification, offset, MF and the fragment's data bytes, for every
// fragment whatever its verdict; nothing for a whole datagram.
TEST_CASE("IPv4 fragments carry id, offset, MF and data length", "[packet][ipv4][frag]")
{
    auto p = test::parse_bytes(
        FrameBuilder().ipv4({.id = 0xbeef, .more_fragments = true}).udp({.dport = 53}).payload(1472).build());
    CHECK(p.verdict == packet::Verdict::udp);
    CHECK(p.extra.frag_flags == (packet::kFragmented | packet::kFragMore));
    CHECK(p.extra.frag_id == 0xbeef);
    CHECK(p.extra.frag_offset == 0);
    CHECK(p.extra.frag_data_len == 1480);
    p = test::parse_bytes(
        FrameBuilder().ipv4({.id = 0xbeef, .frag_offset = 185}).next_protocol(17).payload(520).pad_to(600).build());
    CHECK(p.verdict == packet::Verdict::fragment);
    CHECK(p.extra.frag_flags == packet::kFragmented);
    CHECK(p.extra.frag_offset == 1480);
    CHECK(p.extra.frag_data_len == 520);
    // A first fragment too short for its L4 header still carries them.
    p = test::parse_bytes(FrameBuilder().ipv4({.id = 3, .more_fragments = true}).next_protocol(6).payload(8).build());
    CHECK(p.verdict == packet::Verdict::truncated_l4);
    CHECK(p.extra.frag_flags == (packet::kFragmented | packet::kFragMore));
    CHECK(p.extra.frag_data_len == 8);
    // Not a fragment: none of it, DF or not.
    for (bool df : {false, true}) {
        p = test::parse_bytes(FrameBuilder().ipv4({.id = 9, .dont_fragment = df}).tcp().build());
        CHECK(p.extra.frag_flags == 0);
        CHECK(p.extra.frag_id == 0);
    }
}

// Linux BIG TCP: total length 0, length from the frame, for TCP over 64 KiB only.
TEST_CASE("IPv4 total length 0 takes the length from the frame only for TCP over 65535 bytes", "[packet][ipv4][bigtcp]")
{
    const auto big = FrameBuilder().ipv4({.total_length = 0}).tcp({.flags = packet::kTcpAck}).payload(80000).build();
    auto p = test::parse_bytes(big);
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.ip_len == big.size() - 14); // the datagram takes the frame after the Ethernet header
    CHECK(p.l4_payload_len == 80000);

    // 65535 bytes of datagram fit the 16-bit field, so 0 there is corruption.
    const size_t just = 65535 - 40;
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 0}).tcp().payload(just).build()) ==
          Verdict::ip_bad_total_length);
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 0}).tcp().payload(just + 1).build()) == Verdict::tcp);
    // Not for UDP, nor for a small padded TCP frame, nor for a fragment.
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 0}).udp({.length = 0}).payload(80000).build()) ==
          Verdict::ip_bad_total_length);
    CHECK(test::verdict_of(FrameBuilder().ipv4({.total_length = 0}).tcp().pad_to(60).build()) ==
          Verdict::ip_bad_total_length);
    CHECK(test::verdict_of(
              FrameBuilder().ipv4({.more_fragments = true, .total_length = 0}).tcp().payload(80000).build()) ==
          Verdict::ip_bad_total_length);
}

// UDP and ICMP are recognised, not tracked; UDP ports come through the generic L4 path.
TEST_CASE("IPv4 UDP, ICMP and other protocols are classified with what they carry", "[packet][ipv4][l4]")
{
    auto p = test::parse_bytes(FrameBuilder().ipv4().udp({.sport = 5000, .dport = 53}).payload(12).build());
    CHECK(p.verdict == Verdict::udp);
    CHECK(p.sport == 5000);
    CHECK(p.dport == 53);
    CHECK(p.l4_payload_len == 12);
    CHECK(p.key.proto == 17);
    CHECK(p.src_is_lo); // 10.0.0.1 < 10.0.0.2
    CHECK(p.key.port_lo == 5000);
    CHECK(p.key.port_hi == 53);

    p = test::parse_bytes(FrameBuilder().ipv4().icmp().build());
    CHECK(p.verdict == Verdict::icmp);
    CHECK(p.key.proto == 1); // test_parse_icmp.cpp has the ICMP classes

    for (uint8_t proto : {2, 4, 41, 47, 50, 51, 58, 89, 132, 255}) {
        CAPTURE(int{proto});
        p = test::parse_bytes(FrameBuilder().ipv4().next_protocol(proto).payload(8).build());
        CHECK(p.verdict == Verdict::other_l4);
        CHECK(p.l4_proto == proto);
        CHECK(p.key.proto == proto);
    }
}
