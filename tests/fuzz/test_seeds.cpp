// SPDX-License-Identifier: BSD-3-Clause
// The seeds reach what they are named for, and the oracle is live: each of its rule families
// reports a table that was changed behind its back (so a green replay means something).
#include <catch2/catch.hpp>

#include "corpus_seeds.h"
#include "frame_builder.h"
#include "parse_check.h"
#include "track_driver.h"
#include "track_oracle.h"
#include "track_script.h"

#include <packet/packet.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

using namespace flowcop;
using conntrack::Reason;

namespace {

uint64_t expired(const conntrack::Counters& c, Reason r)
{
    return c.flows_expired[static_cast<unsigned>(r)];
}

std::vector<std::string> captures()
{
    const char* dir = std::getenv("FLOWCOP_CAPTURES_DIR");
    std::vector<std::string> out;
    if (dir)
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.path().extension() == ".pcap")
                out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A table and an oracle that has seen exactly what the driver fed it.
struct Rig {
    explicit Rig(const fuzz::TrackSetup& s) : setup(s)
    {
        std::string err;
        table = conntrack::FlowTable::create(setup.table_config(), err);
        if (!table)
            throw std::runtime_error(err);
        oracle = std::make_unique<fuzz::Oracle>(*table, setup);
    }
    // One SYN from a distinct client port, fed and reported.
    void syn(uint16_t port)
    {
        const std::vector<uint8_t> f = test::FrameBuilder().ipv4().tcp({.sport = port, .flags = 0x02}).build();
        packet::parse(f.data(), uint32_t(f.size()), pkt);
        const packet::Packet* p = &pkt;
        table->process_burst(&p, 1, now);
        oracle->after_burst(&p, &now, 1);
    }
    fuzz::TrackSetup setup;
    std::unique_ptr<conntrack::FlowTable> table;
    std::unique_ptr<fuzz::Oracle> oracle;
    packet::Packet pkt{};
    uint64_t now = fuzz::kStartNs;
};

} // namespace

