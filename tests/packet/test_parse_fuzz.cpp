// SPDX-License-Identifier: BSD-3-Clause
// Robustness: every prefix and many random mutations of valid frames are classified,
// deterministically, without reading out of bounds (run under the ASan build).
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <string>

#include <packet/lane_isa.h>
#include <packet/packet.h>
#include <packet/parse_internal.h> // white box: the fast path against the general one
#include <packet/tcp_lite.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::Packet;
using packet::Verdict;
using test::FrameBuilder;

namespace {

// packet::parse_tcp_lite() compiled as the lane's v3 copy compiles it (app::Worker::handle_lite_v3).
FLOWCOP_LANE_V3_CODE [[gnu::noinline]] bool read_lite_v3(const uint8_t* b, uint32_t len, uint32_t frame_len,
                                                         packet::TcpLite& out)
{
    return packet::parse_tcp_lite(b, len, frame_len, out);
}

std::vector<std::vector<uint8_t>> seed_frames()
{
    std::vector<std::vector<uint8_t>> s;
    s.push_back(FrameBuilder().ipv4().tcp().payload(20).build());
    s.push_back(FrameBuilder().ipv4({.options = {1, 1, 1, 1, 1, 1, 1, 0}}).tcp({.options = {2, 4, 5, 0xb4}}).build());
    s.push_back(FrameBuilder().vlan(1).vlan(2, 0x88a8).vlan(3).ipv4({.more_fragments = true}).udp().payload(8).build());
    s.push_back(FrameBuilder().ipv4().icmp().pad_to(60).build());
    s.push_back(FrameBuilder().ipv6().tcp().payload(10).build());
    s.push_back(FrameBuilder()
                    .vlan(7)
                    .ipv6()
                    .ipv6_ext(0)
                    .ipv6_ext(43, 24)
                    .ipv6_frag(0, true)
                    .ipv6_ah()
                    .ipv6_ext(60)
                    .tcp()
                    .build());
    s.push_back(FrameBuilder().ipv6().ipv6_frag(3, false).next_protocol(6).payload(16).build());
    s.push_back(FrameBuilder().ipv6().ipv6_ext(0, 160).tcp().payload(30).build()); // near the header-byte cap
    s.push_back(FrameBuilder().ipv6().icmp().build());
    s.push_back(FrameBuilder().ethertype(0x0806).payload(28).build());
    // ICMP errors and their quotes, and an IPv6 first fragment.
    s.push_back(FrameBuilder()
                    .vlan(9)
                    .ipv4()
                    .icmp({.type = 3, .code = 3, .rest = 0})
                    .quote(FrameBuilder().ipv4({.options = {1, 1, 1, 0}}).udp().payload(20), 40)
                    .build());
    s.push_back(FrameBuilder()
                    .ipv6()
                    .icmp({.type = 1, .rest = 0})
                    .quote(FrameBuilder().ipv6().ipv6_ext(0).ipv6_frag(0, true).tcp().payload(20))
                    .build());
    s.push_back(FrameBuilder().ipv4().icmp({.type = 11, .rest = 0}).quote(FrameBuilder().ipv4().icmp()).build());
    s.push_back(FrameBuilder().ipv6().icmp({.type = 136}).payload(16).build());
    s.push_back(FrameBuilder().ipv6().ipv6_frag(0, true, 99).udp().payload(100).build());
    return s;
}

// Invariants every classification must satisfy, whatever the input. Returns the
// first broken one (nullptr if none): assertions are counted once per test, not per
// input, since the TAP reporter prints every assertion.
const char* broken_invariant(const uint8_t* f, uint32_t len, const Packet& p, Verdict v)
{
    if (v != p.verdict)
        return "return value != out.verdict";
    if (static_cast<unsigned>(v) >= packet::kVerdictCount)
        return "verdict out of range";
    if (p.ip_len > len)
        return "ip_len > frame";
    if ((p.ip_len != 0) != (p.ip_version != 0))
        return "ip_len without an IP header, or an IP header without ip_len";
    if (p.l4_payload_len > len)
        return "l4_payload_len > frame";
    if (v == Verdict::tcp && ((p.ip_version != 4 && p.ip_version != 6) || p.key.proto != 6 || p.l4_proto != 6))
        return "tcp verdict without IP/TCP fields";
    if (p.ip_version == 0 && !(v == Verdict::non_ip || v == Verdict::truncated_l2 || v == Verdict::truncated_l3 ||
                               v == Verdict::ip_bad_version || v == Verdict::ipv4_bad_ihl ||
                               v == Verdict::ip_bad_total_length || v == Verdict::vlan_too_deep))
        return "an IP-level verdict without ip_version";
    const bool icmp_class =
        v == Verdict::icmp || v == Verdict::icmp_error || v == Verdict::icmp_other || v == Verdict::icmp_bad_quote;
    if (icmp_class && p.l4_proto != (p.ip_version == 6 ? 58 : 1))
        return "an ICMP verdict without ICMP of its IP version";
    if ((v == Verdict::fragment) != (p.extra.frag_offset != 0))
        return "a fragment verdict is exactly a non-zero fragment offset";
    if (p.extra.vlan_tags > packet::kMaxVlanTags)
        return "more VLAN tags counted than the limit";
    // The general path alone must give the same bytes, whether or not the fast path took the frame.
    Packet g;
    std::memset(&g, 0x5a, sizeof g);
    packet::detail::parse_general(f, len < packet::kMaxHeaderBytes ? len : packet::kMaxHeaderBytes, len, g);
    if (std::memcmp(&g, &p, sizeof p) != 0)
        return "parse() differs from the general path alone (the IPv4/TCP fast path disagrees)";
    // The core with only the capped front of the frame must agree exactly (parse_mbuf's contract).
    Packet q;
    const uint32_t hdr = len < packet::kMaxHeaderBytes ? len : packet::kMaxHeaderBytes;
    std::unique_ptr<uint8_t[]> front(new uint8_t[hdr]);
    if (hdr)
        std::memcpy(front.get(), f, hdr);
    packet::parse(front.get(), hdr, len, q);
    if (std::memcmp(&q, &p, sizeof p) != 0)
        return "parse(front, cap, len) differs from parse(frame, len)";
    return nullptr;
}

struct Tally {
    unsigned hist[packet::kVerdictCount] = {};
    unsigned inputs = 0;
    unsigned failures = 0;
    std::string first_failure;

