// SPDX-License-Identifier: BSD-3-Clause
// DeltaTracker: a flow's interim and final records add up to its totals, whatever was lost between.
#include <ipfix/deltas.h>

#include <conntrack/flow_id.h>

#include <catch2/catch.hpp>

#include "helpers.h"

using namespace flowcop;
using ipfix::test::flow_event;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// Flow `slot` of generation `gen` with totals (p0, p1 packets, 100 bytes each) and last packet at `last_s`.
events::Event totals(events::Kind kind, uint32_t slot, uint32_t gen, uint16_t interims, uint64_t p0, uint64_t p1,
                     uint64_t last_s)
{
    events::Event e = flow_event(1);
    e.kind = kind;
    e.flow_id = conntrack::make_flow_id(gen, slot);
    e.present |= events::kHasFlowId;
    e.interims = interims;
    e.first_seen_ns = 1000 * kSecond;
    e.last_seen_ns = (1000 + last_s) * kSecond;
    e.packets[0] = p0;
    e.packets[1] = p1;
    e.bytes[0] = 100 * p0;
    e.bytes[1] = 100 * p1;
    return e;
}

struct Sum {
    uint64_t packets[2] = {}, bytes[2] = {};
    void add(const events::Event& e)
    {
        for (unsigned d = 0; d < 2; ++d) {
            packets[d] += e.packets[d];
            bytes[d] += e.bytes[d];
        }
    }
};

} // namespace

TEST_CASE("interim records and the final one add up to the flow's totals, each covering its own interval")
{
    ipfix::DeltaTracker t(64);
    Sum sum;
    auto i1 = totals(events::Kind::interim, 7, 1, 1, 10, 4, 59);
    t.apply(i1);
    CHECK(i1.packets[0] == 10); // the first record: everything so far, from the first packet
    CHECK(i1.first_seen_ns == 1000 * kSecond);
    sum.add(i1);
    auto i2 = totals(events::Kind::interim, 7, 1, 2, 25, 9, 119);
    t.apply(i2);
    CHECK(i2.packets[0] == 15);
    CHECK(i2.packets[1] == 5);
    CHECK(i2.bytes[0] == 1500);
    CHECK(i2.first_seen_ns == 1059 * kSecond); // starts where the previous record ended
    CHECK(i2.last_seen_ns == 1119 * kSecond);
    sum.add(i2);
    CHECK(t.tracked() == 1);
    auto end = totals(events::Kind::destroyed, 7, 1, 2, 30, 12, 130);
    t.apply(end);
    CHECK(end.packets[0] == 5);
    CHECK(end.first_seen_ns == 1119 * kSecond);
    sum.add(end);
    CHECK(sum.packets[0] == 30);
    CHECK(sum.packets[1] == 12);
    CHECK(sum.bytes[0] == 3000);
    CHECK(sum.bytes[1] == 1200);
    CHECK(t.tracked() == 0);
}

TEST_CASE("a lost interim event loses nothing: the next record carries its delta")
{
    ipfix::DeltaTracker t(64);
    Sum sum;
    auto i1 = totals(events::Kind::interim, 3, 9, 1, 10, 0, 59);
    t.apply(i1);
    sum.add(i1);
    // interim 2 (totals 20) was dropped on a full ring: never applied.
    auto i3 = totals(events::Kind::interim, 3, 9, 3, 35, 2, 179);
    t.apply(i3);
    CHECK(i3.packets[0] == 25);
    sum.add(i3);
    auto end = totals(events::Kind::destroyed, 3, 9, 3, 40, 2, 200);
    t.apply(end);
    sum.add(end);
    CHECK(sum.packets[0] == 40);
    CHECK(sum.packets[1] == 2);

    // Every interim lost: the final record is the whole flow.
    auto only_end = totals(events::Kind::destroyed, 4, 1, 5, 50, 5, 300);
    t.apply(only_end);
    CHECK(only_end.packets[0] == 50);
    CHECK(only_end.first_seen_ns == 1000 * kSecond);
}

TEST_CASE("flows never reported early, and events without a flow id, pass unchanged")
{
    ipfix::DeltaTracker t(64);
    auto plain = totals(events::Kind::destroyed, 1, 1, 0, 10, 10, 5);
    const auto before = plain;
    t.apply(plain);
    CHECK(std::memcmp(&plain, &before, sizeof plain) == 0);

    auto no_id = totals(events::Kind::interim, 1, 1, 1, 10, 10, 5);
    no_id.present &= uint8_t(~events::kHasFlowId);
    const auto before2 = no_id;
    t.apply(no_id);
    CHECK(std::memcmp(&no_id, &before2, sizeof no_id) == 0);
    CHECK(t.tracked() == 0);
}

