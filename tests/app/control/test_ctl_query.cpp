// SPDX-License-Identifier: BSD-3-Clause
// The control socket's requests and flow lines (app/service/control/ctl_query.h, ctl_format.h): what flowcopctl
// may ask, what is refused, which flows a filter selects, and how a flow is shown.
#include <service/control/ctl_format.h>
#include <service/control/ctl_query.h>
#include <service/options/options.h>

#include <packet/packet.h>

#include "frame_builder.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

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
    // Without the whole tuple, or with a prefix or a key get does not take, update is a walk by list's filters
    // (conntrack -U with filters).
    CHECK_FALSE(r.walk);
    CHECK(request("update src=10.0.0.1 dst=10.0.0.2 sport=1 timeout=5").walk);
    CHECK(request("update src=10.0.0.0/8 dst=10.0.0.2 sport=1 dport=2 timeout=5").walk);
    CHECK(request(tuple + " timeout=5 state=CLOSE").walk);
    CHECK(request("update proto=udp timeout=5").walk);
    CHECK(request("update timeout=5").walk);
    CHECK(request("update src=10.0.0.1/32 dst=10.0.0.2 sport=1 dport=2 timeout=5").key ==
          request(tuple + " timeout=5").key);
    CHECK(error_of("update src=::ffff:10.0.0.1 dst=::ffff:10.0.0.2 sport=1 dport=2 timeout=5").find("IPv4-mapped") !=
          std::string::npos);
    CHECK(error_of("update proto=udp").find("needs timeout=SECONDS") != std::string::npos);
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
    CHECK(error_of("get src=10.0.0.1 dst=::2 sport=1 dport=2").find("one family") != std::string::npos);
    CHECK(error_of("list src=10.0.0.0/8 dst=::/0").find("src is IPv4 and dst IPv6") != std::string::npos);
    CHECK(error_of("list family=ipv6 dst=10.0.0.1").find("dst is IPv4 but family=ipv6") != std::string::npos);
    CHECK(error_of("events family=ipv4 src=::/0").find("src is IPv6 but family=ipv4") != std::string::npos);
    CHECK(error_of("list family=inet").find("not ipv4 or ipv6") != std::string::npos);
    CHECK(error_of("list family=ipv4 family=ipv4").find("twice") != std::string::npos);
    CHECK(error_of("get src=::ffff:10.0.0.1 dst=::ffff:10.0.0.2 sport=1 dport=2").find("IPv4-mapped") !=
          std::string::npos);
    CHECK(error_of("get src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2 family=ipv4").find("unknown key") !=
          std::string::npos);
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
    CHECK(match("src=0.0.0.0/0"));  // a zero-length prefix covers every address of its family
    CHECK_FALSE(match("src=::/0")); // ... and none of the other (ctl_query.h, Families)
    CHECK_FALSE(match("src=2001:db8::/32"));
    CHECK(match("family=ipv4"));
    CHECK_FALSE(match("family=ipv6"));
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
    CHECK(request("events").buffer_bytes == 0);
    CHECK(request("events buffer=65536").buffer_bytes == 65536);
    CHECK(request("events buffer=67108864 kinds=destroy").buffer_bytes == 67108864);
    CHECK(error_of("events buffer=65535").find("65536..67108864") != std::string::npos);
    CHECK(error_of("events buffer=67108865").find("65536..67108864") != std::string::npos);
    CHECK(error_of("events buffer=65536 buffer=65537").find("twice") != std::string::npos);
    CHECK(error_of("list buffer=65536").find("unknown key") != std::string::npos);

    events::Event e{};
    e.kind = Kind::created;
    e.proto = 6;
    e.lcore = 1;
    e.sport = 40000;
    e.dport = 443;
    e.vlan_outer = 10;
    e.vlan_inner = 20;
    const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 77};
    const uint8_t v4_dst[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 5};
    std::memcpy(e.src, v4, 16);
    std::memcpy(e.dst, v4_dst, 16);
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
    CHECK(match("family=ipv4 dst=10.0.0.0/8"));
    CHECK_FALSE(match("src=::ffff:0:0/96")); // IPv4 is held IPv4-mapped, but an IPv6 prefix is not IPv4's
    CHECK_FALSE(match("family=ipv6"));
}

namespace {

// The first `bits` bits of a and b agree.
bool same_prefix(const uint8_t a[16], const uint8_t b[16], unsigned bits)
{
    for (unsigned i = 0; i < bits; ++i)
        if (((a[i / 8] ^ b[i / 8]) >> (7 - i % 8)) & 1)
            return false;
    return true;
}

std::string addr_text(const uint8_t a[16], bool ipv4)
{
    char buf[64];
    if (ipv4)
        std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
    else
        std::snprintf(buf, sizeof buf, "%x:%x:%x:%x:%x:%x:%x:%x", a[0] << 8 | a[1], a[2] << 8 | a[3], a[4] << 8 | a[5],
                      a[6] << 8 | a[7], a[8] << 8 | a[9], a[10] << 8 | a[11], a[12] << 8 | a[13], a[14] << 8 | a[15]);
    return buf;
}

} // namespace

