// SPDX-License-Identifier: BSD-3-Clause
// FlowTable::export_slice / restore_flow / finish_restore (flow_image.h, issue 32) on a virtual clock:
// a flow exported and restored into a new table is the same flow (key, state, window, counters, times,
// id) and goes on being tracked; the id rule on slot collisions; deadlines re-armed from last seen, so
// the downtime counts; flows that do not fit or are out of range are refused, never half-restored.
#include "harness.h"

#include <conntrack/flow_id.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <vector>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::FlowImage;
using conntrack::FlowSnapshot;
using conntrack::Reason;
using conntrack::RestoreOutcome;
using conntrack::TimeBase;

namespace {

std::vector<FlowSnapshot> listing(const conntrack::FlowTable& t)
{
    std::vector<FlowSnapshot> all(t.capacity());
    all.resize(t.snapshot(conntrack::SnapshotFilter{}, all.data(), all.size()));
    return all;
}

// Restores images into h's table as the service does: own slots, then the renumbered ones.
std::vector<RestoreOutcome> restore_all(Harness& h, const std::vector<FlowImage>& images, TimeBase base = {})
{
    std::vector<RestoreOutcome> out;
    std::vector<size_t> again;
    uint32_t top = 0;
    for (const FlowImage& im : images)
        top = std::max(top, conntrack::flow_id_generation(im.flow_id));
    for (size_t i = 0; i < images.size(); ++i) {
        out.push_back(h.table->restore_flow(images[i], base, h.now, 0));
        if (out.back() == RestoreOutcome::slot_taken)
            again.push_back(i);
    }
    h.table->finish_restore();
    for (size_t i : again)
        out[i] = h.table->restore_flow(images[i], base, h.now, top + 1);
    return out;
}

const Ep other{"10.0.0.3", 41000};

} // namespace

// Why: the whole point of the issue: what a listing shows of a flow before a restart, it shows after.
TEST_CASE("An exported and restored TCP flow lists exactly as before and keeps counting", "[conntrack][flow_image]")
{
    Harness a;
    a.handshake(client, server);
    a.send(client, server, kAck | kPsh, 1000);
    a.send(server, client, kAck, 0);
    a.now += 5 * kSec;
    a.send(server, client, kAck | kPsh, 300);
    const std::vector<FlowSnapshot> before = listing(*a.table);
    REQUIRE(before.size() == 1);
    const std::vector<FlowImage> images = export_all(*a.table);
    REQUIRE(images.size() == 1);

    Harness b;
    b.now = a.now + 2 * kSec; // a short downtime
    REQUIRE(restore_all(b, images) == std::vector<RestoreOutcome>{RestoreOutcome::restored});
    const std::vector<FlowSnapshot> after = listing(*b.table);
    REQUIRE(after.size() == 1);
    const FlowSnapshot &x = before[0], &y = after[0];
    CHECK(y.key == x.key);
    CHECK(y.flow_id == x.flow_id);
    CHECK(y.position == x.position);
    CHECK(y.orig_is_lo == x.orig_is_lo);
    CHECK(y.state == x.state);
    CHECK(y.tcp.flags == x.tcp.flags);
    CHECK(y.assured == x.assured);
    CHECK(y.first_seen_ns == x.first_seen_ns);
    CHECK(y.last_seen_ns == x.last_seen_ns);
    CHECK(y.packets[0] == x.packets[0]);
    CHECK(y.packets[1] == x.packets[1]);
    CHECK(y.bytes[0] == x.bytes[0]);
    CHECK(y.bytes[1] == x.bytes[1]);
    CHECK(y.tcp_flags_seen[0] == x.tcp_flags_seen[0]);
    CHECK(y.tcp_flags_seen[1] == x.tcp_flags_seen[1]);
    CHECK(y.deadline_ns == x.deadline_ns);
    CHECK(y.cap == x.cap);
    CHECK(std::memcmp(&y.window, &x.window, sizeof x.window) == 0);
    CHECK(b.c().flows_created == 1);

    // The window came back: the next in-sequence segment is accepted, an out-of-window one is not.
    b.next_seq(client, server) = a.next_seq(client, server);
    b.next_seq(server, client) = a.next_seq(server, client);
    b.send(client, server, kAck | kPsh, 100);
    CHECK(listing(*b.table)[0].packets[0] == x.packets[0] + 1);
    CHECK(b.c().out_of_window_total() == 0);
    b.send(
        tcp_frame(client, server, kAck, 10, 0, b.next_seq(client, server) + 0x40000000u, b.next_seq(server, client)));
    CHECK(b.c().out_of_window_total() == 1);
    CHECK(b.c().flows_created == 1); // no new flow
    CHECK(b.accounting_holds());
}