TEST_CASE("a slot's newer flow replaces the entry of an older one whose final event was lost")
{
    ipfix::DeltaTracker t(64);
    auto old_flow = totals(events::Kind::interim, 5, 1, 1, 100, 100, 59);
    t.apply(old_flow);
    // Its destroy was lost; the slot now holds generation 2.
    auto next = totals(events::Kind::interim, 5, 2, 1, 3, 1, 59);
    t.apply(next);
    CHECK(next.packets[0] == 3); // not 3 - 100
    CHECK(t.tracked() == 1);
    auto next_end = totals(events::Kind::destroyed, 5, 2, 1, 4, 1, 70);
    t.apply(next_end);
    CHECK(next_end.packets[0] == 1);
    CHECK(t.tracked() == 0);
    // A destroy of a slot's flow removes a stale older entry too.
    t.apply(old_flow);
    auto other_end = totals(events::Kind::destroyed, 5, 3, 2, 9, 9, 10);
    t.apply(other_end);
    CHECK(other_end.packets[0] == 9);
    CHECK(t.tracked() == 0);
}

TEST_CASE("at its bound the tracker refuses a new flow's interim record whole, and that flow's next record carries "
          "its counts")
{
    ipfix::DeltaTracker t(2);
    Sum sum_a;
    auto a1 = totals(events::Kind::interim, 1, 1, 1, 10, 1, 59);
    auto b1 = totals(events::Kind::interim, 2, 1, 1, 20, 2, 59);
    CHECK(t.apply(a1));
    CHECK(t.apply(b1));
    sum_a.add(a1);
    CHECK(t.tracked() == 2);
    // A third flow: no room. Its record is left as it was (the caller drops it) and nothing is kept.
    auto c1 = totals(events::Kind::interim, 3, 1, 1, 30, 3, 59);
    const auto before = c1;
    CHECK_FALSE(t.apply(c1));
    CHECK(std::memcmp(&c1, &before, sizeof c1) == 0);
    CHECK(t.tracked() == 2);
    // Flows already tracked go on at the bound: their entries are updated, not added.
    auto a2 = totals(events::Kind::interim, 1, 1, 2, 25, 4, 119);
    CHECK(t.apply(a2));
    CHECK(a2.packets[0] == 15);
    sum_a.add(a2);
    // A slot's newer flow takes over its slot's entry, at the bound too.
    auto b_next = totals(events::Kind::interim, 2, 2, 1, 7, 0, 59);
    CHECK(t.apply(b_next));
    CHECK(b_next.packets[0] == 7);
    // The refused flow's final record: everything, from its first packet (the dropped interim's counts
    // are in it). Final records are never refused.
    auto c_end = totals(events::Kind::destroyed, 3, 1, 2, 40, 4, 130);
    CHECK(t.apply(c_end));
    CHECK(c_end.packets[0] == 40);
    CHECK(c_end.bytes[1] == 400);
    CHECK(c_end.first_seen_ns == 1000 * kSecond);
    // Once a flow ends its entry is free for a new one.
    auto a_end = totals(events::Kind::destroyed, 1, 1, 2, 26, 4, 125);
    CHECK(t.apply(a_end));
    sum_a.add(a_end);
    CHECK(sum_a.packets[0] == 26);
    CHECK(sum_a.packets[1] == 4);
    CHECK(t.tracked() == 1);
    auto d1 = totals(events::Kind::interim, 4, 1, 1, 5, 5, 59);
    CHECK(t.apply(d1));
    CHECK(t.tracked() == 2);
}

TEST_CASE("a tracker with no room exports every flow's final record whole")
{
    ipfix::DeltaTracker t(0);
    auto i1 = totals(events::Kind::interim, 9, 1, 1, 10, 1, 59);
    CHECK_FALSE(t.apply(i1));
    auto end = totals(events::Kind::destroyed, 9, 1, 1, 12, 2, 70);
    CHECK(t.apply(end));
    CHECK(end.packets[0] == 12);
    CHECK(t.tracked() == 0);
}