    void run(const std::vector<uint8_t>& in, size_t n)
    {
        std::unique_ptr<uint8_t[]> buf(new uint8_t[n]); // exact size: ASan catches overreads
        if (n)
            std::memcpy(buf.get(), in.data(), n);
        // Garbage first: a byte either path leaves unwritten then differs between them.
        Packet p;
        std::memset(&p, 0xa5, sizeof p);
        const Verdict v = packet::parse(buf.get(), static_cast<uint32_t>(n), p);
        ++inputs;
        if (const char* why = broken_invariant(buf.get(), static_cast<uint32_t>(n), p, v)) {
            if (failures++ == 0) {
                first_failure = std::string(why) + " for input of " + std::to_string(n) + " bytes:";
                for (size_t i = 0; i < n; ++i)
                    first_failure += " " + std::to_string(buf[i]);
            }
        }
        if (static_cast<unsigned>(v) < packet::kVerdictCount)
            ++hist[static_cast<unsigned>(v)];
    }
    unsigned count(Verdict v) const { return hist[static_cast<unsigned>(v)]; }
};

} // namespace

// Off-by-one truncation at every byte of every layer.
TEST_CASE("every prefix of valid frames is classified without overreads", "[packet][fuzz]")
{
    Tally t;
    for (const auto& f : seed_frames())
        for (size_t n = 0; n <= f.size(); ++n)
            t.run(f, n);
    INFO(t.first_failure);
    CHECK(t.failures == 0);
    // Prefixes must exercise each truncation class, not just land in one bucket.
    CHECK(t.count(Verdict::truncated_l2) > 0);
    CHECK(t.count(Verdict::truncated_l3) > 0);
    CHECK(t.count(Verdict::ipv6_ext_truncated) == 0); // prefixes cut the frame, not the IPv6 payload
    CHECK(t.count(Verdict::ip_bad_total_length) > 0);
    CHECK(t.count(Verdict::tcp) > 0);
}