// Why: a seed that silently stops reaching its path (a format change, a new rule) would leave the
// fuzzer to rediscover it, or not.
TEST_CASE("Every crafted tracking scenario holds every invariant and reaches the path it is named for", "[fuzz][seeds]")
{
    std::map<std::string, conntrack::Counters> got;
    for (const fuzz::Seed& s : fuzz::crafted_scripts()) {
        conntrack::Counters c;
        INFO(s.name);
        REQUIRE(fuzz::run_track(s.bytes.data(), s.bytes.size(), &c) == "");
        got.emplace(s.name, c);
    }
    CHECK(expired(got.at("close_then_time_wait_expiry"), Reason::closed) == 1);
    CHECK(expired(got.at("rst_reaped_next_tick"), Reason::reset) == 1);
    CHECK(expired(got.at("reopen_twice_in_one_burst"), Reason::closed) == 2);
    CHECK(got.at("reopen_twice_in_one_burst").flows_created == 4);
    CHECK(got.at("loose_pickup_midstream").flows_created == 1);
    CHECK(got.at("strict_pickup_no_flow").flows_created == 0);
    CHECK(got.at("strict_pickup_no_flow").tcp_no_flow == 2);
    CHECK(expired(got.at("table_full_eviction"), Reason::evicted) > 0);
    CHECK(got.at("table_full_eviction").tcp_table_full > 0);
    CHECK(expired(got.at("kill_then_reap"), Reason::killed) == 1);
    CHECK(got.at("budget_limited_passes").cop_budget_exhausted > 0);
    CHECK(got.at("set_timeouts_and_rebase").rebase_visited > 0);
    CHECK(expired(got.at("active_timeout_busy_flow"), Reason::active) == 2); // and the flow picked up after it
    CHECK(got.at("expiry_on_arrival").flows_created == 2);
    CHECK(expired(got.at("shutdown_mixed_flows"), Reason::shutdown) == 3);
    CHECK(expired(got.at("shutdown_mixed_flows"), Reason::reset) == 1);
    CHECK(expired(got.at("shutdown_mixed_flows"), Reason::killed) == 1);
    CHECK(expired(got.at("shutdown_mixed_flows"), Reason::inactivity) == 1);
    CHECK(got["vlans_ipv6_and_junk_flags"].flows_created == 4);
    CHECK(got["vlans_ipv6_and_junk_flags"].tcp_invalid >= 3);
    CHECK(got.at("simultaneous_open_and_self_connect").flows_created == 2);

    // Every protocol (TrackSetup::all_protocols).
    const auto by = [](const conntrack::Counters& c, conntrack::Proto p) {
        return std::make_tuple(c.flows_created_by_proto[size_t(p)], c.proto_tracked[size_t(p)],
                               c.proto_no_flow[size_t(p)]);
    };
    using conntrack::Proto;
    // Two flows, five packets: the stream flow outlived a 5 s pause (unreplied: 3 s).
    CHECK(by(got.at("udp_unreplied_replied_stream"), Proto::udp) == std::make_tuple(2ul, 5ul, 0ul));
    // Two echo flows; two replies with no live request start nothing.
    CHECK(by(got.at("icmp_echo_v4_v6"), Proto::icmp) == std::make_tuple(2ul, 4ul, 2ul));
    const conntrack::Counters& err = got.at("icmp_errors_known_both_ways_and_unknown");
    CHECK(err.icmp_related == 4);
    CHECK(err.icmp_related_unknown == 1);
    CHECK(err.flows_created == 3);
    CHECK(by(got.at("other_protocols_gre_esp_sctp"), Proto::other) == std::make_tuple(3ul, 6ul, 0ul));
    const conntrack::Counters& frag = got.at("fragments_in_and_out_of_order");
    CHECK(frag.fragments_tracked == 6); // in order 2, last first 1, middle first 1, duplicates 2
    CHECK(frag.fragments_late == 6);    // last first 1, middle first 1, duplicates 2, IPv6 reversed 2
    CHECK(frag.fragments_no_flow == 0);
    CHECK(frag.flows_created_by_proto[size_t(Proto::udp)] == 2);
    CHECK(by(got.at("vlan_variants_all_protocols"), Proto::udp) == std::make_tuple(3ul, 4ul, 0ul));
    CHECK(got.at("vlan_variants_all_protocols").flows_created == 5);
    CHECK(got.at("fragment_flood_small_attributor").fragments_late == 1);
    CHECK(got.at("fragment_flood_small_attributor").fragments_tracked == 1);
    CHECK(expired(got.at("table_full_all_protocols"), Reason::evicted) > 0);

    // The key: zones from the port, --vlan-key.
    const conntrack::Counters& zones = got.at("zones_same_tuples_per_port");
    CHECK(by(zones, Proto::udp) == std::make_tuple(3ul, 6ul, 0ul)); // zones 0, 7 (ports 1 and 2), 9
    CHECK(zones.flows_created_by_proto[size_t(Proto::tcp)] == 2);   // zone 7's handshake, zone 0's pickup
    CHECK(zones.icmp_related == 2);                                 // each in its own zone
    CHECK(zones.icmp_related_unknown == 1);                         // zone 9 has no such TCP flow
    CHECK(zones.fragments_tracked == 2);                            // one per zone, none across
    CHECK(expired(zones, Reason::killed) == 1);
    const conntrack::Counters& outer = got.at("vlan_key_outer_inner_tag_ignored");
    CHECK(by(outer, Proto::udp) == std::make_tuple(2ul, 5ul, 0ul)); // outer 200 (any inner) and 201
    CHECK(outer.flows_created_by_proto[size_t(Proto::tcp)] == 1);
    CHECK(outer.fragments_tracked == 2); // across inner tags 300 and 302
    const conntrack::Counters& none = got.at("vlan_key_none_one_sided_tags");
    CHECK(by(none, Proto::udp) == std::make_tuple(1ul, 2ul, 0ul));
    CHECK(by(none, Proto::icmp) == std::make_tuple(1ul, 2ul, 0ul));
    CHECK(none.flows_created_by_proto[size_t(Proto::tcp)] == 1);
    CHECK(none.icmp_related == 1);
    CHECK(expired(none, Reason::killed) == 1);
    const conntrack::Counters& tcp_zones = got.at("tcp_zones_vlan_key_none");
    CHECK(tcp_zones.flows_created == 2);
    CHECK(expired(tcp_zones, Reason::closed) == 1);
}

// Why: the parser target starts from one frame per rule; a missing verdict is a rule the
// fuzzer must find from scratch.
TEST_CASE("The crafted parser seeds hold the parser contract and cover every verdict", "[fuzz][seeds]")
{
    std::set<packet::Verdict> seen;
    for (const fuzz::Seed& s : fuzz::crafted_frames()) {
        INFO(s.name);
        const char* broken = fuzz::check_parse(s.bytes.data(), s.bytes.size());
        CHECK(broken == nullptr);
        packet::Packet p;
        seen.insert(packet::parse(s.bytes.data(), uint32_t(s.bytes.size()), p));
    }
    CHECK(seen.size() == packet::kVerdictCount);
}

