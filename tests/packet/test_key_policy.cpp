// SPDX-License-Identifier: BSD-3-Clause
// --vlan-key (key_policy.h) and the VLAN tag count parse() reports.
#include <catch2/catch.hpp>

#include <packet/key_policy.h>

#include "frame_builder.h"
#include "parse_helpers.h"

using namespace flowcop;
using packet::VlanKey;
using test::FrameBuilder;

namespace {

packet::Packet tagged(std::initializer_list<uint16_t> vids, VlanKey mode)
{
    FrameBuilder b;
    for (uint16_t v : vids)
        b.vlan(v, v == *vids.begin() && vids.size() > 1 ? 0x88a8 : 0x8100);
    auto p = test::parse_bytes(b.ipv4().tcp().build());
    packet::apply_vlan_key(p, mode);
    return p;
}

} // namespace

TEST_CASE("vlan_tags counts every tag, also those beyond the key's two", "[packet][vlan]")
{
    CHECK(test::parse_bytes(FrameBuilder().ipv4().tcp().build()).extra.vlan_tags == 0);
    CHECK(tagged({10}, VlanKey::both).extra.vlan_tags == 1);
    CHECK(tagged({10, 20}, VlanKey::both).extra.vlan_tags == 2);
    const auto three = tagged({10, 20, 30}, VlanKey::both);
    CHECK(three.extra.vlan_tags == 3);
    CHECK(three.key == tagged({10, 20, 31}, VlanKey::both).key); // the third is outside the key
    CHECK(tagged({10, 20, 30, 40}, VlanKey::both).extra.vlan_tags == 4);
}

TEST_CASE("--vlan-key both keeps both IDs, outer only the outer, none neither", "[packet][vlan]")
{
    const auto untagged = tagged({}, VlanKey::both);
    // both: every combination is its own flow.
    CHECK_FALSE(tagged({10}, VlanKey::both).key == untagged.key);
    CHECK_FALSE(tagged({10, 20}, VlanKey::both).key == tagged({10, 21}, VlanKey::both).key);
    // outer: the inner tag no longer matters, the outer still does.
    CHECK(tagged({10, 20}, VlanKey::outer).key == tagged({10}, VlanKey::outer).key);
    CHECK(tagged({10, 20}, VlanKey::outer).key == tagged({10, 21}, VlanKey::outer).key);
    CHECK_FALSE(tagged({10, 20}, VlanKey::outer).key == tagged({11, 20}, VlanKey::outer).key);
    CHECK(packet::key_vlan_outer(tagged({0xabc, 0xdef}, VlanKey::outer).key) == 0xabc);
    CHECK(packet::key_vlan_inner(tagged({0xabc, 0xdef}, VlanKey::outer).key) == 0);
    // none: a link tagged in one direction only keeps one flow.
    CHECK(tagged({10}, VlanKey::none).key == untagged.key);
    CHECK(tagged({4095, 4095}, VlanKey::none).key == untagged.key);
    // What was on the wire is still reported.
    const auto p = tagged({10, 20}, VlanKey::none);
    CHECK(p.vlan_outer == 10);
    CHECK(p.vlan_inner == 20);
}

TEST_CASE("--vlan-key values parse exactly and name themselves", "[packet][vlan]")
{
    for (VlanKey m : {VlanKey::both, VlanKey::outer, VlanKey::none}) {
        VlanKey got = VlanKey::both;
        CHECK(packet::parse_vlan_key(packet::vlan_key_name(m), got));
        CHECK(got == m);
    }
    VlanKey unchanged = VlanKey::outer;
    for (const char* bad : {"", "Both", "inner", "none ", "all"}) {
        CAPTURE(bad);
        CHECK_FALSE(packet::parse_vlan_key(bad, unchanged));
    }
    CHECK(unchanged == VlanKey::outer);
    CHECK(std::string(packet::vlan_key_name(static_cast<VlanKey>(7))) == "unknown");
}