// Why: flows whose deadline passed while flowcop was down end at once, as inactivity, and those that
// still have time keep exactly their remaining time.
TEST_CASE("Restored deadlines count the downtime", "[conntrack][flow_image]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 100;
    Harness a(cfg);
    a.handshake(client, server); // last seen at kStart
    a.now += 60 * kSec;
    a.handshake(other, server); // last seen at kStart + 60 s
    const auto images = export_all(*a.table);
    REQUIRE(images.size() == 2);

    Harness b(cfg);
    b.now = kStart + 130 * kSec; // the first flow's deadline (kStart + 100 s) passed while down
    REQUIRE(restore_all(b, images) == std::vector<RestoreOutcome>(2, RestoreOutcome::restored));
    b.now += kSec; // the wheel's next tick after the restore: its first pass
    b.cop();
    CHECK(b.expired(Reason::inactivity) == 1);
    CHECK_FALSE(b.has(client, server));
    CHECK(b.has(other, server));
    b.now = kStart + 159 * kSec;
    b.cop();
    CHECK(b.has(other, server));
    b.now = kStart + 161 * kSec; // 60 + 100 s
    b.cop();
    CHECK(b.expired(Reason::inactivity) == 2);
    CHECK(b.accounting_holds());
}

// Why: the file's times are wall-clock; the table's may be offset from them (the TSC clock): the
// conversion goes both ways through one offset.
TEST_CASE("Times go through the time base both ways", "[conntrack][flow_image]")
{
    Harness a;
    a.handshake(client, server);
    const TimeBase to_wall{7 * int64_t(kSec)};
    const auto images = export_all(*a.table, to_wall);
    REQUIRE(images.size() == 1);
    CHECK(images[0].last_seen_ns == kStart + 7 * kSec);
    Harness b;
    b.now = kStart - 3 * kSec;
    REQUIRE(restore_all(b, images, TimeBase{10 * int64_t(kSec)}) ==
            std::vector<RestoreOutcome>{RestoreOutcome::restored});
    CHECK(listing(*b.table)[0].last_seen_ns == kStart - 3 * kSec);
}

// Why: two old lcores' flows can claim one slot on a new lcore: ids must stay unique, and stable where
// they can be.
TEST_CASE("A slot collision renumbers the second flow above every generation, counted", "[conntrack][flow_image]")
{
    Harness a, c;
    a.handshake(client, server);
    c.handshake(other, server); // the same slot (0) on another lcore's table
    std::vector<FlowImage> images = export_all(*a.table);
    const auto more = export_all(*c.table);
    images.insert(images.end(), more.begin(), more.end());
    REQUIRE(images.size() == 2);
    REQUIRE(images[0].flow_id == images[1].flow_id);

    Harness b;
    const auto outcomes = restore_all(b, images);
    CHECK(outcomes == std::vector<RestoreOutcome>{RestoreOutcome::restored, RestoreOutcome::renumbered});
    const auto flows = listing(*b.table);
    REQUIRE(flows.size() == 2);
    std::set<uint64_t> ids{flows[0].flow_id, flows[1].flow_id};
    CHECK(ids.size() == 2);
    CHECK(ids.count(images[0].flow_id) == 1);
    for (const auto& f : flows)
        if (f.flow_id != images[0].flow_id)
            CHECK(conntrack::flow_id_generation(f.flow_id) == conntrack::flow_id_generation(images[0].flow_id) + 1);
    // New flows after the restore take free positions and never reuse a live id.
    b.handshake(Ep{"10.0.0.9", 1234}, server);
    ids.clear();
    for (const auto& f : listing(*b.table))
        ids.insert(f.flow_id);
    CHECK(ids.size() == 3);
    CHECK(b.accounting_holds());
}