// Why: the real captures are the most realistic seeds; each must split into inputs that hold.
TEST_CASE("Every committed capture splits into parser and tracking seeds that hold every invariant", "[fuzz][seeds]")
{
    const std::vector<std::string> files = captures();
    REQUIRE(files.size() >= 10);
    unsigned variant = 0;
    for (const std::string& f : files) {
        INFO(f);
        std::string error;
        const auto frames = fuzz::capture_frames(f, "c", error);
        const auto scripts = fuzz::capture_scripts(f, "c", variant++, error);
        REQUIRE(error == "");
        CHECK(!frames.empty());
        CHECK(!scripts.empty());
        for (const fuzz::Seed& s : frames)
            CHECK(fuzz::check_parse(s.bytes.data(), s.bytes.size()) == nullptr);
        for (const fuzz::Seed& s : scripts) {
            CHECK(s.bytes.size() <= fuzz::kMaxScriptBytes);
            CHECK(fuzz::run_track(s.bytes.data(), s.bytes.size()) == "");
        }
    }
}

// Why: the prefix a script keeps must parse exactly like the whole frame, or capture seeds would
// replay different packets than the capture holds.
TEST_CASE("A frame's significant prefix followed by zeros parses like the whole frame", "[fuzz][seeds]")
{
    for (const fuzz::Seed& s : fuzz::crafted_frames()) {
        INFO(s.name);
        const size_t keep = fuzz::significant_prefix(s.bytes);
        std::vector<uint8_t> z(s.bytes.size(), 0);
        std::copy(s.bytes.begin(), s.bytes.begin() + long(keep), z.begin());
        packet::Packet a, b;
        packet::parse(s.bytes.data(), uint32_t(s.bytes.size()), a);
        packet::parse(z.data(), uint32_t(z.size()), b);
        CHECK(std::memcmp(&a, &b, sizeof a) == 0);
        CHECK(keep <= 255);
    }
}

// Why: each test below proves one rule family can fail, by changing the table without telling
// the oracle.
TEST_CASE("The oracle reports packets the table counted that were not fed through it", "[fuzz][oracle]")
{
    Rig r{fuzz::TrackSetup{}};
    r.syn(1000);
    REQUIRE(r.oracle->ok());
    // A UDP frame changes no flow, so only the per-verdict counts can give it away.
    const std::vector<uint8_t> f = test::FrameBuilder().ipv4().udp().build();
    packet::Packet udp;
    packet::parse(f.data(), uint32_t(f.size()), udp);
    const packet::Packet* p = &udp;
    r.table->process_burst(&p, 1, r.now); // behind its back
    r.oracle->after_rebase(0, r.table->rebase_step(0));
    CHECK_THAT(r.oracle->failure(), Catch::Contains("packets by verdict"));
}

TEST_CASE("The oracle reports a flow that fired before the deadline the contract gives it", "[fuzz][oracle]")
{
    fuzz::TrackSetup s;
    s.preset = 3; // SYN_SENT 30 s
    Rig r{s};
    r.syn(1000);
    r.table->set_timeouts(fuzz::timeout_preset(2), 0); // 1 s, behind its back
    r.table->rebase_step(UINT32_MAX);
    r.now += 2 * fuzz::kSecNs;
    const conntrack::CopResult res = r.table->run_cop(r.now, UINT64_MAX, UINT64_MAX);
    REQUIRE(res.wheel.fired == 1);
    r.oracle->after_cop(r.now, UINT64_MAX, UINT64_MAX, res);
    CHECK_THAT(r.oracle->failure(), Catch::Contains("fired before its deadline"));
}

TEST_CASE("The oracle reports a flow whose deadline is not the contract's", "[fuzz][oracle]")
{
    Rig r{fuzz::TrackSetup{}};
    r.syn(1000);
    r.table->set_timeouts(fuzz::timeout_preset(3), 0); // behind its back
    r.oracle->after_rebase(8, r.table->rebase_step(8));
    CHECK_THAT(r.oracle->failure(), Catch::Contains("deadline"));
}

TEST_CASE("The oracle reports flows that left the table during a burst without a packet or an eviction",
          "[fuzz][oracle]")
{
    Rig r{fuzz::TrackSetup{}};
    r.syn(1000);
    r.syn(1001);
    r.table->destroy_all(r.now, Reason::shutdown); // behind its back
    r.syn(1002);
    CHECK_FALSE(r.oracle->ok());
}

