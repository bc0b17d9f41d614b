// SPDX-License-Identifier: BSD-3-Clause
// ICMP and ICMPv6 (packet.h): queries keyed by addresses + identifier + query type, errors keyed by
// the flow of the packet they quote, in either direction, everything else icmp_other.
#include <catch2/catch.hpp>

#include <packet/packet.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Verdict;
using test::FrameBuilder;
using test::IcmpSpec;
using test::ip4;
using test::ip6;

namespace {

const test::Ipv4Spec kA4{.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2")};
const test::Ipv4Spec kB4{.src = ip4("10.0.0.2"), .dst = ip4("10.0.0.1")};
const test::Ipv6Spec kA6{.src = ip6("2001:db8::1"), .dst = ip6("2001:db8::2")};
const test::Ipv6Spec kB6{.src = ip6("2001:db8::2"), .dst = ip6("2001:db8::1")};

FrameBuilder ip(bool v6, bool from_a)
{
    FrameBuilder b;
    if (v6)
        b.ipv6(from_a ? kA6 : kB6);
    else
        b.ipv4(from_a ? kA4 : kB4);
    return b;
}

packet::Packet icmp(bool v6, bool from_a, const IcmpSpec& spec)
{
    return test::parse_bytes(ip(v6, from_a).icmp(spec).build());
}

// An error sent by `from_a`'s side (or a router on its path) about `inner`.
packet::Packet error_about(bool v6, bool from_a, uint8_t type, const FrameBuilder& inner, size_t max_quote = 1u << 16)
{
    return test::parse_bytes(ip(v6, from_a).icmp({.type = type, .rest = 0}).quote(inner, max_quote).build());
}

uint8_t echo_request(bool v6)
{
    return v6 ? 128 : 8;
}
uint8_t echo_reply(bool v6)
{
    return v6 ? 129 : 0;
}

} // namespace

TEST_CASE("an echo request and its reply have one key: addresses, identifier and the query type", "[packet][icmp]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        const auto req = icmp(v6, true, {.type = echo_request(v6), .id = 0x4242, .seq = 7});
        const auto rep = icmp(v6, false, {.type = echo_reply(v6), .id = 0x4242, .seq = 7});
        CHECK(req.verdict == Verdict::icmp);
        CHECK(rep.verdict == Verdict::icmp);
        CHECK(req.key == rep.key);
        CHECK(req.src_is_lo != rep.src_is_lo);
        CHECK(req.key.proto == (v6 ? 58 : 1));
        CHECK(req.l4_proto == (v6 ? 58 : 1));
        // The request's side sees (identifier, query type), the reply's the reverse.
        CHECK(req.sport == 0x4242);
        CHECK(req.dport == echo_request(v6));
        CHECK(rep.sport == echo_request(v6));
        CHECK(rep.dport == 0x4242);
        CHECK(req.extra.icmp_type == echo_request(v6));
        CHECK(rep.extra.icmp_type == echo_reply(v6));
        CHECK(packet::icmp_is_request(req));
        CHECK_FALSE(packet::icmp_is_request(rep));
        // Another identifier, or the same sequence with another identifier, is another flow.
        CHECK_FALSE(icmp(v6, true, {.type = echo_request(v6), .id = 0x4243}).key == req.key);
    }
}

TEST_CASE("the other queries netfilter tracks pair up like echo; queries with one identifier stay apart",
          "[packet][icmp]")
{
    struct Pair {
        bool v6;
        uint8_t request, reply;
    };
    for (const Pair q : {Pair{false, 8, 0}, Pair{false, 13, 14}, Pair{false, 15, 16}, Pair{false, 17, 18},
                         Pair{true, 128, 129}, Pair{true, 139, 140}}) {
        CAPTURE(q.v6, int{q.request});
        const auto req = icmp(q.v6, true, {.type = q.request, .id = 9});
        const auto rep = icmp(q.v6, false, {.type = q.reply, .id = 9});
        CHECK(req.verdict == Verdict::icmp);
        CHECK(rep.verdict == Verdict::icmp);
        CHECK(req.key == rep.key);
        CHECK(packet::icmp_is_request(req));
        CHECK_FALSE(packet::icmp_is_request(rep));
    }
    CHECK_FALSE(icmp(false, true, {.type = 8, .id = 9}).key == icmp(false, true, {.type = 13, .id = 9}).key);
}

