// SPDX-License-Identifier: BSD-3-Clause
// The control socket's requests and flow lines (app/service/control/ctl_query.h, ctl_format.h): what flowcopctl
// may ask, what is refused, which flows a filter selects, and how a flow is shown.
#include <service/control/ctl_format.h>
#include <service/control/ctl_query.h>
#include <service/options/options.h>

#include <packet/packet.h>

#include "frame_builder.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace flowcop;
using namespace flowcop::app;

namespace {

CtlRequest request(const std::string& line)
{
    CtlRequest r;
    const std::string e = parse_ctl_request(line, r);
    INFO(line << " -> " << e);
    REQUIRE(e.empty());
    return r;
}

std::string error_of(const std::string& line)
{
    CtlRequest r;
    return parse_ctl_request(line, r);
}

packet::Packet parsed(test::FrameBuilder b)
{
    const std::vector<uint8_t> f = b.build();
    packet::Packet p;
    REQUIRE(packet::parse(f.data(), uint32_t(f.size()), p) == packet::Verdict::tcp);
    return p;
}

// A flow as the table would copy it, created by the packet `p` (its sender is the originator).
conntrack::FlowSnapshot flow_of(const packet::Packet& p, tcpstate::State state, uint8_t tracker_flags)
{
    conntrack::FlowSnapshot s{};
    s.key = p.key;
    s.orig_is_lo = p.src_is_lo;
    s.state = state;
    s.tcp = tcpstate::Tracker{state, tracker_flags};
    s.assured = s.tcp.assured();
    return s;
}

} // namespace

TEST_CASE("get's tuple gives the data plane's own key, in either direction, with VLANs and zone", "[app][ctl]")
{
    const packet::Packet p = parsed(test::FrameBuilder()
                                        .vlan(10)
                                        .vlan(20)
                                        .ipv4({.src = test::ip4("10.0.0.1"), .dst = test::ip4("10.0.1.1")})
                                        .tcp({.sport = 40000, .dport = 80}));
    CHECK(request("get src=10.0.0.1 dst=10.0.1.1 sport=40000 dport=80 vlan=10,20").key == p.key);
    CHECK(request("get proto=tcp src=10.0.1.1 dst=10.0.0.1 sport=80 dport=40000 vlan=10,20").key == p.key);
    CHECK_FALSE(request("get src=10.0.0.1 dst=10.0.1.1 sport=40000 dport=80 vlan=10").key == p.key);
    CHECK(request("get src=10.0.0.1 dst=10.0.1.1 sport=40000 dport=80 zone=7").key.zone == 7);
    CHECK(request("get proto=17 src=::1 dst=::2 sport=1 dport=2").key.proto == 17);
}

TEST_CASE("update takes get's tuple and a timeout of 1 s to the longest flowcop accepts", "[app][ctl]")
{
    const CtlRequest r = request("update proto=udp src=10.0.1.1 dst=10.0.0.1 sport=53 dport=40000 timeout=30");
    CHECK(r.verb == CtlVerb::update);
    CHECK(r.timeout_s == 30);
    CHECK(r.key == request("get proto=udp src=10.0.0.1 dst=10.0.1.1 sport=40000 dport=53").key);
    CHECK(request("update src=::1 dst=::2 sport=1 dport=2 timeout=1").timeout_s == 1);
    CHECK(request("update src=::1 dst=::2 sport=1 dport=2 timeout=" + std::to_string(kMaxTimeoutS)).timeout_s ==
          kMaxTimeoutS);
    const std::string tuple = "update src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2";
    CHECK(error_of(tuple).find("needs timeout=SECONDS") != std::string::npos);
    CHECK(error_of(tuple + " timeout=0").find("timeout: '0' is not a number of seconds (1..31536000)") !=
          std::string::npos);
    CHECK(error_of(tuple + " timeout=" + std::to_string(kMaxTimeoutS + 1ull)).find("1..31536000") != std::string::npos);
    CHECK(error_of(tuple + " timeout=-1").find("timeout") != std::string::npos);
    CHECK(error_of(tuple + " timeout=1.5").find("timeout") != std::string::npos);
    CHECK(error_of(tuple + " timeout=").find("timeout") != std::string::npos);
    CHECK(error_of(tuple + " timeout=5 timeout=6").find("twice") != std::string::npos);
    CHECK(error_of("update src=10.0.0.1 dst=10.0.0.2 sport=1 timeout=5").find("update needs the whole tuple") !=
          std::string::npos);
    CHECK(error_of("update src=10.0.0.0/8 dst=10.0.0.2 sport=1 dport=2 timeout=5").find("exact") != std::string::npos);
    CHECK(error_of(tuple + " timeout=5 state=CLOSE").find("unknown key") != std::string::npos);
    // timeout= belongs to update alone.
    CHECK(error_of("get src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2 timeout=5").find("unknown key 'timeout'") !=
          std::string::npos);
    CHECK(error_of("list timeout=5").find("unknown key") != std::string::npos);
}

