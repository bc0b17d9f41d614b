// SPDX-License-Identifier: BSD-3-Clause
// The control plane's parameter parsers (app/service/control/control_parse.h): what the
// telemetry commands accept, what they refuse, and the text they answer with.
#include <service/control/control_parse.h>

#include <packet/packet.h>

#include "frame_builder.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace flowcop;
using namespace flowcop::app;

namespace {

packet::FlowKey tuple(const std::string& params)
{
    packet::FlowKey k{};
    const std::string e = parse_flow_tuple(params, k);
    INFO(params << " -> " << e);
    REQUIRE(e.empty());
    return k;
}

// The key the data plane computes for a real TCP frame between these endpoints.
packet::FlowKey parsed_key(test::FrameBuilder b)
{
    const std::vector<uint8_t> f = b.build();
    packet::Packet p;
    REQUIRE(packet::parse(f.data(), uint32_t(f.size()), p) == packet::Verdict::tcp);
    return p.key;
}

bool printable_ascii(const std::string& s)
{
    for (const char c : s)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            return false;
    return true;
}

} // namespace

// /flowcop/kill must find the flow the parser made: same canonical order, same VLAN packing.
TEST_CASE("A kill tuple gives the data plane's own key, in either direction", "[app][control_parse]")
{
    const auto v4 = parsed_key(test::FrameBuilder()
                                   .ipv4({.src = test::ip4("10.0.0.1"), .dst = test::ip4("10.0.1.1")})
                                   .tcp({.sport = 40000, .dport = 80}));
    CHECK(tuple("10.0.0.1,40000,10.0.1.1,80") == v4);
    CHECK(tuple("10.0.1.1,80,10.0.0.1,40000") == v4);

    const auto v6 = parsed_key(test::FrameBuilder()
                                   .vlan(100)
                                   .vlan(7)
                                   .ipv6({.src = test::ip6("2001:db8::1"), .dst = test::ip6("2001:db8::2")})
                                   .tcp({.sport = 41000, .dport = 443}));
    CHECK(tuple("2001:db8::2,443,2001:db8::1,41000,100,7") == v6);
    CHECK_FALSE(tuple("2001:db8::2,443,2001:db8::1,41000,100") == v6); // the inner tag is part of the key
    CHECK_FALSE(tuple("2001:db8::2,443,2001:db8::1,41000") == v6);
}

// Same address on both ends: the port decides the order, as in the parser.
TEST_CASE("A tuple between two ports of one host is canonical too", "[app][control_parse]")
{
    CHECK(tuple("127.0.0.1,5000,127.0.0.1,80") == tuple("127.0.0.1,80,127.0.0.1,5000"));
    const auto k = tuple("127.0.0.1,5000,127.0.0.1,80");
    CHECK(k.port_lo == 80);
    CHECK(k.port_hi == 5000);
    CHECK(k.proto == 6);
}

TEST_CASE("Malformed kill tuples are refused with a sentence naming the bad part", "[app][control_parse]")
{
    packet::FlowKey k{};
    const struct {
        const char* params;
        const char* says;
    } cases[] = {
        {"", "expected IP,PORT,IP,PORT[,VLAN[,VLAN]] (after an optional PROTO,), got ''"},
        {"1.2.3.4,1,5.6.7.8", "expected IP,PORT,IP,PORT"},
        {"1.2.3.4,1,5.6.7.8,2,3,4,5", "expected IP,PORT,IP,PORT"},
        {"1.2.3,1,5.6.7.8,2", "'1.2.3' is not an IPv4 or IPv6 address"},
        {"1.2.3.4,1,5.6.7.8.9,2", "'5.6.7.8.9' is not an IPv4 or IPv6 address"},
        {"1.2.3.4,x,5.6.7.8,2", "'x' is not a port (0..65535)"},
        {"1.2.3.4,1,5.6.7.8,65536", "'65536' is not a port (0..65535)"},
        {"1.2.3.4,+1,5.6.7.8,2", "'+1' is not a port"},
        {"1.2.3.4,-1,5.6.7.8,2", "'-1' is not a port"},
        {"1.2.3.4,1,5.6.7.8,2,4096", "'4096' is not a VLAN ID (0..4095)"},
        {"1.2.3.4,1,5.6.7.8,2,1,", "'' is not a VLAN ID"},
        {"1.2.3.4,1,::1,2", "both addresses must be IPv4 or both IPv6"},
        {" 1.2.3.4,1,5.6.7.8,2", "' 1.2.3.4' is not an IPv4 or IPv6 address"},
    };
    for (const auto& c : cases) {
        const std::string e = parse_flow_tuple(c.params, k);
        INFO(c.params << " -> " << e);
        CHECK(e.find(c.says) != std::string::npos);
    }
    // inet_pton would stop at the NUL and accept the prefix.
    CHECK_FALSE(parse_flow_tuple(std::string("1.2.3.4\0junk,1,5.6.7.8,2", 24), k).empty());
}

