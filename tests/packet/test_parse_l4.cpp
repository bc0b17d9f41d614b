// SPDX-License-Identifier: BSD-3-Clause
// L4 rules of packet::parse(): TCP field extraction, data offset, L4 truncation boundaries.
#include <catch2/catch.hpp>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;
using test::TcpSpec;

// The tracker relies on each of these fields; each is checked at a distinct value.
TEST_CASE("TCP seq, ack, window, ports and flags are extracted in host order", "[packet][tcp]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        FrameBuilder b;
        if (v6)
            b.ipv6();
        else
            b.ipv4();
        const auto p = test::parse_bytes(b.tcp({.sport = 0xfedc,
                                                .dport = 0x0102,
                                                .seq = 0xdeadbeef,
                                                .ack = 0x01020304,
                                                .flags = packet::kTcpSyn | packet::kTcpAck,
                                                .window = 0xa1b2})
                                             .build());
        CHECK(p.verdict == Verdict::tcp);
        CHECK(p.sport == 0xfedc);
        CHECK(p.dport == 0x0102);
        CHECK(p.seq == 0xdeadbeef);
        CHECK(p.ack == 0x01020304);
        CHECK(p.window == 0xa1b2);
        CHECK(p.tcp_flags == 0x12);
        CHECK(p.l4_proto == 6);
        CHECK(p.key.proto == 6);
        CHECK(p.l4_payload_len == 0);
        CHECK(p.ip_version == (v6 ? 6 : 4));
    }
}

TEST_CASE("every TCP flag bit reaches tcp_flags unchanged", "[packet][tcp]")
{
    for (unsigned bit = 0; bit < 8; ++bit) {
        const auto flags = static_cast<uint8_t>(1u << bit);
        CAPTURE(bit);
        CHECK(test::parse_bytes(FrameBuilder().ipv4().tcp({.flags = flags}).build()).tcp_flags == flags);
    }
    CHECK(test::parse_bytes(FrameBuilder().ipv4().tcp({.flags = 0xff}).build()).tcp_flags == 0xff);
    CHECK(packet::kTcpFin == 0x01);
    CHECK(packet::kTcpCwr == 0x80);
}

// Payload = IP payload - TCP header, with options; never the frame's padding.
TEST_CASE("l4_payload_len is the IP payload minus the TCP header including options", "[packet][tcp]")
{
    const std::vector<uint8_t> opts = {2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7}; // MSS, SACK-perm, wscale
    auto p = test::parse_bytes(FrameBuilder().ipv4().tcp({.options = opts}).payload(1000).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 1000);
    p = test::parse_bytes(FrameBuilder().ipv6().tcp({.options = opts}).payload(1).pad_to(200).build());
    CHECK(p.l4_payload_len == 1);
    // Maximal header (data offset 15 = 60 bytes) exactly filling the segment.
    p = test::parse_bytes(FrameBuilder().ipv4().tcp({.options = std::vector<uint8_t>(40, 1)}).build());
    CHECK(p.verdict == Verdict::tcp);
    CHECK(p.l4_payload_len == 0);
}

// Data offset < 5 cannot hold the header; beyond the segment it would claim bytes that are not there.
TEST_CASE("TCP data offset below 5 or beyond the segment is tcp_bad_data_offset", "[packet][tcp]")
{
    for (uint8_t doff = 0; doff < 5; ++doff) {
        CAPTURE(int{doff});
        const auto p =
            test::parse_bytes(FrameBuilder().ipv4().tcp({.sport = 99, .data_offset = doff}).payload(40).build());
        CHECK(p.verdict == Verdict::tcp_bad_data_offset);
        CHECK(p.sport == 99); // filled as far as it got
    }
    // 24-byte header claimed, 23-byte segment.
    CHECK(test::verdict_of(FrameBuilder().ipv4().tcp({.data_offset = 6}).payload(3).build()) ==
          Verdict::tcp_bad_data_offset);
    CHECK(test::verdict_of(FrameBuilder().ipv4().tcp({.data_offset = 6}).payload(4).build()) == Verdict::tcp);
    // The bytes exist in the frame (padding) but not in the segment: still bad.
    CHECK(test::verdict_of(FrameBuilder().ipv6().tcp({.data_offset = 15}).pad_to(200).build()) ==
          Verdict::tcp_bad_data_offset);
}

// Fixed L4 headers: TCP 20, UDP 8, ICMP 8, ICMPv6 4 - one byte short must not be read. (The ICMPv4
// header here is an echo reply, type 0; the ICMPv6 one has type 0x50, neither query nor error.)
TEST_CASE("an L4 fixed header one byte short of the IP payload is truncated_l4", "[packet][l4]")
{
    struct Case {
        uint8_t proto;
        size_t need;
        Verdict ok;
        bool v6;
    };
    for (const Case c :
         {Case{6, 20, Verdict::tcp, false}, Case{6, 20, Verdict::tcp, true}, Case{17, 8, Verdict::udp, false},
          Case{17, 8, Verdict::udp, true}, Case{1, 8, Verdict::icmp, false}, Case{58, 4, Verdict::icmp_other, true}}) {
        CAPTURE(int{c.proto}, c.v6);
        std::vector<uint8_t> hdr(c.need, 0);
        hdr[12 % c.need] = 0x50; // TCP data offset 5 (byte 12); harmless for the others
        for (size_t n = 0; n < c.need; ++n) {
            FrameBuilder b;
            if (c.v6)
                b.ipv6();
            else
                b.ipv4();
            const auto f = b.next_protocol(c.proto).raw({hdr.begin(), hdr.begin() + static_cast<long>(n)}).build();
            CHECK(test::verdict_of(f) == Verdict::truncated_l4);
        }
        FrameBuilder b;
        if (c.v6)
            b.ipv6();
        else
            b.ipv4();
        CHECK(test::verdict_of(b.next_protocol(c.proto).raw(hdr).build()) == c.ok);
    }
}

// Padding in the frame must not complete a truncated L4 header.
TEST_CASE("a truncated TCP header followed by Ethernet padding is still truncated_l4", "[packet][l4]")
{
    const auto p = test::parse_bytes(FrameBuilder().ipv4().next_protocol(6).payload(4).pad_to(60).build());
    CHECK(p.verdict == Verdict::truncated_l4);
    CHECK(p.ip_version == 4);
    CHECK(p.key.proto == 6);
    CHECK(p.sport == 0);
}