// A ping to oneself: both directions still give one key.
TEST_CASE("an echo to the host's own address keys both ways alike", "[packet][icmp]")
{
    const test::Ipv4Spec self{.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.1")};
    const auto req = test::parse_bytes(FrameBuilder().ipv4(self).icmp({.type = 8, .id = 3}).build());
    const auto rep = test::parse_bytes(FrameBuilder().ipv4(self).icmp({.type = 0, .id = 3}).build());
    CHECK(req.key == rep.key);
}

TEST_CASE("ICMP that is neither query nor error is icmp_other, keyed by addresses", "[packet][icmp]")
{
    // Router advertisement/solicitation, an unassigned type; ND, MLD, router advertisement, RPL.
    for (const auto& [v6, type] :
         {std::pair{false, 9}, std::pair{false, 10}, std::pair{false, 42}, std::pair{true, 130}, std::pair{true, 133},
          std::pair{true, 134}, std::pair{true, 135}, std::pair{true, 136}, std::pair{true, 143}, std::pair{true, 155},
          std::pair{true, 100}}) {
        CAPTURE(v6, type);
        const auto p = icmp(v6, true, {.type = static_cast<uint8_t>(type), .code = 3});
        CHECK(p.verdict == Verdict::icmp_other);
        CHECK(p.extra.icmp_type == type);
        CHECK(p.extra.icmp_code == 3);
        CHECK(p.key.port_lo == 0);
        CHECK(p.key.port_hi == 0);
        CHECK(p.sport == 0);
        CHECK_FALSE(packet::icmp_is_request(p));
    }
    // ICMPv6 needs only its 4-byte header for a message that is not a query or an error.
    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(58).raw({135, 0, 0, 0}).build()) == Verdict::icmp_other);
}

TEST_CASE("a query or an error shorter than 8 bytes of ICMP is truncated_l4", "[packet][icmp]")
{
    for (bool v6 : {false, true}) {
        for (uint8_t type : {echo_request(v6), echo_reply(v6), uint8_t(v6 ? 1 : 3)}) {
            for (size_t n = v6 ? 4 : 0; n < 8; ++n) {
                CAPTURE(v6, int{type}, n);
                std::vector<uint8_t> hdr = {type, 0, 0, 0, 0, 1, 0, 1};
                hdr.resize(n);
                const auto p = test::parse_bytes(ip(v6, true).next_protocol(v6 ? 58 : 1).raw(hdr).build());
                CHECK(p.verdict == Verdict::truncated_l4);
                CHECK(p.key.port_lo == 0);
            }
        }
    }
}

TEST_CASE("an ICMP error gets the key of the flow it quotes, from either direction", "[packet][icmp][error]")
{
    for (bool v6 : {false, true}) {
        const std::vector<uint8_t> types =
            v6 ? std::vector<uint8_t>{1, 2, 3, 4} : std::vector<uint8_t>{3, 4, 5, 11, 12};
        for (uint8_t type : types) {
            for (bool quoted_from_a : {true, false}) {
                CAPTURE(v6, int{type}, quoted_from_a);
                // TCP from A to B (or back), UDP, and an echo request: each quoted by an error sent back.
                const auto tcp_inner = ip(v6, quoted_from_a).tcp({.sport = 40000, .dport = 443}).payload(100);
                const auto udp_inner = ip(v6, quoted_from_a).udp({.sport = 5353, .dport = 53}).payload(30);
                const auto echo_inner = ip(v6, quoted_from_a).icmp({.type = echo_request(v6), .id = 77});
                for (const FrameBuilder* inner : {&tcp_inner, &udp_inner, &echo_inner}) {
                    const auto flow = test::parse_bytes(inner->build());
                    const auto err = error_about(v6, !quoted_from_a, type, *inner, v6 ? 48 : 28);
                    CHECK(err.verdict == Verdict::icmp_error);
                    CHECK(err.key == flow.key);
                    CHECK(err.key.proto == flow.key.proto);
                    CHECK(err.l4_proto == (v6 ? 58 : 1));
                    CHECK(err.extra.icmp_type == type);
                    // The error travels against the quoted packet.
                    CHECK(err.src_is_lo == !flow.src_is_lo);
                    CHECK(err.sport == flow.dport);
                    CHECK(err.dport == flow.sport);
                    CHECK_FALSE(packet::icmp_is_request(err));
                }
            }
        }
    }
}

TEST_CASE("an error quoting an echo reply finds the echo's flow", "[packet][icmp][error]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        const auto reply = ip(v6, false).icmp({.type = echo_reply(v6), .id = 5});
        const auto request = test::parse_bytes(ip(v6, true).icmp({.type = echo_request(v6), .id = 5}).build());
        CHECK(error_about(v6, true, v6 ? 1 : 3, reply).key == request.key);
    }
}