// An oversized or binary request is echoed shortened and escaped, so the reply still fits.
TEST_CASE("Errors quote bad input shortened and as printable ASCII", "[app][control_parse]")
{
    packet::FlowKey k{};
    const std::string e = parse_flow_tuple(std::string(5000, 'A'), k);
    CHECK(e.size() < 127);
    CHECK(e.find("AAAA...'") != std::string::npos);
    const std::string b = parse_flow_tuple("\xc3\xa9\x01,1,2.2.2.2,2", k);
    CHECK(printable_ascii(b));
    CHECK(b.find("'\\xc3\\xa9\\x01' is not an IPv4") != std::string::npos);
}

TEST_CASE("Flow queries take addr, port, lcore and limit in any order", "[app][control_parse]")
{
    FlowQuery q;
    REQUIRE(parse_flow_query("", q).empty());
    CHECK(q.limit == 20);
    CHECK_FALSE(q.filter.match_addr);
    CHECK_FALSE(q.match_lcore);

    FlowQuery r;
    REQUIRE(parse_flow_query("limit=32,port=443,lcore=3,addr=10.0.0.1", r).empty());
    CHECK(r.limit == 32);
    CHECK(r.filter.match_port);
    CHECK(r.filter.port == 443);
    CHECK(r.match_lcore);
    CHECK(r.lcore == 3);
    CHECK(r.filter.match_addr);
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    CHECK(std::memcmp(r.filter.addr, mapped, 16) == 0); // IPv4-mapped, as keys store it

    FlowQuery s;
    REQUIRE(parse_flow_query("addr=2001:db8::2", s).empty());
    CHECK(s.filter.addr[0] == 0x20);
    CHECK(s.filter.addr[15] == 2);
}

TEST_CASE("Bad flow filters are refused", "[app][control_parse]")
{
    const struct {
        const char* params;
        const char* says;
    } cases[] = {
        {"addr=1.2.3", "addr: '1.2.3' is not an IPv4 or IPv6 address"},
        {"addr=", "addr: '' is not"},
        {"port=65536", "port: '65536' is not a port"},
        {"port=", "port: '' is not a port"},
        {"lcore=1024", "lcore: '1024' is not an lcore id (0..1023)"},
        {"limit=0", "limit: '0' is not a number in 1..32"},
        {"limit=33", "limit: '33' is not a number in 1..32"},
        {"limit=99999999999999999999999", "limit: '99999999999999999999999' is not"},
        {"color=red", "unknown key 'color' (keys: addr, port, proto, lcore, limit)"},
        {"proto=sctp", "proto: 'sctp' is not one of tcp, udp, icmp, other"},
        {"limit", "expected key=value, got 'limit'"},
        {"limit=5,", "expected key=value, got ''"},
    };
    for (const auto& c : cases) {
        FlowQuery q;
        const std::string e = parse_flow_query(c.params, q);
        INFO(c.params << " -> " << e);
        CHECK(e.find(c.says) != std::string::npos);
    }
}

TEST_CASE("Commands without parameters refuse any", "[app][control_parse]")
{
    CHECK(parse_no_params("").empty());
    CHECK(parse_no_params("x") == "this command takes no parameters, got 'x'");
}

// /flowcop/set validates through the flag parser: a value is valid at run time exactly
// when it is valid as a flag, and only the named field changes.
TEST_CASE("Every settable name changes its own option and nothing else", "[app][control_parse]")
{
    const Options base = default_options();
    REQUIRE(settable_names().size() == 4 + kTcpStateFlagNames.size() + 5 + flowcop::protostate::kTimeoutCount);
    for (const std::string& name : settable_names()) {
        Options o = base;
        const bool is_switch = name == "tcp_be_liberal" || name == "tcp_ignore_invalid_rst";
        const std::string e = apply_setting(name + (is_switch ? ",on" : ",7"), o);
        INFO(name << " -> " << e);
        REQUIRE(e.empty());
        CHECK_FALSE(o == base);
        Options expect = base;
        if (name == "timeout_budget")
            expect.timeout_budget = 7;
        else if (name == "visit_budget_factor")
            expect.visit_budget_factor = 7;
        else if (name == "default_inactivity_timeout")
            expect.default_inactivity_timeout_s = 7;
        else if (name == "active_timeout")
            expect.active_timeout_s = 7;
        else if (name == "tcp_be_liberal")
            expect.tcp_be_liberal = true;
        else if (name == "tcp_ignore_invalid_rst")
            expect.tcp_ignore_invalid_rst = true;
        else if (name == "tcp_max_retrans")
            expect.tcp_max_retrans = 7;
        else if (name == "tcp_timeout_max_retrans")
            expect.tcp_timeout_max_retrans_s = 7;
        else if (name == "tcp_timeout_unacknowledged")
            expect.tcp_timeout_unacknowledged_s = 7;
        else
            for (size_t i = 0; i < kTcpStateFlagNames.size(); ++i)
                if (name == std::string("tcp_timeout_") + kTcpStateFlagNames[i])
                    expect.tcp_timeout_s[i] = 7;
        for (size_t i = 0; i < flowcop::protostate::kTimeoutCount; ++i) {
            std::string flag = flowcop::protostate::timeout_flag_name(flowcop::protostate::Timeout(i));
            for (char& ch : flag)
                ch = ch == '-' ? '_' : ch;
            if (name == flag)
                expect.proto_timeout_s[i] = 7;
        }
        CHECK(o == expect);
    }
}

