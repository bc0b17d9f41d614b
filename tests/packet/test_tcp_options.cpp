// SPDX-License-Identifier: BSD-3-Clause
// TCP options as window tracking reads them (tcp_options.h): each option, the clamp, SACK's highest
// right edge, and netfilter's treatment of malformed option lists, through parse_tcp_options() and
// through both parse paths.
#include <catch2/catch.hpp>

#include <packet/packet.h>
#include <packet/tcp_options.h>

#include <algorithm>
#include <random>
#include <vector>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::kTcpOptPresent;
using packet::kTcpOptSackPerm;
using packet::kTcpOptScaleMask;
using packet::kTcpOptWscale;
using packet::parse_tcp_options;
using packet::TcpOptions;
using test::FrameBuilder;

namespace {

TcpOptions opts(const std::vector<uint8_t>& bytes, uint32_t ack = 1000)
{
    // An exact-size heap copy: ASan reports a read past the option bytes.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), buf.get());
    return parse_tcp_options(buf.get(), static_cast<uint32_t>(bytes.size()), ack);
}

void put32(std::vector<uint8_t>& v, uint32_t x)
{
    for (int s = 24; s >= 0; s -= 8)
        v.push_back(static_cast<uint8_t>(x >> s));
}

// A SACK option with the given (left, right) blocks.
std::vector<uint8_t> sack(std::initializer_list<std::pair<uint32_t, uint32_t>> blocks)
{
    std::vector<uint8_t> v{5, static_cast<uint8_t>(2 + 8 * blocks.size())};
    for (const auto& [l, r] : blocks) {
        put32(v, l);
        put32(v, r);
    }
    return v;
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

} // namespace

// A SYN's options as Linux sends them: MSS, SACK permitted, timestamp, NOP, window scale 7.
TEST_CASE("a Linux SYN's window scale and SACK permitted are read", "[packet][tcp_options]")
{
    const std::vector<uint8_t> syn = {2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
    const TcpOptions o = opts(syn);
    CHECK(o.bits == (kTcpOptPresent | kTcpOptSackPerm | kTcpOptWscale | 7));
    CHECK(o.sack == 1000);
}

// RFC 7323 2.3: a shift above 14 is used as 14 (netfilter's TCP_MAX_WSCALE).
TEST_CASE("a window scale above 14 is clamped to 14", "[packet][tcp_options]")
{
    for (uint8_t shift : {14, 15, 200, 255}) {
        CAPTURE(shift);
        const TcpOptions o = opts({3, 3, shift, 0});
        CHECK((o.bits & kTcpOptScaleMask) == 14);
        CHECK((o.bits & kTcpOptWscale) != 0);
    }
    CHECK((opts({3, 3, 0, 0}).bits & (kTcpOptWscale | kTcpOptScaleMask)) == kTcpOptWscale);
}

// netfilter's tcp_sack(): the highest right edge of the blocks, compared after the ack, so a block
// below the ack never lowers it and blocks across 2^32 compare by wraparound order.
TEST_CASE("sack is the highest SACK right edge by wraparound order, or the ack", "[packet][tcp_options]")
{
    CHECK(opts({1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}).sack == 1000); // timestamp only
    CHECK(opts(cat({1, 1}, sack({{2000, 3000}}))).sack == 3000);
    CHECK(opts(cat({1, 1}, sack({{5000, 6000}, {2000, 3000}, {7000, 8000}}))).sack == 8000);
    CHECK(opts(cat({1, 1}, sack({{100, 500}}))).sack == 1000); // a D-SACK below the ack
    CHECK(opts(cat({1, 1}, sack({{0xfffffff0u, 0x10}})), 0xffffff00u).sack == 0x10);
    CHECK(opts(cat({1, 1}, sack({{0x10, 0x20}, {0xfffffff0u, 0xfffffff8u}})), 0xffffff00u).sack == 0x20);
}

// Only the first well-formed SACK option counts (netfilter returns after it); a malformed one is
// skipped over like any unknown option.
TEST_CASE("only the first well-formed SACK option is read", "[packet][tcp_options]")
{
    CHECK(opts(cat(sack({{2000, 3000}}), sack({{2000, 9000}}))).sack == 3000);
    const std::vector<uint8_t> bad_len = {5, 6, 0, 0, 0x07, 0xd0}; // 2 + 4: not a whole block
    CHECK(opts(cat(bad_len, sack({{2000, 4000}}))).sack == 4000);
    CHECK(opts({5, 2}).sack == 1000); // no block at all
}

// Malformed lists: netfilter stops at the first "silly" (length < 2) or partial option and keeps
// what it read before; EOL ends the list; nothing is read past the bytes given.
TEST_CASE("malformed options end the walk and keep what was read before them", "[packet][tcp_options]")
{
    CHECK(opts({4, 2, 3, 1}).bits == (kTcpOptPresent | kTcpOptSackPerm));             // partial window scale
    CHECK(opts({4, 2, 3, 0, 7, 0}).bits == (kTcpOptPresent | kTcpOptSackPerm));       // length 0
    CHECK(opts({4, 2, 9, 1, 3, 3, 7, 0}).bits == (kTcpOptPresent | kTcpOptSackPerm)); // length 1
    CHECK(opts({4, 2, 0, 3, 3, 7}).bits == (kTcpOptPresent | kTcpOptSackPerm));       // after EOL: unread
    CHECK(opts({1, 1, 1, 3}).bits == kTcpOptPresent);                             // a kind in the last byte, no length
    CHECK(opts({3, 4, 7, 0, 4, 2}).bits == (kTcpOptPresent | kTcpOptSackPerm));   // wrong-size wscale skipped
    CHECK(opts({4, 3, 0, 3, 3, 2}).bits == (kTcpOptPresent | kTcpOptWscale | 2)); // wrong-size SACK-perm
    CHECK(opts(cat({1, 1, 8, 10, 0, 0}, sack({{2000, 3000}}))).sack == 1000);     // SACK swallowed by a partial TS
    CHECK(opts({}).bits == 0);
    CHECK(opts({}, 77).sack == 77);
}

// Random option bytes of every length 0..40: never a read out of bounds (ASan), the scale never above
// 14, kTcpOptPresent exactly when there were option bytes. (The SACK edge need not be after the ack:
// like netfilter's, the walk keeps each edge after the best so far, and that order is not transitive.)
TEST_CASE("random option bytes are read within bounds", "[packet][tcp_options]")
{
    std::mt19937 rng(0x0b7);
    unsigned bad = 0;
    for (int i = 0; i < 200000; ++i) {
        std::vector<uint8_t> v(rng() % 41);
        for (auto& b : v)
            b = rng() % 3 == 0 ? static_cast<uint8_t>(rng() % 6) : static_cast<uint8_t>(rng());
        const uint32_t ack = rng();
        const TcpOptions o = opts(v, ack);
        if ((o.bits & kTcpOptScaleMask) > 14 || ((o.bits & kTcpOptPresent) != 0) != !v.empty())
            ++bad;
    }
    CHECK(bad == 0);
}

// Both parse paths fill tcp_opt and sack; a header without options leaves tcp_opt 0 and sack == ack.
TEST_CASE("parse fills tcp_opt and sack on IPv4 and IPv6", "[packet][tcp_options]")
{
    const std::vector<uint8_t> syn = {2, 4, 5, 0xb4, 4, 2, 1, 3, 3, 9};
    for (bool v6 : {false, true}) {
        CAPTURE(v6);
        auto frame = [&](const test::TcpSpec& t) {
            FrameBuilder b;
            if (v6)
                b.ipv6();
            else
                b.vlan(3).ipv4(); // the general path for IPv4 too
            return test::parse_bytes(b.tcp(t).build());
        };
        auto padded = syn;
        padded.resize(12, 0);
        const auto s = frame({.ack = 5, .options = padded});
        CHECK(s.tcp_opt == (kTcpOptPresent | kTcpOptSackPerm | kTcpOptWscale | 9));
        CHECK(s.sack == 5);
        auto sk = cat({1, 1}, sack({{100, 200}, {300, 400}}));
        const auto a = frame({.ack = 50, .flags = packet::kTcpAck, .options = sk});
        CHECK(a.tcp_opt == kTcpOptPresent);
        CHECK(a.sack == 400);
        const auto plain = frame({.ack = 50, .flags = packet::kTcpAck});
        CHECK(plain.tcp_opt == 0);
        CHECK(plain.sack == 50);
    }
    // The fast path (untagged IPv4) agrees, including Linux's timestamp-only shortcut.
    const auto ts = test::parse_bytes(
        FrameBuilder().ipv4().tcp({.ack = 9, .flags = 0x10, .options = {1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8}}).build());
    CHECK(ts.tcp_opt == kTcpOptPresent);
    CHECK(ts.sack == 9);
    const auto fast = test::parse_bytes(
        FrameBuilder().ipv4().tcp({.ack = 9, .flags = 0x10, .options = cat({1, 1}, sack({{10, 90}}))}).build());
    CHECK(fast.sack == 90);
}