TEST_CASE("Requests that are malformed, out of range or incomplete are refused with one sentence", "[app][ctl]")
{
    CHECK(error_of("").find("empty") != std::string::npos);
    CHECK(error_of("dump").find("unknown verb") != std::string::npos);
    CHECK(error_of("list bogus=1").find("unknown key") != std::string::npos);
    CHECK(error_of("list sport").find("KEY=VALUE") != std::string::npos);
    CHECK(error_of("list sport=65536").find("sport") != std::string::npos);
    CHECK(error_of("list src=10.0.0.0/33").find("prefix length") != std::string::npos);
    CHECK(error_of("list src=2001:db8::/129").find("prefix length") != std::string::npos);
    CHECK(error_of("list src=10.0.0.300").find("not an IPv4 or IPv6") != std::string::npos);
    CHECK(error_of("list state=OPEN").find("not a state") != std::string::npos);
    CHECK(error_of("list vlan=4096").find("vlan") != std::string::npos);
    CHECK(error_of("list vlan=1,2,3").find("vlan") != std::string::npos);
    CHECK(error_of("list proto=xyz").find("protocol") != std::string::npos);
    CHECK(error_of("list proto=256").find("protocol") != std::string::npos);
    CHECK(error_of("list sport=1 sport=2").find("twice") != std::string::npos);
    CHECK(error_of("flush src=10.0.0.1").find("no filters") != std::string::npos);
    CHECK(error_of("stats lcore=1").find("no filters") != std::string::npos);
    CHECK(error_of("get src=10.0.0.1 dst=10.0.0.2 sport=1").find("whole tuple") != std::string::npos);
    CHECK(error_of("get src=10.0.0.0/8 dst=10.0.0.2 sport=1 dport=2").find("exact") != std::string::npos);
    CHECK(error_of("get src=10.0.0.1 dst=::2 sport=1 dport=2").find("both") != std::string::npos);
    CHECK(error_of("get src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2 state=ESTABLISHED").find("unknown key") !=
          std::string::npos);
    CHECK(error_of("list " + std::string(2000, 'a')).find("longer") != std::string::npos);
    // Binary and oversized parts are quoted safely and shortened.
    const std::string e = error_of("list src=" + std::string(300, '\xff'));
    CHECK(e.size() < 200);
    CHECK(e.find("\\xff") != std::string::npos);
}

TEST_CASE("Filters select flows by the originator's side, prefixes, state, VLAN, zone, lcore", "[app][ctl]")
{
    // Created by the client's SYN: the client is the originator whichever endpoint the key puts first.
    const packet::Packet syn = parsed(test::FrameBuilder()
                                          .vlan(10)
                                          .vlan(20)
                                          .ipv4({.src = test::ip4("192.0.2.77"), .dst = test::ip4("10.0.0.5")})
                                          .tcp({.sport = 40000, .dport = 443}));
    conntrack::FlowSnapshot f =
        flow_of(syn, tcpstate::State::established, tcpstate::detail::kSeenReply | tcpstate::detail::kAssured);
    auto match = [&](const std::string& filters, unsigned lcore = 2) {
        return ctl_matches(request("list " + filters).filter, CtlCandidate::of(lcore, f));
    };
    CHECK(match(""));
    CHECK(match("proto=tcp src=192.0.2.0/24 dst=10.0.0.5 sport=40000 dport=443"));
    CHECK(match("src=0.0.0.0/0 dst=10.0.0.0/8"));
    CHECK_FALSE(match("src=10.0.0.5")); // the responder is not the source
    CHECK_FALSE(match("sport=443"));
    CHECK_FALSE(match("src=192.0.3.0/24"));
    CHECK(match("src=::/0")); // a zero-length prefix covers every address
    CHECK_FALSE(match("src=2001:db8::/32"));
    CHECK(match("state=established"));
    CHECK_FALSE(match("state=SYN_SENT"));
    CHECK(match("vlan=10"));
    CHECK(match("vlan=10,20"));
    CHECK_FALSE(match("vlan=10,21"));
    CHECK_FALSE(match("vlan=0"));
    CHECK(match("zone=0"));
    CHECK_FALSE(match("zone=1"));
    CHECK(match("lcore=2"));
    CHECK_FALSE(match("lcore=3"));
    CHECK_FALSE(match("proto=udp"));
}

