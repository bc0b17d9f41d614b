// SPDX-License-Identifier: BSD-3-Clause
// format_json_line: exact lines, valid JSON with the spec's fields, escaping, and bounded output.
#include <events/event.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "json_check.h"

using flowcop::events::Event;
using flowcop::events::format_json_line;
using flowcop::events::Kind;
using flowcop::events::test::JsonCheck;

namespace {

Event ipv4_created()
{
    Event e{};
    e.time_ns = 1700000000123456789ull;
    e.first_seen_ns = 1700000000123456789ull;
    e.last_seen_ns = 1700000000123456789ull;
    e.packets[0] = 1;
    e.bytes[0] = 74;
    const uint8_t src[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
    const uint8_t dst[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 93, 184, 216, 34};
    std::memcpy(e.src, src, 16);
    std::memcpy(e.dst, dst, 16);
    e.sport = 51000;
    e.dport = 80;
    e.lcore = 3;
    e.proto = 6;
    e.kind = Kind::created;
    e.state = "SYN_SENT";
    return e;
}

Event ipv6_destroyed()
{
    Event e{};
    e.time_ns = 1700000006000000000ull;
    e.first_seen_ns = 1700000000000001000ull;
    e.last_seen_ns = 1700000005999999999ull; // .999999999 must print as .999999, not round to 6.000000
    e.packets[0] = 10;
    e.packets[1] = 8;
    e.bytes[0] = 1500;
    e.bytes[1] = 9000;
    const uint8_t src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
    std::memcpy(e.src, src, 16);
    std::memcpy(e.dst, dst, 16);
    e.sport = 443;
    e.dport = 60000;
    e.vlan_outer = 100;
    e.vlan_inner = 200;
    e.lcore = 0;
    e.proto = 6;
    e.kind = Kind::destroyed;
    e.state = "TIME_WAIT";
    e.reason = "closed";
    return e;
}

std::string format(const Event& e)
{
    char buf[2048];
    const size_t n = format_json_line(e, buf, sizeof buf);
    return std::string(buf, n);
}

const std::vector<std::string> created_keys = {
    "event", "time",         "lcore",         "proto",      "src",         "sport",      "dst",      "dport",
    "state", "packets_orig", "packets_reply", "bytes_orig", "bytes_reply", "first_seen", "last_seen"};

} // namespace

// The flow table and the service print these lines verbatim; any change of shape breaks consumers.
TEST_CASE("An IPv4 created event prints dotted addresses, no vlan and no reason", "[events][format]")
{
    const std::string line = format(ipv4_created());
    CHECK(line == R"({"event":"new","time":1700000000.123456,"lcore":3,"proto":"tcp","src":"10.1.2.3","sport":51000,)"
                  R"("dst":"93.184.216.34","dport":80,"state":"SYN_SENT","packets_orig":1,"packets_reply":0,)"
                  R"("bytes_orig":74,"bytes_reply":0,"first_seen":1700000000.123456,"last_seen":1700000000.123456})"
                  "\n");
    const auto keys = JsonCheck::object_keys(line);
    REQUIRE(keys);
    CHECK(*keys == created_keys);
}

TEST_CASE("An IPv6 destroyed event prints both VLAN tags, the reason and truncated times", "[events][format]")
{
    const std::string line = format(ipv6_destroyed());
    CHECK(line ==
          R"({"event":"destroy","time":1700000006.000000,"lcore":0,"proto":"tcp","src":"2001:db8::1","sport":443,)"
          R"("dst":"2001:db8:0:1::2","dport":60000,"vlan":[100,200],"state":"TIME_WAIT","reason":"closed",)"
          R"("packets_orig":10,"packets_reply":8,"bytes_orig":1500,"bytes_reply":9000,)"
          R"("first_seen":1700000000.000001,"last_seen":1700000005.999999})"
          "\n");
    const auto keys = JsonCheck::object_keys(line);
    REQUIRE(keys);
    CHECK(*keys == std::vector<std::string>{"event", "time", "lcore", "proto", "src", "sport", "dst", "dport", "vlan",
                                            "state", "reason", "packets_orig", "packets_reply", "bytes_orig",
                                            "bytes_reply", "first_seen", "last_seen"});
}

// issue 17: an update line is a new line's shape plus conntrack's flags, and every kind carries the flow id
// (kHasFlowId) after the time, so a consumer joins a flow's events by it.
TEST_CASE("An update line carries the flow id and conntrack's flags; flags only on updates", "[events][format]")
{
    Event e = ipv4_created();
    e.kind = Kind::updated;
    e.state = "ESTABLISHED";
    e.flow_id = (uint64_t{7} << 32) | 42;
    e.status = flowcop::events::kStatusSeenReply | flowcop::events::kStatusAssured;
    e.present = flowcop::events::kHasFlowId | flowcop::events::kHasStatus;
    const std::string line = format(e);
    CHECK(line == R"({"event":"update","time":1700000000.123456,"flow_id":30064771114,"lcore":3,"proto":"tcp",)"
                  R"("src":"10.1.2.3","sport":51000,"dst":"93.184.216.34","dport":80,"state":"ESTABLISHED",)"
                  R"("flags":["SEEN_REPLY","ASSURED"],"packets_orig":1,"packets_reply":0,"bytes_orig":74,)"
                  R"("bytes_reply":0,"first_seen":1700000000.123456,"last_seen":1700000000.123456})"
                  "\n");
    CHECK(JsonCheck::object_keys(line));
    e.status = 0;
    CHECK(format(e).find(R"(,"flags":["UNREPLIED"],)") != std::string::npos);
    e.status = flowcop::events::kStatusAssured; // assured without a reply cannot happen, but prints as it is
    CHECK(format(e).find(R"(,"flags":["UNREPLIED","ASSURED"],)") != std::string::npos);
    e.present = flowcop::events::kHasFlowId; // no status known: no flags
    CHECK(format(e).find("flags") == std::string::npos);
    // New, destroy and interim lines never print flags, even with a status.
    e.present = flowcop::events::kHasFlowId | flowcop::events::kHasStatus;
    for (Kind k : {Kind::created, Kind::destroyed, Kind::interim}) {
        e.kind = k;
        const std::string other = format(e);
        CHECK(other.find("flags") == std::string::npos);
        CHECK(other.find(R"("time":1700000000.123456,"flow_id":30064771114,"lcore":3,)") != std::string::npos);
    }
}

// An invalid segment's update (kHasInvalid) says why after the flags, in the counters' word; only an update
// prints `invalid`, so a destroy's reason is never mistaken for it.
TEST_CASE("An invalid segment's update line names the refusal after the flags; only updates do", "[events][format]")
{
    Event e = ipv4_created();
    e.kind = Kind::updated;
    e.state = "ESTABLISHED";
    e.status = flowcop::events::kStatusSeenReply | flowcop::events::kStatusAssured;
    e.present = flowcop::events::kHasStatus | flowcop::events::kHasInvalid;
    e.reason_code = 1;
    e.reason = "seq_above_window";
    const std::string line = format(e);
    CHECK(line.find(R"("state":"ESTABLISHED","flags":["SEEN_REPLY","ASSURED"],"invalid":"seq_above_window",)"
                    R"("packets_orig":1,)") != std::string::npos);
    CHECK(JsonCheck::object_keys(line));
    for (Kind k : {Kind::created, Kind::destroyed, Kind::interim}) {
        e.kind = k;
        CHECK(format(e).find("invalid") == std::string::npos);
    }
    e.kind = Kind::updated;
    e.present = flowcop::events::kHasStatus; // a state change's update: no key even with a reason set
    CHECK(format(e).find("invalid") == std::string::npos);
}

// The timeout cap follows the reason on a destroy line, named as its --tcp-timeout-<name> option; no cap
// (0), an unknown value and every other kind of line print no key.
TEST_CASE("A destroy line names the flow's timeout cap after the reason", "[events][format]")
{
    Event e = ipv6_destroyed();
    e.timeout_cap = 2;
    const std::string line = format(e);
    CHECK(line.find(R"("reason":"closed","timeout_cap":"unacknowledged","packets_orig")") != std::string::npos);
    const auto keys = JsonCheck::object_keys(line);
    REQUIRE(keys);
    CHECK(std::count(keys->begin(), keys->end(), "timeout_cap") == 1);
    e.timeout_cap = 1;
    CHECK(format(e).find(R"("timeout_cap":"max_retrans")") != std::string::npos);
    e.timeout_cap = 3;
    CHECK(format(e).find(R"("timeout_cap":"close")") != std::string::npos);
    for (const uint8_t none : {0, 4, 255}) {
        e.timeout_cap = none;
        CHECK(format(e).find("timeout_cap") == std::string::npos);
    }
    Event created = ipv4_created();
    created.timeout_cap = 2;
    CHECK(format(created).find("timeout_cap") == std::string::npos);
}

TEST_CASE("An event that carries its port prints in_port after lcore; one without prints none", "[events][format]")
{
    Event e = ipv4_created();
    CHECK(format(e).find("in_port") == std::string::npos);
    e.in_port = 0; // port 0 is a port: the bit says it is known
    e.present = flowcop::events::kHasInPort;
    const std::string line = format(e);
    CHECK(line.find(R"("lcore":3,"in_port":0,"proto":"tcp")") != std::string::npos);
    auto keys = created_keys;
    keys.insert(keys.begin() + 3, "in_port");
    const auto got = JsonCheck::object_keys(line);
    REQUIRE(got);
    CHECK(*got == keys);
}

TEST_CASE("A single VLAN tag in either slot prints as a one-element array", "[events][format]")
{
    Event e = ipv4_created();
    e.vlan_outer = 4094;
    CHECK(format(e).find(R"("dport":80,"vlan":[4094],"state")") != std::string::npos);
    e.vlan_outer = 0;
    e.vlan_inner = 7;
    CHECK(format(e).find(R"("dport":80,"vlan":[7],"state")") != std::string::npos);
    CHECK(JsonCheck::object_keys(format(e)));
}

TEST_CASE("UDP prints as \"udp\" and other protocols as their number", "[events][format]")
{
    Event e = ipv4_created();
    e.proto = 17;
    CHECK(format(e).find(R"("proto":"udp",)") != std::string::npos);
    e.proto = 132;
    CHECK(format(e).find(R"("proto":"132",)") != std::string::npos); // a string, as every proto
    CHECK(JsonCheck::object_keys(format(e)));
}

// Strings come from static tables today; a future table entry with a quote must not break every consumer.
TEST_CASE("Quotes, backslashes and control characters in strings are escaped", "[events][format]")
{
    Event e = ipv6_destroyed();
    e.state = "A\"B\\C\n\x01";
    e.reason = "tab\there";
    const std::string line = format(e);
    CHECK(line.find(R"("state":"A\"B\\C\u000a\u0001","reason":"tab\u0009here")") != std::string::npos);
    CHECK(JsonCheck::object_keys(line));
    CHECK(line.find('\n') == line.size() - 1);
}

TEST_CASE("A missing state or destroy reason prints as null", "[events][format]")
{
    Event e = ipv6_destroyed();
    e.state = nullptr;
    e.reason = nullptr;
    const std::string line = format(e);
    CHECK(line.find(R"("state":null,"reason":null,)") != std::string::npos);
    CHECK(JsonCheck::object_keys(line));
}

TEST_CASE("A created event never prints a reason even if one is set", "[events][format]")
{
    Event e = ipv4_created();
    e.reason = "closed";
    CHECK(format(e).find("reason") == std::string::npos);
}

TEST_CASE("Time zero prints as 0.000000", "[events][format]")
{
    Event e = ipv4_created();
    e.time_ns = e.first_seen_ns = e.last_seen_ns = 0;
    const std::string line = format(e);
    CHECK(line.find(R"("time":0.000000,)") != std::string::npos);
    CHECK(line.find(R"("first_seen":0.000000,"last_seen":0.000000})") != std::string::npos);
}

// The writer formats into the tail of its batch; a line that does not fit must report 0, not overrun.
TEST_CASE("A too-small buffer yields 0 and nothing is written past its end", "[events][format]")
{
    const Event e = ipv6_destroyed();
    const std::string full = format(e);
    REQUIRE(!full.empty());
    std::vector<char> buf(full.size() + 16);
    size_t accepted = 0, overrun = 0;
    for (size_t len = 0; len < full.size(); ++len) {
        std::fill(buf.begin(), buf.end(), '#');
        accepted += format_json_line(e, buf.data(), len) != 0;
        overrun += !std::all_of(buf.begin() + static_cast<long>(len), buf.end(), [](char c) { return c == '#'; });
    }
    CHECK(accepted == 0);
    CHECK(overrun == 0);
    CHECK(format_json_line(e, buf.data(), full.size()) == full.size());
    CHECK(std::string(buf.data(), full.size()) == full);
}

TEST_CASE("An event whose kind is not a Kind value is rejected", "[events][format]")
{
    Event e = ipv4_created();
    const uint8_t bogus = 7;
    std::memcpy(&e.kind, &bogus, 1);
    char buf[2048];
    CHECK(format_json_line(e, buf, sizeof buf) == 0);
}

// typical_max_line is what callers size stack buffers with; prove the bound with the longest values.
TEST_CASE("The longest numbers and addresses with 256-byte strings fit typical_max_line", "[events][format]")
{
    Event e{};
    e.time_ns = e.first_seen_ns = e.last_seen_ns = UINT64_MAX;
    e.packets[0] = e.packets[1] = e.bytes[0] = e.bytes[1] = UINT64_MAX;
    std::memset(e.src, 0xff, 16);
    std::memset(e.dst, 0xff, 16);
    e.sport = e.dport = e.vlan_outer = e.vlan_inner = e.lcore = UINT16_MAX;
    e.proto = 255;
    e.kind = Kind::destroyed;
    e.state = e.reason = "";
    e.timeout_cap = 2; // the longest cap name
    const std::string fixed = format(e);
    CHECK(fixed.size() == 478); // 447 without the cap; "proto":"255" is a string
    CHECK(fixed.find(R"("timeout_cap":"unacknowledged")") != std::string::npos);
    e.proto = 58; // ICMPv6 over IPv6: "icmpv6" and the two ICMP fields
    CHECK(format(e).size() == 515);
    e.in_port = UINT16_MAX; // and the port
    e.present = flowcop::events::kHasInPort;
    CHECK(format(e).size() == 531);
    e.flow_id = UINT64_MAX; // and the flow id: with the cap, the longest line
    e.present |= flowcop::events::kHasFlowId | flowcop::events::kHasStatus;
    const std::string icmp = format(e);
    CHECK(icmp.size() == 562); // the figure event.h quotes
    CHECK(icmp.find(R"(,"flow_id":18446744073709551615,)") != std::string::npos);
    CHECK(icmp.find(R"("lcore":65535,"in_port":65535,"proto")") != std::string::npos);
    CHECK(icmp.find(R"("proto":"icmpv6")") != std::string::npos);
    CHECK(icmp.find(R"(,"icmp_id":65535,"icmp_type":65535)") != std::string::npos);
    static const std::string s256(256, 's');
    e.state = e.reason = s256.c_str();
    const std::string line = format(e);
    REQUIRE(!line.empty());
    // An update's flags (the longest, both words) are shorter than a destroy's reason and cap; with an
    // invalid segment's reason (as long as the destroy's) it is 2 bytes longer: the longest line.
    Event update = e;
    update.kind = Kind::updated;
    update.status = flowcop::events::kStatusSeenReply | flowcop::events::kStatusAssured;
    CHECK(format(update).size() < line.size());
    update.present |= flowcop::events::kHasInvalid;
    const std::string invalid = format(update);
    CHECK(invalid.size() == 562 + 2 * 256 + 2); // the figure event.h quotes
    CHECK(invalid.size() <= flowcop::events::kTypicalMaxLine);
    CHECK(JsonCheck::object_keys(invalid));
    CHECK(invalid.find(R"("flags":["SEEN_REPLY","ASSURED"],"invalid":"sss)") != std::string::npos);
    CHECK(line.size() == 562 + 2 * 256); // the figure event.h quotes
    CHECK(line.size() <= flowcop::events::kTypicalMaxLine);
    CHECK(JsonCheck::object_keys(line));
    CHECK(line.find(R"("src":"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")") != std::string::npos);
    CHECK(line.find(R"("time":18446744073.709551,)") != std::string::npos);
    CHECK(line.find(R"("vlan":[65535,65535])") != std::string::npos);
}

// The shortest line bounds how many lines the writer's batch table must hold (Batch::min_line_bytes).
TEST_CASE("The shortest possible line is 226 bytes", "[events][format]")
{
    Event e{};
    e.src[10] = e.src[11] = e.dst[10] = e.dst[11] = 0xff; // 0.0.0.0
    e.kind = Kind::created;
    e.state = "";
    CHECK(format(e).size() == 226); // "proto":"0": a string, as every proto
}