TEST_CASE("The oracle reports a UDP flow whose packets and state are not its protocol's model", "[fuzz][oracle]")
{
    fuzz::TrackSetup s;
    s.all_protocols = true;
    Rig r{s};
    const auto query = test::FrameBuilder().ipv4().udp({.sport = 5353, .dport = 53}).build();
    const auto answer = test::FrameBuilder()
                            .ipv4({.src = test::ip4("10.0.0.2"), .dst = test::ip4("10.0.0.1")})
                            .udp({.sport = 53, .dport = 5353})
                            .build();
    packet::Packet q, a;
    packet::parse(query.data(), uint32_t(query.size()), q);
    packet::parse(answer.data(), uint32_t(answer.size()), a);
    const packet::Packet* p = &q;
    r.table->process_burst(&p, 1, r.now);
    r.oracle->after_burst(&p, &r.now, 1);
    REQUIRE(r.oracle->ok());
    // The table gets the answer (REPLIED, a reply packet); the oracle is told of another query.
    r.now += fuzz::kMsNs;
    p = &a;
    r.table->process_burst(&p, 1, r.now);
    p = &q;
    r.oracle->after_burst(&p, &r.now, 1);
    CHECK_THAT(r.oracle->failure(), Catch::Contains("udp flow differs from the model"));
}

TEST_CASE("The oracle reports a key whose VLAN IDs or zone the port and --vlan-key do not give", "[fuzz][oracle]")
{
    fuzz::TrackSetup s;
    s.vlan_key = packet::VlanKey::outer;
    Rig r{s};
    const auto f = test::FrameBuilder().vlan(100, 0x88a8).vlan(200).ipv4().tcp({.sport = 1000, .flags = 0x02}).build();
    packet::Packet p;
    packet::parse(f.data(), uint32_t(f.size()), p);
    const packet::Packet* pp = &p;
    SECTION("an inner VLAN ID --vlan-key outer leaves out")
    {
        r.table->process_burst(&pp, 1, r.now); // keyed as parsed: both IDs
        r.oracle->after_burst(&pp, &r.now, 1);
        CHECK_THAT(r.oracle->failure(), Catch::Contains("key VLAN 100/200"));
    }
    SECTION("a zone that is not the port's")
    {
        packet::apply_vlan_key(p, s.vlan_key);
        p.in_port = 3;
        p.key.zone = fuzz::port_zone(1);
        r.table->process_burst(&pp, 1, r.now);
        r.oracle->after_burst(&pp, &r.now, 1);
        CHECK_THAT(r.oracle->failure(), Catch::Contains("zone 7 on port 3"));
    }
}

TEST_CASE("The oracle reports a later fragment given the ports of another zone's datagram", "[fuzz][oracle]")
{
    fuzz::TrackSetup s;
    s.all_protocols = true;
    Rig r{s};
    const auto first = test::FrameBuilder()
                           .ipv4({.id = 9, .frag_offset = 0, .more_fragments = true})
                           .udp({.sport = 5353, .dport = 53, .length = 40})
                           .payload(16)
                           .build();
    const auto later = test::FrameBuilder().ipv4({.id = 9, .frag_offset = 3}).next_protocol(17).payload(16).build();
    packet::Packet a, b;
    packet::parse(first.data(), uint32_t(first.size()), a);
    packet::parse(later.data(), uint32_t(later.size()), b);
    b.in_port = 3; // zone 9; its datagram's first fragment came on port 0
    b.key.zone = fuzz::port_zone(3);
    b.key.port_lo = a.key.port_lo; // as an attributor that ignored the zone would do
    b.key.port_hi = a.key.port_hi;
    b.extra.frag_flags |= packet::kFragAttributed;
    const packet::Packet* pkts[2] = {&a, &b};
    const uint64_t times[2] = {r.now, r.now};
    r.table->process_burst(pkts, 2, times);
    r.oracle->after_burst(pkts, times, 2);
    CHECK_THAT(r.oracle->failure(), Catch::Contains("got ports no first fragment of its datagram had"));
}

TEST_CASE("The oracle reports a cop pass whose expiries it cannot account for", "[fuzz][oracle]")
{
    Rig r{fuzz::TrackSetup{}};
    r.syn(1000);
    r.now += 10 * fuzz::kSecNs;
    r.table->run_cop(r.now, UINT64_MAX, UINT64_MAX); // behind its back: the SYN expires
    const conntrack::CopResult res = r.table->run_cop(r.now, UINT64_MAX, UINT64_MAX);
    r.oracle->after_cop(r.now, UINT64_MAX, UINT64_MAX, res);
    CHECK_FALSE(r.oracle->ok());
}