// 100k random mutations (fixed seed): byte flips, length-field hits, resizes.
TEST_CASE("100k random mutations of valid frames are classified without overreads", "[packet][fuzz]")
{
    std::mt19937_64 rng(0xf10c0b);
    const auto seeds = seed_frames();
    Tally t;
    for (int i = 0; i < 100000; ++i) {
        std::vector<uint8_t> f = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 6);
        for (int e = 0; e < edits; ++e) {
            switch (rng() % 5) {
            case 0:
            case 1: // random byte anywhere
                if (!f.empty())
                    f[rng() % f.size()] = static_cast<uint8_t>(rng());
                break;
            case 2: // header region, where lengths and types live
                if (f.size() > 14)
                    f[12 + rng() % std::min<size_t>(f.size() - 12, 80)] = static_cast<uint8_t>(rng());
                break;
            case 3: // truncate
                f.resize(rng() % (f.size() + 1));
                break;
            default: // extend with junk (or padding)
                f.resize(f.size() + rng() % 64, static_cast<uint8_t>(rng()));
                break;
            }
        }
        t.run(f, f.size());
    }
    INFO(t.first_failure);
    CHECK(t.inputs == 100000);
    CHECK(t.failures == 0);
    unsigned classes = 0;
    for (unsigned c : t.hist)
        classes += c > 0;
    CAPTURE(classes);
    CHECK(classes >= 12); // mutations reach nearly every verdict
}

// The IPv4/TCP fast path (parse_internal.h) must take only frames it fills exactly as the general
// path does: mutations of its own header bytes, each either taken (and equal) or left to the general
// path. broken_invariant() compares the two on every input of every test here.
TEST_CASE("the IPv4/TCP fast path and the general path agree on mutated IPv4/TCP frames", "[packet][fuzz]")
{
    std::mt19937_64 rng(0xfa57);
    const std::vector<std::vector<uint8_t>> seeds = {
        FrameBuilder().ipv4().tcp().payload(6).build(),
        FrameBuilder().ipv4().tcp({.options = {2, 4, 5, 0xb4}}).build(),
        FrameBuilder().ipv4().tcp().pad_to(60).build(),
    };
    Tally t;
    unsigned taken = 0, declined = 0;
    // The endpoint order's tie-breaks, which random bytes almost never hit: equal addresses, then
    // ports lower, higher and equal.
    for (const auto& [sport, dport] : {std::pair<uint16_t, uint16_t>{1, 2}, {2, 1}, {7, 7}}) {
        const auto f = FrameBuilder()
                           .ipv4({.src = {192, 0, 2, 9}, .dst = {192, 0, 2, 9}})
                           .tcp({.sport = sport, .dport = dport})
                           .build();
        Packet p;
        const uint32_t len = static_cast<uint32_t>(f.size());
        (packet::detail::parse_ipv4_tcp_fast(f.data(), len, len, p) ? taken : declined)++;
        t.run(f, f.size());
    }
    CHECK(taken == 3);
    for (int i = 0; i < 100000; ++i) {
        std::vector<uint8_t> f = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            const size_t at = 12 + rng() % 44; // ethertype .. end of the TCP fixed header
            if (rng() % 4 == 0)
                f.resize(rng() % (f.size() + 8), 0);
            else if (at < f.size())
                f[at] = rng() % 2 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(f[at] ^ (1u << (rng() % 8)));
        }
        Packet p;
        const uint32_t len = static_cast<uint32_t>(f.size());
        (packet::detail::parse_ipv4_tcp_fast(f.data(), std::min(len, packet::kMaxHeaderBytes), len, p) ? taken
                                                                                                       : declined)++;
        t.run(f, f.size());
    }
    INFO(t.first_failure);
    CHECK(t.failures == 0);
    CAPTURE(taken, declined);
    CHECK(taken > 10000);    // the fast path is exercised ...
    CHECK(declined > 10000); // ... and so is its refusal of everything else
}