TEST_CASE("Bad settings are refused with the flag parser's message and change nothing", "[app][control_parse]")
{
    const struct {
        const char* params;
        const char* says;
    } cases[] = {
        {"", "expected NAME,VALUE, got ''"},
        {"timeout_budget", "expected NAME,VALUE, got 'timeout_budget'"},
        {"timeout_budget,0", "--timeout-budget: must be at least 1, got 0"},
        {"timeout_budget,10000001", "--timeout-budget:"},
        {"timeout_budget,abc", "--timeout-budget:"},
        {"timeout_budget,", "--timeout-budget:"},
        {"timeout_budget,1,2", "--timeout-budget:"},
        {"timeout_budget,--quiet", "--timeout-budget:"},
        {"visit_budget_factor,1025", "--visit-budget-factor:"},
        {"tcp_timeout_established,31536001", "--tcp-timeout-established: must be at most 31536000"},
        {"default_inactivity_timeout,0", "--default-inactivity-timeout:"},
        {"tcp_max_retrans,0", "--tcp-max-retrans: must be at least 1, got 0"},
        {"tcp_max_retrans,128", "--tcp-max-retrans: must be at most 127"},
        {"tcp_be_liberal,yes", "--tcp-be-liberal: 'yes' is not one of on, off"},
        {"tcp_timeout_max_retrans,31536001", "--tcp-timeout-max-retrans: must be at most 31536000"},
        {"tcp_timeout_none,5", "'tcp_timeout_none' cannot be set at run time"},
        {"wheel_buckets,1024", "'wheel_buckets' cannot be set at run time"},
        {"TIMEOUT_BUDGET,5", "'TIMEOUT_BUDGET' cannot be set at run time"},
        {",5", "'' cannot be set at run time"},
    };
    for (const auto& c : cases) {
        Options o = default_options();
        const std::string e = apply_setting(c.params, o);
        INFO(c.params << " -> " << e);
        CHECK(e.find(c.says) != std::string::npos);
        CHECK(e.rfind("flowcop: ", 0) == std::string::npos); // the reply is not a command-line error
        CHECK(o == default_options());
        CHECK(e.size() <= 127);
    }
}

// A name may be spelled as its flag is (hyphens), like a TCP state's flag --tcp-timeout-time-wait.
TEST_CASE("A settable name spelled with hyphens is the same name", "[app][control_parse]")
{
    Options hyphens = default_options(), underscores = default_options();
    CHECK(apply_setting("tcp-timeout-time-wait,7", hyphens).empty());
    CHECK(apply_setting("tcp_timeout_time_wait,7", underscores).empty());
    CHECK(hyphens == underscores);
    CHECK(hyphens != default_options());
    CHECK(apply_setting("timeout-budget,9", hyphens).empty());
    CHECK(hyphens.timeout_budget == 9);
    CHECK(apply_setting("tcp-timeout-syn-sent2,x", hyphens).find("--tcp-timeout-syn-sent2:") != std::string::npos);
    CHECK(apply_setting("wheel-buckets,1024", hyphens).rfind("'wheel-buckets' cannot be set at run time", 0) == 0);
}

// DPDK 22.11 writes bytes >= 0x80 as an invalid JSON escape and drops control characters.
TEST_CASE("Reply text is printable ASCII, escapes the rest and is cut without splitting an escape",
          "[app][control_parse]")
{
    CHECK(reply_text("plain text") == "plain text");
    CHECK(reply_text("a\tb\n\x7f\xff") == "a\\x09b\\x0a\\x7f\\xff");
    CHECK(reply_text("caf\xc3\xa9") == "caf\\xc3\\xa9");
    CHECK(reply_text(std::string(200, 'x')).size() == 127);
    CHECK(reply_text("abc\xff", 5) == "abc"); // "\xff" needs 4 bytes: not cut in half
    CHECK(reply_text("abc\xff", 7) == "abc\\xff");
    CHECK(reply_text("", 10).empty());
}