TEST_CASE("An address filter matches its own family only, at every prefix length across the mapped range", "[app][ctl]")
{
    // A mixed table: an IPv4 flow, and IPv6 flows just below, inside and above the IPv4-mapped range
    // (::ffff:0:0/96), sharing its leading bytes, and far from it.
    struct Flow {
        const char* src;
        bool ipv4;
        conntrack::FlowSnapshot snap{};
        uint8_t addr[16] = {};
    };
    Flow flows[] = {{"192.0.2.77", true},  {"::fffe:c000:24d", false}, {"::1:0:0:0", false},
                    {"::c000:24d", false}, {"2001:db8::1", false},     {"::ffff:0:0:1", false}};
    for (Flow& f : flows) {
        test::FrameBuilder b;
        if (f.ipv4)
            b.ipv4({.src = test::ip4(f.src), .dst = test::ip4("10.0.0.5")});
        else
            b.ipv6({.src = test::ip6(f.src), .dst = test::ip6("2001:db8:ffff::5")});
        f.snap = flow_of(parsed(b.tcp({.sport = 40000, .dport = 443})), tcpstate::State::syn_sent, 0);
        uint16_t sport = 0, dport = 0;
        uint8_t dst[16];
        packet::key_endpoints(f.snap.key, f.snap.orig_is_lo, f.addr, sport, dst, dport);
    }
    REQUIRE(packet::key_is_ipv4(flows[0].snap.key));
    // Prefix bases: the IPv4 flow's own address written both ways, and each IPv6 flow's.
    for (const Flow& base : flows) {
        for (const bool typed_ipv4 : {false, true}) {
            if (typed_ipv4 && !base.ipv4)
                continue;
            const std::string text = addr_text(base.addr, typed_ipv4);
            for (unsigned len = 0; len <= (typed_ipv4 ? 32u : 128u); ++len) {
                const unsigned bits = len + (typed_ipv4 ? 96 : 0);
                for (const char* key : {"src", "dst"}) {
                    const CtlFilter filter =
                        request(std::string("list ") + key + "=" + text + "/" + std::to_string(len)).filter;
                    for (const Flow& f : flows) {
                        INFO(key << "=" << text << "/" << len << " against " << f.src);
                        const bool is_src = key[0] == 's';
                        // dst: the IPv4 flow's is 10.0.0.5, the IPv6 flows' 2001:db8:ffff::5.
                        uint8_t other[16];
                        uint16_t sp = 0, dp = 0;
                        uint8_t s[16];
                        packet::key_endpoints(f.snap.key, f.snap.orig_is_lo, s, sp, other, dp);
                        const bool expect = f.ipv4 == typed_ipv4 && same_prefix(base.addr, is_src ? s : other, bits);
                        CHECK(ctl_matches(filter, CtlCandidate::of(0, f.snap)) == expect);
                        events::Event e{};
                        std::memcpy(e.src, s, 16);
                        std::memcpy(e.dst, other, 16);
                        CHECK(ctl_matches(
                                  request(std::string("events ") + key + "=" + text + "/" + std::to_string(len)).filter,
                                  CtlCandidate::of(e)) == expect);
                    }
                }
            }
        }
    }
    // The prefixes of the report: none selects the IPv4 flow; each selects the IPv6 flows it covers.
    for (const char* p : {"::/0", "::/1", "::/8", "::ffff:0:0/96", "::/80", "::ffff:0:0/95"}) {
        INFO(p);
        CHECK_FALSE(ctl_matches(request(std::string("list src=") + p).filter, CtlCandidate::of(0, flows[0].snap)));
    }
    CHECK(ctl_matches(request("list src=::/0").filter, CtlCandidate::of(0, flows[4].snap)));
    CHECK(ctl_matches(request("list src=::ffff:0:0/95").filter, CtlCandidate::of(0, flows[1].snap)));
    unsigned v4 = 0, v6 = 0;
    for (const Flow& f : flows) {
        v4 += ctl_matches(request("list family=ipv4").filter, CtlCandidate::of(0, f.snap));
        v6 += ctl_matches(request("list family=ipv6").filter, CtlCandidate::of(0, f.snap));
    }
    CHECK(v4 == 1);
    CHECK(v6 == std::size(flows) - 1);
}

TEST_CASE("A new flow's starting timeout is its state's, as conntrack -E's NEW line shows it", "[app][ctl]")
{
    auto parsed = [](std::vector<std::string> args) {
        args.insert(args.begin(), "flowcop");
        std::vector<char*> argv;
        for (std::string& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        const ParseOutcome out = parse_options(int(args.size()), argv.data());
        REQUIRE(out.kind == ParseOutcome::ok);
        return out.options;
    };
    events::Event e{};
    e.kind = events::Kind::created;
    e.proto = 6;
    e.state_code = uint8_t(tcpstate::State::syn_sent);
    CHECK(created_timeout_s(parsed({}), e) == 120); // netfilter's nf_conntrack_tcp_timeout_syn_sent
    CHECK(created_timeout_s(parsed({"--tcp-timeout-syn-sent", "7"}), e) == 7);
    e.state_code = uint8_t(tcpstate::State::established); // a flow picked up mid-stream
    CHECK(created_timeout_s(parsed({}), e) == 432000);
    CHECK(created_timeout_s(parsed({"--active-timeout", "60"}), e) == 60); // the active timeout comes first
    e.proto = 17;
    e.state_code = protostate::initial(protostate::Family::udp).bits;
    CHECK(created_timeout_s(parsed({}), e) == 30);
    CHECK(created_timeout_s(parsed({"--udp-timeout", "9"}), e) == 9);
    e.proto = 47;
    e.state_code = protostate::initial(protostate::Family::generic).bits;
    CHECK(created_timeout_s(parsed({}), e) == 600);
}