// The same with options: mutations anywhere in a TCP header that carries window scale, SACK
// permitted, timestamps or SACK blocks (tcp_options.h), so the option walk and the timestamp shortcut
// of both paths meet malformed lists, and the data offset moves over them.
TEST_CASE("the fast and general paths agree on mutated TCP options", "[packet][fuzz]")
{
    std::mt19937_64 rng(0x0b75);
    const std::vector<std::vector<uint8_t>> seeds = {
        FrameBuilder()
            .ipv4()
            .tcp({.options = {2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7}})
            .build(),
        FrameBuilder().ipv4().tcp({.flags = 0x10, .options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}}).payload(3).build(),
        FrameBuilder()
            .ipv4()
            .tcp({.ack = 5, .flags = 0x10, .options = {1, 1, 5, 18, 0, 0, 0, 9, 0, 0, 0, 20, 0, 0, 0, 30, 0, 0, 0, 40}})
            .build(),
    };
    Tally t;
    unsigned taken = 0, with_opts = 0;
    for (int i = 0; i < 100000; ++i) {
        std::vector<uint8_t> f = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const size_t at = 46 + rng() % (f.size() - 46); // the data offset byte .. the end of the options
            f[at] = rng() % 2 ? static_cast<uint8_t>(rng() % 6) : static_cast<uint8_t>(rng());
        }
        Packet p;
        const uint32_t len = static_cast<uint32_t>(f.size());
        taken += packet::detail::parse_ipv4_tcp_fast(f.data(), len, len, p);
        with_opts += (p.tcp_opt & (packet::kTcpOptWscale | packet::kTcpOptSackPerm)) != 0 || p.sack != p.ack;
        t.run(f, f.size());
    }
    INFO(t.first_failure);
    CHECK(t.failures == 0);
    CAPTURE(taken, with_opts);
    CHECK(taken > 30000);
    CHECK(with_opts > 10000);
}

// Classification is a pure function of the bytes.
TEST_CASE("parse is deterministic and overwrites every field of a reused Packet", "[packet][fuzz]")
{
    const auto tcp = FrameBuilder().vlan(5).ipv4().tcp({.seq = 77}).payload(9).build();
    const auto arp = FrameBuilder().ethertype(0x0806).payload(28).build();
    Packet fresh, reused;
    packet::parse(arp.data(), static_cast<uint32_t>(arp.size()), fresh);
    std::memset(&reused, 0xa5, sizeof reused);
    packet::parse(tcp.data(), static_cast<uint32_t>(tcp.size()), reused);
    packet::parse(arp.data(), static_cast<uint32_t>(arp.size()), reused);
    CHECK(std::memcmp(&fresh, &reused, sizeof fresh) == 0);
    CHECK(packet::parse(nullptr, 0, fresh) == Verdict::truncated_l2);
}

// The core's precondition (hdr_len >= min(frame_len, cap)) broken: it still never reads
// past hdr_len and names the layer it could not read, while lengths use frame_len.
TEST_CASE("the core given fewer header bytes than the frame classifies truncation at that layer", "[packet][core]")
{
    const auto f = FrameBuilder().vlan(2).ipv4().tcp().payload(100).build();
    Packet p;
    for (uint32_t hdr = 0; hdr < 18; ++hdr) {
        CAPTURE(hdr);
        std::unique_ptr<uint8_t[]> front(new uint8_t[hdr]);
        std::memcpy(front.get(), f.data(), hdr);
        CHECK(packet::parse(front.get(), hdr, static_cast<uint32_t>(f.size()), p) == Verdict::truncated_l2);
        CHECK(p.ip_len == 0);
    }
    std::unique_ptr<uint8_t[]> front(new uint8_t[f.size()]);
    std::memcpy(front.get(), f.data(), f.size());
    CHECK(packet::parse(front.get(), 37, static_cast<uint32_t>(f.size()), p) == Verdict::truncated_l3);
    CHECK(packet::parse(front.get(), 57, static_cast<uint32_t>(f.size()), p) == Verdict::truncated_l4);
    CHECK(packet::parse(front.get(), 58, static_cast<uint32_t>(f.size()), p) == Verdict::tcp);
    CHECK(p.l4_payload_len == 100);   // from the IP length, not from the bytes given
    CHECK(p.ip_len == 20 + 20 + 100); // the IP packet: not the Ethernet header nor the tag
}

