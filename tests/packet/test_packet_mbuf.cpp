// SPDX-License-Identifier: BSD-3-Clause
// parse_mbuf(): the mbuf entry hands the same bytes to the same parser whether the
// headers sit in the first segment or are split across several, and counts pkt_len.
// Needs EAL for its mbuf pool: linked with the shared EAL runner (catch2_eal_main_dep, suite 'dpdk').
#include <catch2/catch.hpp>

#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstring>
#include <vector>

#include <packet/packet_mbuf.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Packet;
using packet::Verdict;
using test::FrameBuilder;

namespace {

// The tests' mbuf pool, made on first use (the runner has booted EAL by then). It is never freed on
// its own: the runner's rte_eal_cleanup() releases EAL's memory with everything in it.
rte_mempool* pool()
{
    static rte_mempool* const p =
        rte_pktmbuf_pool_create("packet_test", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (p == nullptr)
        FAIL("mbuf pool: " << rte_strerror(rte_errno));
    return p;
}

// Mbuf chain owned by the test; freed on scope exit.
struct Chain {
    rte_mbuf* head = nullptr;
    ~Chain() { rte_pktmbuf_free(head); }
};

// Builds a chain whose segments hold `sizes` bytes in turn, then full segments
// (a size of 0 makes an empty segment, as a PMD may deliver one).
void make_chain(Chain& c, const std::vector<uint8_t>& frame, const std::vector<size_t>& sizes)
{
    constexpr size_t kRoom = 2048; // RTE_MBUF_DEFAULT_DATAROOM
    size_t off = 0;
    size_t i = 0;
    do {
        const size_t n = std::min({i < sizes.size() ? sizes[i] : kRoom, frame.size() - off, kRoom});
        rte_mbuf* m = rte_pktmbuf_alloc(pool());
        REQUIRE(m != nullptr);
        char* dst = rte_pktmbuf_append(m, static_cast<uint16_t>(n));
        REQUIRE(dst != nullptr);
        if (n)
            std::memcpy(dst, frame.data() + off, n);
        if (c.head == nullptr)
            c.head = m;
        else
            REQUIRE(rte_pktmbuf_chain(c.head, m) == 0);
        off += n;
        ++i;
    } while (off < frame.size());
    REQUIRE(rte_pktmbuf_pkt_len(c.head) == frame.size());
}

void check_same(const Packet& a, const Packet& b)
{
    CHECK(a.verdict == b.verdict);
    CHECK(a.key == b.key);
    CHECK(a.ip_len == b.ip_len);
    CHECK(a.l4_payload_len == b.l4_payload_len);
    CHECK(a.seq == b.seq);
    CHECK(a.ack == b.ack);
    CHECK(a.window == b.window);
    CHECK(a.sport == b.sport);
    CHECK(a.dport == b.dport);
    CHECK(a.vlan_outer == b.vlan_outer);
    CHECK(a.vlan_inner == b.vlan_inner);
    CHECK(a.tcp_flags == b.tcp_flags);
    CHECK(a.ip_version == b.ip_version);
    CHECK(a.l4_proto == b.l4_proto);
    CHECK(a.src_is_lo == b.src_is_lo);
}

} // namespace

// The common case: one segment, headers in place.
TEST_CASE("parse_mbuf on a single-segment mbuf equals parse on the same bytes", "[packet][mbuf]")
{
    const std::vector<std::vector<uint8_t>> frames = {
        FrameBuilder().ipv4().tcp({.seq = 42, .flags = packet::kTcpAck}).payload(100).build(),
        FrameBuilder().vlan(10).vlan(20).ipv6().ipv6_ext(0).tcp().payload(1).build(),
        FrameBuilder().ipv4().udp().pad_to(60).build(),
        FrameBuilder().ipv4({.frag_offset = 3}).next_protocol(6).payload(8).build(),
        std::vector<uint8_t>(10, 0xff), // shorter than Ethernet
    };
    for (const auto& f : frames) {
        CAPTURE(f.size());
        Chain c;
        make_chain(c, f, {f.size()});
        REQUIRE(c.head->nb_segs == 1);
        Packet via_mbuf;
        CHECK(packet::parse_mbuf(c.head, via_mbuf) == via_mbuf.verdict);
        check_same(via_mbuf, test::parse_bytes(f));
    }
}

// Headers split at every byte boundary, including an empty first segment: the copy path.
TEST_CASE("parse_mbuf with headers split across segments classifies like the span parser", "[packet][mbuf]")
{
    const std::vector<std::vector<uint8_t>> frames = {
        FrameBuilder().vlan(7).ipv4({.options = {1, 1, 1, 1}}).tcp({.sport = 9, .seq = 5}).payload(300).build(),
        FrameBuilder().ipv6().ipv6_frag(0, true).ipv6_ext(60, 16).tcp({.dport = 443}).payload(300).build(),
        FrameBuilder().ipv6().ipv6_ext(0, 184).tcp().payload(300).build(), // past the header cap
    };
    for (const auto& f : frames) {
        const Packet want = test::parse_bytes(f);
        for (size_t split = 0; split <= 120; ++split) {
            CAPTURE(f.size(), split);
            Chain c;
            make_chain(c, f, {split});
            Packet got;
            packet::parse_mbuf(c.head, got);
            check_same(got, want);
        }
        // Many tiny segments.
        Chain c;
        make_chain(c, f, std::vector<size_t>(200, 3));
        REQUIRE(c.head->nb_segs > 50);
        Packet got;
        packet::parse_mbuf(c.head, got);
        check_same(got, want);
    }
}

// frame_len is pkt_len, so a jumbo / BIG TCP frame's IP length (what byte counters count) is whole.
TEST_CASE("parse_mbuf counts the full pkt_len of an 80 kB multi-segment BIG TCP frame", "[packet][mbuf]")
{
    const auto f = FrameBuilder()
                       .ipv4({.total_length = 0})
                       .tcp({.flags = packet::kTcpAck | packet::kTcpPsh})
                       .payload(80000)
                       .build();
    REQUIRE(f.size() == 80054);
    for (size_t first : {2048, 54, 30}) {
        CAPTURE(first);
        Chain c;
        make_chain(c, f, {first});
        REQUIRE(c.head->nb_segs >= 40);
        Packet p;
        CHECK(packet::parse_mbuf(c.head, p) == Verdict::tcp);
        CHECK(p.ip_len == 80040);
        CHECK(p.l4_payload_len == 80000);
        CHECK(p.tcp_flags == (packet::kTcpAck | packet::kTcpPsh));
    }
    // A 9000-byte jumbo with a normal total length, headers in the first segment.
    const auto jumbo = FrameBuilder().ipv6().tcp().payload(8926).build();
    Chain c;
    make_chain(c, jumbo, {});
    Packet p;
    CHECK(packet::parse_mbuf(c.head, p) == Verdict::tcp);
    CHECK(p.ip_len == 8986);
    CHECK(p.l4_payload_len == 8926);
}
