// SPDX-License-Identifier: BSD-3-Clause
// FlowTable: keys, directions, counters, table-full behaviour, snapshots.
#include "harness.h"
#include <conntrack/table_inspector.h>

#include <catch2/catch.hpp>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Reason;
using tcpstate::State;

namespace {

conntrack::FlowSnapshot only_flow(const Harness& h)
{
    conntrack::FlowSnapshot s[2];
    REQUIRE(h.table->snapshot({}, s, 2) == 1);
    return s[0];
}

} // namespace

TEST_CASE("Both directions of a flow find the same entry and count per direction", "[conntrack][table]")
{
    Harness h;
    h.send(client, server, kSyn, 0);
    h.send(server, client, kSyn | kAck, 0);
    h.send(client, server, kAck, 100);
    h.send(server, client, kAck, 1000);
    h.send(server, client, kAck, 1000);
    CHECK(h.c().flows_created == 1);
    const auto f = only_flow(h);
    CHECK(f.packets[0] == 2);
    CHECK(f.packets[1] == 3);
    // IP bytes (RFC 7012): a bare IPv4/TCP packet is 40 bytes (its frame 54).
    CHECK(f.bytes[0] == 40 + 140);
    CHECK(f.bytes[1] == 40 + 1040 + 1040);
    CHECK(f.state == State::established);
    CHECK(f.assured);
    CHECK(h.accounting_holds());
}

TEST_CASE("The originator is the side that sent the first packet seen", "[conntrack][table]")
{
    // The server's address sorts lower than the client's, so the key's lo side is
    // the responder: the record must still report the client as originator.
    Harness h;
    const Ep hi_client{"10.9.9.9", 50000};
    const Ep lo_server{"10.0.0.5", 443};
    h.send(hi_client, lo_server, kSyn);
    h.send(lo_server, hi_client, kSyn | kAck);
    const auto f = only_flow(h);
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    packet::key_endpoints(f.key, f.orig_is_lo, src, sport, dst, dport);
    CHECK(sport == 50000);
    CHECK(dport == 443);
    CHECK(f.packets[0] == 1);
    CHECK(f.packets[1] == 1);
}

TEST_CASE("IPv4 and IPv6 flows are tracked and kept apart", "[conntrack][table]")
{
    Harness h;
    h.handshake(client, server);
    h.handshake({"2001:db8::1", 40000}, {"2001:db8::2", 80});
    CHECK(h.c().flows_created == 2);
    CHECK(h.has(client, server));
    CHECK(h.has({"2001:db8::2", 80}, {"2001:db8::1", 40000}));
    CHECK(h.accounting_holds());
}

TEST_CASE("The same 4-tuple in different VLANs is different flows", "[conntrack][table]")
{
    Harness h;
    h.send(client, server, kSyn, 0, 0);
    h.send(client, server, kSyn, 0, 42);
    h.send(client, server, kSyn, 0, 43);
    CHECK(h.c().flows_created == 3);
}

TEST_CASE("With --track tcp, packets that are not TCP are counted by verdict and never tracked", "[conntrack][table]")
{
    auto cfg = small_config();
    cfg.track = conntrack::track_bit(conntrack::Proto::tcp);
    Harness h(cfg);
    h.send(FrameBuilder().ipv4().udp().build());
    h.send(FrameBuilder().ipv4().icmp().build());
    h.send(FrameBuilder().ethertype(0x0806).raw(std::vector<uint8_t>(28, 0)).build());
    auto bad = tcp_frame(client, server, kSyn);
    bad.resize(30); // cut inside the IPv4 header
    h.send(bad);
    using packet::Verdict;
    CHECK(h.c().packets_by_verdict[unsigned(Verdict::udp)] == 1);
    CHECK(h.c().packets_by_verdict[unsigned(Verdict::icmp)] == 1);
    CHECK(h.c().packets_by_verdict[unsigned(Verdict::non_ip)] == 1);
    CHECK(h.c().packets_by_verdict[unsigned(Verdict::tcp)] == 0);
    CHECK(h.c().flows_created == 0);
    const uint64_t malformed = h.c().packets_by_verdict[unsigned(Verdict::truncated_l3)] +
                               h.c().packets_by_verdict[unsigned(Verdict::ip_bad_total_length)];
    CHECK(malformed == 1);
}

TEST_CASE("A packet that may not start a flow is counted and creates nothing", "[conntrack][table]")
{
    Harness h;
    h.send(client, server, kRst);        // stray RST
    h.send(client, server, kSyn | kFin); // invalid combination
    CHECK(h.c().flows_created == 0);
    CHECK(h.c().tcp_no_flow == 2);
}