TEST_CASE("a quoted fragment, another protocol or a non-query ICMP keys without ports", "[packet][icmp][error]")
{
    // Non-first fragment: the error is about bytes that carry no ports.
    auto inner = FrameBuilder().ipv4({.frag_offset = 100}).next_protocol(17).payload(16);
    auto e = error_about(false, false, 11, inner);
    CHECK(e.verdict == Verdict::icmp_error);
    CHECK(e.key.proto == 17);
    CHECK(e.key.port_lo == 0);
    CHECK(e.key.port_hi == 0);
    inner = FrameBuilder().ipv6().ipv6_frag(10, true).next_protocol(6).payload(16);
    e = error_about(true, false, 3, inner);
    CHECK(e.verdict == Verdict::icmp_error);
    CHECK(e.key.proto == 6);
    CHECK(e.key.port_lo == 0);
    // A first fragment does carry the ports.
    inner = FrameBuilder().ipv4({.more_fragments = true}).udp({.sport = 1, .dport = 2}).payload(100);
    CHECK(error_about(false, false, 3, inner).key == test::parse_bytes(inner.build()).key);
    // GRE: addresses and protocol, as its flow.
    inner = FrameBuilder().ipv4().next_protocol(47).payload(12);
    e = error_about(false, false, 3, inner);
    CHECK(e.verdict == Verdict::icmp_error);
    CHECK(e.key == test::parse_bytes(inner.build()).key);
    // A quoted router solicitation.
    inner = FrameBuilder().ipv6().icmp({.type = 133});
    e = error_about(true, false, 1, inner);
    CHECK(e.verdict == Verdict::icmp_error);
    CHECK(e.key.proto == 58);
    CHECK(e.key.port_lo == 0);
}

TEST_CASE("a quoted IPv6 packet's extension headers are walked", "[packet][icmp][error]")
{
    const auto inner = FrameBuilder().ipv6().ipv6_ext(0).ipv6_ext(60, 16).tcp({.sport = 7, .dport = 8}).payload(4);
    const auto e = error_about(true, false, 2, inner, 40 + 8 + 16 + 8);
    CHECK(e.verdict == Verdict::icmp_error);
    CHECK(e.key == test::parse_bytes(inner.build()).key);
    // The same quote cut inside the destination options header.
    CHECK(error_about(true, false, 2, inner, 40 + 8 + 15).verdict == Verdict::icmp_bad_quote);
}

TEST_CASE("a quote that cannot be read, or quotes an error, is icmp_bad_quote", "[packet][icmp][error]")
{
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        const size_t iph = v6 ? 40 : 20;
        const auto tcp_inner = ip(v6, true).tcp().payload(20);
        // The quote needs the whole IP header and 8 L4 bytes, each byte short is bad.
        for (size_t n = 0; n < iph + 8; ++n) {
            CAPTURE(n);
            const auto e = error_about(v6, false, v6 ? 1 : 3, tcp_inner, n);
            CHECK(e.verdict == Verdict::icmp_bad_quote);
            CHECK(packet::is_malformed(e.verdict));
            // Keyed by the error's own addresses, without ports.
            CHECK(e.key.proto == (v6 ? 58 : 1));
            CHECK(e.sport == 0);
        }
        CHECK(error_about(v6, false, v6 ? 1 : 3, tcp_inner, iph + 8).verdict == Verdict::icmp_error);
        // An error about an error.
        const auto nested = ip(v6, true).icmp({.type = uint8_t(v6 ? 1 : 3), .rest = 0}).quote(tcp_inner, iph + 8);
        CHECK(error_about(v6, false, v6 ? 3 : 11, nested).verdict == Verdict::icmp_bad_quote);
        // The other IP version inside.
        CHECK(error_about(v6, false, v6 ? 1 : 3, ip(!v6, true).tcp()).verdict == Verdict::icmp_bad_quote);
    }
    // IHL < 5 inside.
    const auto bad_ihl = FrameBuilder().ipv4({.ihl = 4}).udp();
    CHECK(error_about(false, false, 3, bad_ihl).verdict == Verdict::icmp_bad_quote);
}

// The quote must lie in the first kMaxHeaderBytes bytes: a deep enough quoted header chain is cut.
TEST_CASE("a quote reaching past the header-byte cap is icmp_bad_quote", "[packet][icmp][error]")
{
    const auto inner = FrameBuilder().ipv6().ipv6_ext(0, 120).tcp().payload(4);
    // 14 + 40 + 8 + 40 + 120 + 8 = 230 bytes: within the cap.
    CHECK(error_about(true, false, 1, inner).verdict == Verdict::icmp_error);
    const auto deeper = FrameBuilder().ipv6().ipv6_ext(0, 160).tcp().payload(4);
    CHECK(error_about(true, false, 1, deeper).verdict == Verdict::icmp_bad_quote);
}

// Protocol 1 over IPv6 and 58 over IPv4 are not ICMP.
TEST_CASE("ICMP numbers under the wrong IP version are other_l4", "[packet][icmp]")
{
    CHECK(test::verdict_of(FrameBuilder().ipv6().next_protocol(1).raw({8, 0, 0, 0, 0, 1, 0, 1}).build()) ==
          Verdict::other_l4);
    CHECK(test::verdict_of(FrameBuilder().ipv4().next_protocol(58).raw({128, 0, 0, 0, 0, 1, 0, 1}).build()) ==
          Verdict::other_l4);
}