TEST_CASE("A flow line has conntrack's flags and the event stream's field names", "[app][ctl]")
{
    const packet::Packet syn = parsed(test::FrameBuilder()
                                          .vlan(10)
                                          .ipv6({.src = test::ip6("2001:db8::2"), .dst = test::ip6("2001:db8::1")})
                                          .tcp({.sport = 40000, .dport = 443}));
    conntrack::FlowSnapshot f = flow_of(syn, tcpstate::State::syn_recv, tcpstate::detail::kSeenReply);
    f.flow_id = (uint64_t(3) << 32) | 9;
    f.in_port = 2;
    f.first_seen_ns = 1'700'000'000'123'456'789ull;
    f.last_seen_ns = 1'700'000'001'000'000'000ull;
    f.deadline_ns = f.last_seen_ns + 60'000'000'000ull;
    f.packets[0] = 2;
    f.packets[1] = 1;
    f.bytes[0] = 120;
    f.bytes[1] = 60;
    std::string line;
    append_flow_json(line, 4, f, f.last_seen_ns + 500'000'000ull);
    CHECK(
        line ==
        "{\"flow_id\":12884901897,\"lcore\":4,\"in_port\":2,\"proto\":\"tcp\",\"src\":\"2001:db8::2\",\"sport\":40000,"
        "\"dst\":\"2001:db8::1\",\"dport\":443,\"vlan\":[10,0],\"state\":\"SYN_RECV\",\"timeout\":59,"
        "\"flags\":[\"SEEN_REPLY\"],\"packets_orig\":2,\"packets_reply\":1,\"bytes_orig\":120,"
        "\"bytes_reply\":60,\"first_seen\":1700000000.123456,\"last_seen\":1700000001.000000}\n");
    // conntrack's rules: UNREPLIED exactly when no reply was seen; ASSURED beside SEEN_REPLY.
    using V = std::vector<std::string>;
    auto flags = [](const conntrack::FlowSnapshot& s) {
        V out;
        for (const char* x : flow_flags(s))
            out.emplace_back(x);
        return out;
    };
    CHECK(flags(f) == V{"SEEN_REPLY"});
    f.tcp.flags = tcpstate::detail::kSeenReply | tcpstate::detail::kAssured;
    f.assured = true;
    CHECK(flags(f) == V{"SEEN_REPLY", "ASSURED"});
    f.tcp.flags = 0;
    f.assured = false;
    f.killed = true;
    CHECK(flags(f) == V{"UNREPLIED", "KILLED"});
    CHECK(seconds_left(f, f.deadline_ns + 1) == 0);
}

TEST_CASE("Protocol names are conntrack's", "[app][ctl]")
{
    uint8_t p = 0;
    CHECK((parse_proto("TCP", p) && p == 6));
    CHECK((parse_proto("icmpv6", p) && p == 58));
    CHECK((parse_proto("ipv6-icmp", p) && p == 58));
    CHECK((parse_proto("132", p) && p == 132));
    CHECK_FALSE(parse_proto("", p));
    CHECK(proto_name(17) == "udp");
    CHECK(proto_name(250) == "250");
}

TEST_CASE("events takes kinds and the filters events carry", "[app][ctl]")
{
    using events::Kind;
    CHECK(request("events").kinds == kFollowKinds);
    CHECK(request("events kinds=NEW").kinds == events::kind_bit(Kind::created));
    CHECK(request("events kinds=destroy,new proto=tcp").kinds ==
          (events::kind_bit(Kind::created) | events::kind_bit(Kind::destroyed)));
    CHECK(request("events kinds=Update").kinds == events::kind_bit(Kind::updated));
    CHECK(request("events kinds=new,update,destroy").kinds == kFollowKinds);
    CHECK(error_of("events kinds=bogus").find("not an event kind") != std::string::npos);
    CHECK(error_of("events kinds=new kinds=new").find("twice") != std::string::npos);
    CHECK(error_of("events zone=1").find("zone") != std::string::npos);
    CHECK(error_of("events state=CLOSE").find("state") != std::string::npos);
    CHECK(error_of("list kinds=new").find("unknown key") != std::string::npos);

    events::Event e{};
    e.kind = Kind::created;
    e.proto = 6;
    e.lcore = 1;
    e.sport = 40000;
    e.dport = 443;
    e.vlan_outer = 10;
    e.vlan_inner = 20;
    const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 77};
    std::memcpy(e.src, v4, 16);
    auto match = [&](const std::string& filters) {
        return ctl_matches(request("events " + filters).filter, CtlCandidate::of(e));
    };
    CHECK(match(""));
    CHECK(match("proto=tcp src=192.0.2.0/24 sport=40000 dport=443 vlan=10 lcore=1"));
    CHECK(match("vlan=10,20"));
    CHECK_FALSE(match("vlan=10,21"));
    CHECK_FALSE(match("src=192.0.3.0/24"));
    CHECK_FALSE(match("proto=udp"));
    CHECK_FALSE(match("lcore=0"));
    CHECK_FALSE(match("dport=80"));
}