TEST_CASE("A flow first seen mid-stream is picked up only with loose pickup", "[conntrack][table]")
{
    Harness loose;
    loose.send(client, server, kAck, 100);
    CHECK(loose.c().flows_created == 1);
    CHECK(only_flow(loose).state == State::established);
    CHECK_FALSE(only_flow(loose).assured);

    auto cfg = small_config();
    cfg.loose_pickup = false;
    Harness strict(cfg);
    strict.send(client, server, kAck, 100);
    CHECK(strict.c().flows_created == 0);
    CHECK(strict.c().tcp_no_flow == 1);
}

TEST_CASE("Several packets of one new flow in one burst create it once", "[conntrack][table]")
{
    Harness h;
    const auto syn = tcp_frame(client, server, kSyn);
    const auto synack = tcp_frame(server, client, kSyn | kAck);
    packet::Packet p[3];
    packet::parse(syn.data(), uint32_t(syn.size()), p[0]);
    packet::parse(synack.data(), uint32_t(synack.size()), p[1]);
    packet::parse(syn.data(), uint32_t(syn.size()), p[2]);
    const packet::Packet* pp[3] = {&p[0], &p[1], &p[2]};
    h.table->process_burst(pp, 3, h.now);
    CHECK(h.c().flows_created == 1);
    const auto f = only_flow(h);
    CHECK(f.packets[0] + f.packets[1] == 3);
}

TEST_CASE("The table holds its whole capacity before an insert is refused", "[conntrack][table][full]")
{
    // Capacity is exact: no insert fails on a collision below it (the index's probe window never fills
    // at the design load), and the next flow finds the table full.
    for (const uint32_t cap : {8u, 1000u, 1u << 16}) {
        Harness h(small_config(cap));
        for (uint32_t i = 0; i < cap; ++i)
            h.handshake({"10.1.0.1", uint16_t(1 + i % 60000)}, {"10.2.0.1", uint16_t(1 + i / 60000)});
        CHECK(h.c().active() == cap);
        CHECK(h.c().tcp_table_full == 0);
        CHECK(h.c().probe_window_full == 0);
        h.send({"10.3.0.1", 1}, server, kSyn);
        CHECK(h.c().tcp_table_full == 1); // all assured: nothing to evict
        CHECK(h.c().active() == cap);
        CHECK(h.accounting_holds());
    }
}

TEST_CASE("A full table evicts an unassured flow to admit a new one", "[conntrack][table][full]")
{
    Harness h(small_config(1024));
    // Fill with half-open flows (SYN only): all unassured.
    for (uint16_t i = 0; i < 1024; ++i)
        h.send({"10.1.0.1", uint16_t(1000 + i)}, server, kSyn);
    const uint64_t full = h.c().active();
    REQUIRE(full >= 1000);
    h.now += kSec;
    h.send({"10.2.0.1", 999}, server, kSyn);
    CHECK(h.c().active() <= full);
    CHECK(h.expired(Reason::evicted) >= 1);
    CHECK(h.has({"10.2.0.1", 999}, server));
    CHECK(h.accounting_holds());
}

TEST_CASE("A table full of established flows refuses new flows and evicts none", "[conntrack][table][full]")
{
    Harness h(small_config(1024));
    for (uint16_t i = 0; i < 1024; ++i)
        h.handshake({"10.1.0.1", uint16_t(1000 + i)}, server);
    const uint64_t established = h.c().active();
    REQUIRE(established >= 1000);
    const uint64_t refused_before = h.c().tcp_table_full;
    for (uint16_t i = 0; i < 500; ++i)
        h.send({"10.3.0.1", uint16_t(2000 + i)}, server, kSyn); // a SYN flood
    // Every established flow survives; each SYN either found a free slot or was refused.
    CHECK(h.expired(Reason::evicted) == 0);
    const uint64_t admitted = h.c().flows_created - established;
    CHECK(admitted + (h.c().tcp_table_full - refused_before) == 500);
    CHECK(h.c().active() == established + admitted);
    CHECK(h.c().active() <= 1024);
    uint32_t still_there = 0;
    for (uint16_t i = 0; i < 1024; ++i)
        still_there += h.has({"10.1.0.1", uint16_t(1000 + i)}, server);
    CHECK(still_there == established);
    CHECK(h.accounting_holds());
}