// The reader's kind test (packet::kLiteKind): of every combination of FIN, SYN, RST, PSH, ACK and URG, it
// takes exactly those with ACK and none of SYN, FIN and RST, as lite_of() does from the parsed Packet,
// with and without the timestamp option, in both readers.
TEST_CASE("the steady lane's reader takes a plain ACK's kind only", "[packet][lite]")
{
    for (unsigned flags = 0; flags < 64; ++flags) {
        for (const bool ts : {false, true}) {
            CAPTURE(flags, ts);
            test::TcpSpec spec{.flags = static_cast<uint8_t>(flags)};
            if (ts)
                spec.options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
            const auto f = FrameBuilder().ipv4().tcp(spec).payload(5).build();
            const auto len = static_cast<uint32_t>(f.size());
            const bool plain_ack = (flags & 0x17) == 0x10;
            packet::TcpLite t{};
            CHECK(packet::detail::parse_tcp_lite_portable(f.data(), len, len, t) == plain_ack);
#if defined(__SSE4_2__)
            CHECK(packet::detail::parse_tcp_lite_sse(f.data(), len, len, t) == plain_ack);
#endif
            Packet p;
            REQUIRE(packet::parse(f.data(), len, p) == Verdict::tcp);
            CHECK(packet::lite_of(p, t) == plain_ack);
        }
    }
}

#if defined(__x86_64__) && !defined(__SSE4_2__)
#error "tests/packet/meson.build builds this test with -msse4.2, so the worker's vector reader is checked"
#endif

// The steady lane's reader (tcp_lite.h) against parse() on mutated IPv4/TCP frames: a frame it takes is
// one parse() keys and reads the same (its key is lite_key(), every field a Packet has equal), with
// tcp_opt 0 or the timestamp-only kTcpOptPresent; it takes bare and timestamp-only headers, padded or
// not, and declines every other option list, VLAN tag, IP option, fragment and length it must.
TEST_CASE("the steady lane's reader takes only frames parse() reads the same", "[packet][fuzz][lite]")
{
    std::mt19937_64 rng(0x117e);
    const std::vector<std::vector<uint8_t>> seeds = {
        FrameBuilder().ipv4().tcp({.flags = 0x10}).payload(6).build(),
        FrameBuilder().ipv4().tcp({.flags = 0x18}).pad_to(60).build(),
        FrameBuilder().ipv4().tcp({.flags = 0x10, .options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}}).payload(3).build(),
        FrameBuilder().ipv4().tcp({.ack = 5, .flags = 0x10, .options = {1, 1, 5, 10, 0, 0, 0, 9, 0, 0, 0, 20}}).build(),
        FrameBuilder().vlan(7).ipv4().tcp({.flags = 0x10}).build(),
        // The key's order each way: the reply's direction, an address's top bit, and equal addresses
        // with the ports deciding (or equal too).
        FrameBuilder().ipv4({.src = {10, 0, 0, 2}, .dst = {10, 0, 0, 1}}).tcp({.flags = 0x10}).payload(1).build(),
        FrameBuilder()
            .ipv4({.src = {200, 1, 2, 3}, .dst = {10, 1, 2, 3}})
            .tcp({.sport = 1, .dport = 65535, .flags = 0x10})
            .build(),
        FrameBuilder()
            .ipv4({.src = {10, 0, 0, 7}, .dst = {10, 0, 0, 7}})
            .tcp({.sport = 80, .dport = 40000, .flags = 0x10})
            .build(),
        FrameBuilder()
            .ipv4({.src = {10, 0, 0, 7}, .dst = {10, 0, 0, 7}})
            .tcp({.sport = 40000, .dport = 80, .flags = 0x10, .options = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}})
            .build(),
        FrameBuilder()
            .ipv4({.src = {10, 0, 0, 7}, .dst = {10, 0, 0, 7}})
            .tcp({.sport = 9, .dport = 9, .flags = 0x10})
            .build(),
        // Not a plain ACK: declined unless a mutation makes it one.
        FrameBuilder().ipv4().tcp({.flags = 0x11}).build(),
    };
    unsigned taken = 0, declined = 0, with_ts = 0, differs_between = 0;
    std::string first_failure;
    for (int i = 0; i < 100000 && first_failure.empty(); ++i) {
        std::vector<uint8_t> f = seeds[rng() % seeds.size()];
        const int edits = static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && f.size() > 12; ++e) {
            const size_t at = 12 + rng() % (f.size() - 12);
            if (rng() % 6 == 0)
                f.resize(rng() % (f.size() + 8), 0);
            else if (at < f.size())
                f[at] = rng() % 2 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(f[at] ^ (1u << (rng() % 8)));
        }
        const auto len = static_cast<uint32_t>(f.size());
        std::unique_ptr<uint8_t[]> buf(new uint8_t[len + 1]); // exact size (+1 for len 0): ASan sees overreads
        if (len)
            std::memcpy(buf.get(), f.data(), len);
        // The readable bytes may be fewer than the frame (a first segment): both lengths move.
        const uint32_t readable = rng() % 4 == 0 ? static_cast<uint32_t>(rng() % (len + 1)) : len;
        // Every reader from a garbage prefill: the portable one, and the vector one where it is built
        // (this test is, on x86-64: tests/packet/meson.build); they agree on every frame, to the byte.
        packet::TcpLite t;
        std::memset(&t, 0xa5, sizeof t);
        const bool took = packet::detail::parse_tcp_lite_portable(buf.get(), readable, len, t);