// Why: a smaller --flows-per-lcore after the restart: slots beyond it renumber, a full table refuses.
TEST_CASE("Flows beyond a smaller capacity are renumbered or refused as no_room", "[conntrack][flow_image]")
{
    Harness a(small_config(64));
    for (uint16_t i = 0; i < 20; ++i)
        a.handshake(Ep{"10.1.0.1", uint16_t(1000 + i)}, server);
    const auto images = export_all(*a.table);
    REQUIRE(images.size() == 20);
    Harness b(small_config(16));
    const auto outcomes = restore_all(b, images);
    size_t restored = 0, renumbered = 0, no_room = 0;
    for (RestoreOutcome o : outcomes) {
        restored += o == RestoreOutcome::restored;
        renumbered += o == RestoreOutcome::renumbered;
        no_room += o == RestoreOutcome::no_room;
    }
    CHECK(restored + renumbered == 16);
    CHECK(no_room == 4);
    CHECK(b.c().active() == 16);
    CHECK(b.accounting_holds());
}

// Why: an image that passed the file's checksum may still be out of range (a forged file, another
// build's bug): refused whole, nothing half-written.
TEST_CASE("Out-of-range images and untracked families are refused", "[conntrack][flow_image]")
{
    Harness a;
    a.handshake(client, server);
    const FlowImage good = export_all(*a.table).at(0);
    Harness b;
    FlowImage bad = good;
    bad.state = 200;
    CHECK(b.table->restore_flow(bad, {}, b.now, 0) == RestoreOutcome::invalid);
    bad = good;
    bad.dir[1].scale = 15;
    CHECK(b.table->restore_flow(bad, {}, b.now, 0) == RestoreOutcome::invalid);
    bad = good;
    bad.flow_id = 0; // generation 0 names no flow
    CHECK(b.table->restore_flow(bad, {}, b.now, 0) == RestoreOutcome::invalid);
    bad = good;
    bad.vlan_inner = 0x1000;
    CHECK(b.table->restore_flow(bad, {}, b.now, 0) == RestoreOutcome::invalid);
    CHECK(b.c().flows_created == 0);
    CHECK(b.table->restore_flow(good, {}, b.now, 0) == RestoreOutcome::restored);
    FlowImage dup = good; // the same key twice
    dup.flow_id = conntrack::make_flow_id(1, 5);
    CHECK(b.table->restore_flow(dup, {}, b.now, 0) == RestoreOutcome::invalid);

    auto cfg = small_config();
    cfg.track = conntrack::track_bit(conntrack::Proto::udp);
    Harness u(cfg);
    CHECK(u.table->restore_flow(good, {}, u.now, 0) == RestoreOutcome::not_tracked);
}

// Why: an operator's timeout (flowcopctl -U), an RST or a kill waiting for the next tick survive too.
TEST_CASE("A set timeout and a pending kill survive a restore", "[conntrack][flow_image]")
{
    Harness a;
    a.handshake(client, server);
    a.handshake(other, server);
    FlowSnapshot snap{};
    REQUIRE(a.table->set_flow_timeout(a.key(client, server), 30, a.now, snap) ==
            conntrack::FlowTable::TimeoutUpdate::set);
    REQUIRE(a.table->kill(a.key(other, server)));
    const auto images = export_all(*a.table);
    Harness b;
    b.now = a.now + kSec;
    REQUIRE(restore_all(b, images) == std::vector<RestoreOutcome>(2, RestoreOutcome::restored));
    b.now += kSec; // the first tick after the restore
    b.cop();
    CHECK(b.expired(Reason::killed) == 1);
    CHECK(listing(*b.table).at(0).deadline_ns == a.now + 30 * kSec);
    b.now = a.now + 31 * kSec;
    b.cop();
    CHECK(b.expired(Reason::inactivity) == 1);
    CHECK(b.accounting_holds());
}

// Why: a clock that went back between the runs (or a file from a host whose clock was ahead) must not
// give restored flows extra life: times after now are taken as now.
TEST_CASE("Restored times after now are taken as now", "[conntrack][flow_image]")
{
    auto cfg = small_config();
    cfg.timeouts.seconds[size_t(tcpstate::State::established)] = 100;
    Harness a(cfg);
    a.handshake(client, server);
    const auto images = export_all(*a.table);
    Harness b(cfg);
    b.now = kStart - 3600 * kSec; // an hour before the flow's last packet
    REQUIRE(restore_all(b, images) == std::vector<RestoreOutcome>{RestoreOutcome::restored});
    const FlowSnapshot f = listing(*b.table).at(0);
    CHECK(f.last_seen_ns == b.now);
    CHECK(f.first_seen_ns == b.now);
    CHECK(f.deadline_ns == b.now + 100 * kSec);
}