TEST_CASE("A SYN flood far beyond capacity keeps memory and the table bounded", "[conntrack][table][full]")
{
    Harness h(small_config(256));
    const size_t mem = h.table->memory_bytes();
    for (uint32_t i = 0; i < 20000; ++i)
        h.send({"10.4.0.1", uint16_t(i % 60000 + 1)}, {"10.5.0.1", uint16_t(i / 60000 + 1)}, kSyn);
    CHECK(h.c().active() <= 256);
    CHECK(h.table->memory_bytes() == mem);
    CHECK(h.c().flows_created == h.expired(Reason::evicted) + h.c().active());
    CHECK(h.expired(Reason::evicted) > 15000);
    CHECK(h.accounting_holds());
}

TEST_CASE("A snapshot lists the most recently seen flows first and filters", "[conntrack][table][snapshot]")
{
    Harness h;
    for (uint16_t i = 0; i < 10; ++i) {
        h.send({"10.0.0.1", uint16_t(1000 + i)}, {"10.0.0.2", uint16_t(i < 5 ? 80 : 443)}, kSyn);
        h.now += kSec;
    }
    conntrack::FlowSnapshot s[4];
    REQUIRE(h.table->snapshot({}, s, 4) == 4);
    CHECK(s[0].last_seen_ns > s[1].last_seen_ns);
    CHECK(s[1].last_seen_ns > s[2].last_seen_ns);
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    packet::key_endpoints(s[0].key, s[0].orig_is_lo, src, sport, dst, dport);
    CHECK(sport == 1009);

    conntrack::SnapshotFilter f;
    f.match_port = true;
    f.port = 80;
    conntrack::FlowSnapshot all[16];
    CHECK(h.table->snapshot(f, all, 16) == 5);
}

TEST_CASE("Memory per tracked flow is measured and within budget", "[conntrack][table][memory]")
{
    // 128-byte record + 32-byte cold entry + a fifth of a 64-byte bucket, exactly per flow of capacity,
    // plus the shard locks and the wheel's heads; tests/benchmarks.md part 4 has the arithmetic.
    for (const uint32_t cap : {1u << 16, 100000u}) {
        const conntrack::TableConfig cfg = small_config(cap);
        Harness h(cfg);
        const double per_flow = double(h.table->memory_bytes()) / double(cap);
        const double wheel_per_flow = double(cfg.wheel.buckets) * timerwheel::kLanes * 4 / double(cap);
        INFO("bytes per flow: " << per_flow << ", of which the wheel's heads " << wheel_per_flow);
        CHECK(h.table->memory_bytes() ==
              conntrack::FlowTable::block_bytes(cap) + cfg.wheel.buckets * timerwheel::kLanes * 4);
        CHECK(per_flow >= 172.8 + wheel_per_flow);
        CHECK(per_flow <= 172.8 + wheel_per_flow + 0.1); // locks: 64 bytes per 1024 flows; alignment padding
    }
}

TEST_CASE("Keys crafted to collide fill their probe window: the home bucket's unassured flow makes room",
          "[conntrack][table][full]")
{
    // 4096 flows of capacity: 820 buckets. Find keys whose home bucket is 0 (one in 820 at random),
    // more than the probe window holds, and open them all.
    Harness h(small_config(4096));
    const uint32_t window = conntrack::kMaxProbe * conntrack::kBucketSlots;
    std::vector<std::pair<Ep, Ep>> pairs;
    for (uint32_t i = 0; pairs.size() < window + 3 && i < 2'000'000; ++i) {
        const Ep a{"10.7.0.1", uint16_t(1 + i % 60000)};
        const Ep b{"10.8.0.1", uint16_t(1 + i / 60000)};
        if (conntrack::TableInspector::index(*h.table).probe(conntrack::flow_hash(h.key(a, b))).bucket == 0)
            pairs.push_back({a, b});
    }
    REQUIRE(pairs.size() == window + 3);
    // The first `window` fill buckets 0..15, assured; the next is refused (nothing unassured to evict).
    for (uint32_t i = 0; i < window; ++i)
        h.handshake(pairs[i].first, pairs[i].second);
    CHECK(h.c().active() == window);
    CHECK(h.c().probe_window_full == 0);
    h.send(pairs[window].first, pairs[window].second, kSyn);
    CHECK(h.c().probe_window_full == 1);
    CHECK(h.c().tcp_table_full == 1);
    CHECK(h.c().active() == window);
    CHECK(conntrack::TableInspector::index(*h.table).check(
              [&](uint32_t p) { return conntrack::TableInspector::home_bucket(*h.table, p); }) == std::string());
    // A half-open flow in the home bucket can be evicted for the next one (netfilter's early drop on
    // the chain): kill an assured one, reap it, open a SYN-only flow in its place, then collide again.
    REQUIRE(h.table->kill(h.key(pairs[0].first, pairs[0].second)));
    h.run_for(1);
    h.send(pairs[window + 1].first, pairs[window + 1].second, kSyn); // takes the freed home-bucket slot
    CHECK(h.c().active() == window);
    h.now += kSec;
    h.send(pairs[window + 2].first, pairs[window + 2].second, kSyn);
    CHECK(h.c().probe_window_full == 2);
    CHECK(h.expired(Reason::evicted) == 1);
    CHECK_FALSE(h.has(pairs[window + 1].first, pairs[window + 1].second));
    CHECK(h.has(pairs[window + 2].first, pairs[window + 2].second));
    CHECK(conntrack::TableInspector::index(*h.table).check(
              [&](uint32_t p) { return conntrack::TableInspector::home_bucket(*h.table, p); }) == std::string());
    CHECK(h.accounting_holds());
}