#if defined(__SSE4_2__)
        packet::TcpLite v;
        std::memset(&v, 0x5a, sizeof v);
        if (packet::detail::parse_tcp_lite_sse(buf.get(), readable, len, v) != took ||
            (took && std::memcmp(&v, &t, sizeof t) != 0))
            differs_between += 1;
#endif
        // The vector reader as the lane's v3 copy compiles it (packet/lane_isa.h), where this CPU runs it.
        if (packet::lane_isa_runs(packet::LaneIsa::v3)) {
            packet::TcpLite w;
            std::memset(&w, 0x3c, sizeof w);
            if (read_lite_v3(buf.get(), readable, len, w) != took || (took && std::memcmp(&w, &t, sizeof t) != 0))
                differs_between += 1;
        }
        if (!took) {
            ++declined;
            continue;
        }
        ++taken;
        Packet p;
        packet::parse(buf.get(), len, p);
        const auto differs = [&](const char* what) {
            if (first_failure.empty()) {
                first_failure = std::string(what) + " for input of " + std::to_string(len) + " bytes:";
                for (uint8_t b : f)
                    first_failure += " " + std::to_string(b);
            }
        };
        if (p.verdict != Verdict::tcp)
            differs("taken, but parse() does not say tcp");
        else if (!(p.key == packet::lite_key(t)))
            differs("the key differs");
        else if (p.seq != t.seq || p.ack != t.ack || p.sack != t.sack || p.window != t.window || p.ip_len != t.ip_len ||
                 p.l4_payload_len != t.l4_payload_len || p.tcp_flags != t.tcp_flags ||
                 t.src_lo_bit != (p.src_is_lo ? packet::kLiteSrcIsLo : 0))
            differs("a field differs");
        else if (p.tcp_opt != 0 && p.tcp_opt != packet::kTcpOptPresent)
            differs("an option parse() reads was taken");
        else if (p.vlan_outer != 0 || p.extra.vlan_tags != 0 || p.extra.frag_flags != 0)
            differs("a tagged frame or a fragment was taken");
        else if ((p.tcp_flags & packet::kLiteKind) != packet::kLiteKindAck)
            differs("a SYN, FIN or RST, or a segment without ACK, was taken");
        packet::TcpLite back{};
        if (!packet::lite_of(p, back) || std::memcmp(&back, &t, sizeof t) != 0)
            differs("lite_of() of the parsed Packet differs from the reader's");
        with_ts += p.tcp_opt == packet::kTcpOptPresent;
    }
    INFO(first_failure);
    CHECK(first_failure.empty());
    CHECK(differs_between == 0);
    CAPTURE(taken, declined, with_ts);
    CHECK(taken > 20000);
    CHECK(declined > 20000);
    CHECK(with_ts > 5000);
}