// Issue 17's control socket: a walk in bounded slices, an O(1) get by key, a kill by flow id.
TEST_CASE("read_slice walks every flow once in bounded slices; get and kill_id act on exactly one flow",
          "[conntrack][table][ctl]")
{
    Harness h(small_config(4096));
    std::vector<Ep> clients;
    static std::vector<std::string> names; // Ep holds a pointer: keep the texts alive
    names.clear();
    for (int i = 0; i < 3000; ++i)
        names.push_back("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1));
    for (int i = 0; i < 3000; ++i) {
        const Ep c{names[size_t(i)].c_str(), uint16_t(20000 + i)};
        h.handshake(c, server);
        clients.push_back(c);
    }
    // A slice never crosses a shard and never spans more than asked; the walk ends with kNoPosition.
    std::vector<conntrack::FlowSnapshot> buf(100);
    std::map<uint64_t, conntrack::FlowSnapshot> seen;
    uint32_t at = 0;
    unsigned slices = 0;
    while (at != conntrack::kNoPosition) {
        size_t n = 0;
        const uint32_t next = h.table->read_slice(at, 100, buf.data(), n);
        REQUIRE(n <= 100);
        if (next != conntrack::kNoPosition) {
            CHECK(next > at);
            CHECK(next - at <= 100);
            CHECK(conntrack::FlowTable::shard_of(at) == conntrack::FlowTable::shard_of(next - 1));
        }
        for (size_t i = 0; i < n; ++i)
            CHECK(seen.emplace(buf[i].flow_id, buf[i]).second);
        at = next;
        ++slices;
    }
    CHECK(seen.size() == 3000);
    CHECK(slices >= 30);
    // get: either direction, O(1), the same flow id as the walk saw.
    conntrack::FlowSnapshot got{};
    packet::Packet p;
    const auto frame = tcp_frame(server, clients[1234], kAck);
    packet::parse(frame.data(), uint32_t(frame.size()), p);
    REQUIRE(h.table->get(p.key, got));
    CHECK(seen.count(got.flow_id) == 1);
    CHECK(got.state == State::established);
    // kill_id: marks that flow only; a stale generation or a bad position marks nothing.
    CHECK_FALSE(h.table->kill_id(got.flow_id + (uint64_t(1) << 32)));
    CHECK_FALSE(h.table->kill_id(uint64_t(4095))); // never used
    CHECK_FALSE(h.table->kill_id(0xffffffffull));  // past the capacity
    REQUIRE(h.table->kill_id(got.flow_id));
    h.run_for(1);
    CHECK(h.expired(Reason::killed) == 1);
    CHECK_FALSE(h.table->get(p.key, got));
    // The freed position is reused first by the next new flow: the old id must not name it.
    const Ep newcomer{"10.9.9.9", 1};
    h.handshake(newcomer, server);
    const auto nf = tcp_frame(newcomer, server, kAck);
    packet::Packet np;
    packet::parse(nf.data(), uint32_t(nf.size()), np);
    conntrack::FlowSnapshot fresh{};
    REQUIRE(h.table->get(np.key, fresh));
    CHECK(fresh.position == got.position);
    CHECK(fresh.flow_id != got.flow_id);
    CHECK_FALSE(h.table->kill_id(got.flow_id));
    h.run_for(1);
    CHECK(h.expired(Reason::killed) == 1);
    CHECK(h.table->get(np.key, fresh));
    CHECK(h.accounting_holds());
}
