// SPDX-License-Identifier: BSD-3-Clause
// The encoder against an independent decoder (decoder.h): what goes in comes out, and every message
// obeys RFC 7011's rules for UDP export.
#include <ipfix/encoder.h>
#include <ipfix/end_reason.h>

#include <conntrack/reason.h>

#include <catch2/catch.hpp>

#include <algorithm>

#include "helpers.h"

using namespace flowcop;
using namespace flowcop::ipfix;
using namespace flowcop::ipfix::test;

namespace {

constexpr uint64_t kNow = 1'700'000'200'000'000'000ull; // export time 1700000200 s

EncoderConfig config(uint16_t max_bytes = 1472)
{
    EncoderConfig c;
    c.domain_id = 42;
    c.max_message_bytes = max_bytes;
    return c;
}

uint64_t ms(uint64_t ns)
{
    return ns / 1'000'000;
}

} // namespace

TEST_CASE("An IPv4 biflow record decodes to the event's fields, directions and times", "[ipfix][encoder]")
{
    Encoder enc(config());
    DecodingSink sink;
    events::Event e = flow_event(7, false, static_cast<uint8_t>(conntrack::Reason::reset));
    e.vlan_outer = 100;
    e.vlan_inner = 200;
    enc.add(e, kNow, sink);
    enc.flush(kNow, sink);
    INFO(sink.decoder.errors.size());
    REQUIRE(sink.decoder.errors.empty());
    REQUIRE(sink.decoder.records.size() == 1);
    REQUIRE(sink.decoder.messages.size() == 1);
    CHECK(sink.decoder.messages[0].export_time == 1'700'000'200u);
    CHECK(sink.decoder.messages[0].domain == 42);
    const Record& r = sink.decoder.records[0];
    CHECK(r.num(152) == ms(e.first_seen_ns)); // flowStartMilliseconds
    CHECK(r.num(153) == ms(e.last_seen_ns));  // flowEndMilliseconds
    CHECK(r.bytes(8) == std::vector<uint8_t>{10, 1, 0, 7});
    CHECK(r.bytes(12) == std::vector<uint8_t>{192, 0, 2, 9});
    CHECK(!r.has(27));
    CHECK(r.num(7) == 1007);
    CHECK(r.num(11) == 443);
    CHECK(r.num(4) == 6);
    CHECK(r.num(1) == 1007);             // octetDeltaCount: originator -> responder
    CHECK(r.num(2) == 17);               // packetDeltaCount
    CHECK(r.num(1, kReversePen) == 507); // RFC 5103 reverse: responder -> originator
    CHECK(r.num(2, kReversePen) == 12);
    // layer2OctetDeltaCount: IP bytes + packets x (Ethernet 14 + two tags of 4), both directions.
    CHECK(r.num(352) == 1007 + 17 * 22);
    CHECK(r.num(352, kReversePen) == 507 + 12 * 22);
    CHECK(r.num(136) == kEndOfFlowDetected);
    CHECK(r.num(58) == 100);           // vlanId: outer tag
    CHECK(r.num(59) == 100);           // postVlanId: unchanged
    CHECK(r.num(245) == 200);          // dot1qCustomerVlanId: inner tag
    CHECK(r.num(1, kFlowcopPen) == 7); // flowcopState
    CHECK(r.num(2, kFlowcopPen) == static_cast<uint8_t>(conntrack::Reason::reset));
    // Absent optional fields are left out of the template, not sent as zeros.
    CHECK(!r.has(6));
    CHECK(!r.has(10));
    CHECK(!r.has(3, kFlowcopPen));
}

TEST_CASE("An IPv6 record with every optional field uses its own template and decodes whole", "[ipfix][encoder]")
{
    Encoder enc(config());
    DecodingSink sink;
    events::Event e = flow_event(0x1234, true);
    e.present = events::kHasTcpFlags | events::kHasInPort | events::kHasFlowId;
    e.tcp_flags[0] = 0x1b; // FIN PSH ACK SYN
    e.tcp_flags[1] = 0x12;
    e.in_port = 3;
    e.flow_id = 0x0102030405060708ull;
    enc.add(flow_event(1), kNow, sink); // an IPv4 one first: two templates in one domain
    enc.add(e, kNow, sink);
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    REQUIRE(sink.decoder.records.size() == 2);
    const Record& r = sink.decoder.records[1];
    CHECK(r.template_id != sink.decoder.records[0].template_id);
    CHECK(r.bytes(27) == std::vector<uint8_t>(e.src, e.src + 16));
    CHECK(r.bytes(28) == std::vector<uint8_t>(e.dst, e.dst + 16));
    CHECK(!r.has(8));
    CHECK(r.num(6) == 0x1b);
    CHECK(r.num(6, kReversePen) == 0x12);
    CHECK(r.num(10) == 3);
    CHECK(r.num(3, kFlowcopPen) == 0x0102030405060708ull);
}

// An ICMP query flow's key ports are (identifier, query type) (lib/packet/packet.h): its record
// says ports 0 and the type in icmpTypeCodeIPv4 / IPv6, after the ports (nfdump files it as its
// destination port, in template order).
TEST_CASE("ICMP and ICMPv6 flows carry ports 0 and their type and code in icmpTypeCodeIPv4/IPv6", "[ipfix][encoder]")
{
    Encoder enc(config());
    DecodingSink sink;
    events::Event echo = flow_event(1); // 10.1.0.1 pings 192.0.2.9: identifier 0x1234, echo request
    echo.proto = 1;
    echo.sport = 0x1234;
    echo.dport = 8;
    events::Event timestamp = echo; // another query type over IPv4: timestamp request 13
    timestamp.sport = 0x0777;
    timestamp.dport = 13;
    events::Event echo6 = flow_event(2, true); // ICMPv6 echo request 128
    echo6.proto = 58;
    echo6.sport = 0x4242;
    echo6.dport = 128;
    events::Event icmp_over_v6 = flow_event(3, true); // protocol 1 over IPv6: another protocol, no ports
    icmp_over_v6.proto = 1;
    icmp_over_v6.sport = icmp_over_v6.dport = 0;
    events::Event v6_over_v4 = flow_event(4); // protocol 58 over IPv4: the same
    v6_over_v4.proto = 58;
    v6_over_v4.sport = v6_over_v4.dport = 0;
    for (const auto& e : {echo, timestamp, echo6, icmp_over_v6, v6_over_v4, flow_event(5)})
        enc.add(e, kNow, sink);
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    const auto& r = sink.decoder.records;
    REQUIRE(r.size() == 6);
    CHECK(r[0].num(7) == 0); // sourceTransportPort: not the identifier
    CHECK(r[0].num(11) == 0);
    CHECK(r[0].num(32) == 8 << 8); // echo request, code 0
    CHECK(!r[0].has(139));
    CHECK(r[0].num(4) == 1);
    CHECK(r[1].num(32) == 13 << 8);
    CHECK(r[1].template_id == r[0].template_id);
    CHECK(r[2].num(7) == 0);
    CHECK(r[2].num(11) == 0);
    CHECK(r[2].num(139) == 128 << 8);
    CHECK(!r[2].has(32));
    for (size_t i = 3; i < 6; ++i) { // not ICMP: no type/code element, the key's ports as they are
        CHECK(!r[i].has(32));
        CHECK(!r[i].has(139));
        CHECK(r[i].num(11) == (i == 5 ? 443 : 0));
    }
    // The type/code element follows the ports in the template.
    const auto& fields = sink.decoder.templates[42][r[0].template_id];
    std::vector<uint16_t> ids;
    for (const Field& f : fields)
        ids.push_back(f.id);
    const auto at = [&ids](uint16_t id) { return std::find(ids.begin(), ids.end(), id) - ids.begin(); };
    CHECK(at(7) < at(11));
    CHECK(at(11) + 1 == at(32));
    const auto& fields6 = sink.decoder.templates[42][r[2].template_id];
    CHECK(std::any_of(fields6.begin(), fields6.end(), [](const Field& f) { return f.id == 139; }));
}

// nfdump 1.7 writes fields in template order and files an unmapped reverse element under the
// forward one: the reverse flags must come first so that the forward value wins there.
TEST_CASE("The reverse tcpControlBits precedes the forward one in the template", "[ipfix][encoder]")
{
    Encoder enc(config());
    DecodingSink sink;
    events::Event e = flow_event(1);
    e.present = events::kHasTcpFlags;
    enc.add(e, kNow, sink);
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    const auto& fields = sink.decoder.templates[42].begin()->second;
    int forward = -1, reverse = -1;
    for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].id == 6 && fields[i].enterprise == 0)
            forward = int(i);
        if (fields[i].id == 6 && fields[i].enterprise == kReversePen)
            reverse = int(i);
    }
    REQUIRE(forward >= 0);
    REQUIRE(reverse >= 0);
    CHECK(reverse < forward);
}

TEST_CASE("flowcop's end reasons map onto flowEndReason as documented", "[ipfix][encoder]")
{
    using conntrack::Reason;
    CHECK(flow_end_reason(uint8_t(Reason::inactivity)) == kIdleTimeout);
    CHECK(flow_end_reason(uint8_t(Reason::active)) == kActiveTimeout);
    CHECK(flow_end_reason(uint8_t(Reason::closed)) == kEndOfFlowDetected);
    CHECK(flow_end_reason(uint8_t(Reason::reset)) == kEndOfFlowDetected);
    CHECK(flow_end_reason(uint8_t(Reason::killed)) == kForcedEnd);
    CHECK(flow_end_reason(uint8_t(Reason::evicted)) == kLackOfResources);
    CHECK(flow_end_reason(uint8_t(Reason::shutdown)) == kForcedEnd);
    CHECK(flow_end_reason(uint8_t(Reason::count)) == 0);
    CHECK(flow_end_reason(200) == 0);
}

TEST_CASE("An interim record says active timeout and, in flowcop's element, that the flow goes on", "[ipfix][encoder]")
{
    Encoder enc(config());
    DecodingSink sink;
    events::Event e = flow_event(3);
    e.kind = events::Kind::interim;
    e.reason_code = 0;
    e.interims = 2;
    enc.add(e, kNow, sink);
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    REQUIRE(sink.decoder.records.size() == 1);
    const Record& r = sink.decoder.records[0];
    CHECK(r.num(136) == kActiveTimeout);
    CHECK(r.num(2, kFlowcopPen) == kNotEnded);
    CHECK(r.num(1) == e.bytes[0]); // the counts as given: deltas are the exporter's (deltas.h)
    CHECK(flow_end_reason(e) == kActiveTimeout);
    e.kind = events::Kind::destroyed;
    e.reason_code = static_cast<uint8_t>(conntrack::Reason::closed);
    CHECK(flow_end_reason(e) == kEndOfFlowDetected);
    CHECK(flowcop_end_reason(e) == e.reason_code);
}

// RFC 7011 10.3.3: a message must fit the path MTU; the sequence number counts data records only.
TEST_CASE("Many records split into messages within the limit, with gapless sequence numbers", "[ipfix][encoder]")
{
    const uint16_t max_bytes = GENERATE(uint16_t(548), uint16_t(1472), uint16_t(8952));
    Encoder enc(config(max_bytes));
    DecodingSink sink;
    constexpr unsigned kRecords = 2000;
    for (unsigned i = 0; i < kRecords; ++i)
        enc.add(flow_event(i, i % 3 == 0), kNow, sink);
    enc.flush(kNow, sink);
    INFO("max " << max_bytes);
    REQUIRE(sink.decoder.errors.empty()); // includes the sequence check
    CHECK(sink.decoder.records.size() == kRecords);
    CHECK(sink.declared_records == kRecords);
    CHECK(enc.sequence() == kRecords);
    size_t largest = 0;
    for (size_t s : sink.sizes)
        largest = std::max(largest, s);
    CHECK(largest <= max_bytes);
    size_t filled = 0; // messages are filled before a new one starts: all but the last >= 75% full
    for (size_t i = 0; i + 1 < sink.sizes.size(); ++i)
        filled += sink.sizes[i] * 4 >= size_t(max_bytes) * 3;
    CHECK(filled == sink.sizes.size() - 1);
    for (unsigned i = 0; i < kRecords; ++i)
        CHECK(sink.decoder.records[i].num(7) == 1000 + i); // order kept across messages and templates
}

TEST_CASE("Templates are refreshed after template_refresh_messages messages", "[ipfix][encoder]")
{
    EncoderConfig c = config(548);
    c.template_refresh_messages = 3;
    c.template_refresh_ns = 0;
    Encoder enc(c);
    DecodingSink sink;
    for (unsigned i = 0; i < 200; ++i)
        enc.add(flow_event(i), kNow, sink);
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    const auto& m = sink.decoder.messages;
    REQUIRE(m.size() > 7);
    for (size_t i = 0; i < m.size(); ++i) {
        INFO("message " << i);
        CHECK((m[i].template_records > 0) == (i % 3 == 0));
    }
}

TEST_CASE("Templates are refreshed once template_refresh_ns has passed", "[ipfix][encoder]")
{
    EncoderConfig c = config();
    c.template_refresh_messages = 0;
    c.template_refresh_ns = 10'000'000'000ull;
    Encoder enc(c);
    DecodingSink sink;
    const uint64_t steps[] = {0, 4, 9, 10, 15, 21};
    for (uint64_t s : steps) {
        enc.add(flow_event(s), kNow + s * 1'000'000'000ull, sink);
        enc.flush(kNow + s * 1'000'000'000ull, sink);
    }
    REQUIRE(sink.decoder.errors.empty());
    const auto& m = sink.decoder.messages;
    REQUIRE(m.size() == 6);
    CHECK(m[0].template_records == 1);
    CHECK(m[1].template_records == 0);
    CHECK(m[2].template_records == 0);
    CHECK(m[3].template_records == 1); // 10 s after the first
    CHECK(m[4].template_records == 0);
    CHECK(m[5].template_records == 1);
}

// A refresh of many templates in a small message must still put each record's template first.
TEST_CASE("With every variant in use, a refresh in the smallest message keeps templates before data",
          "[ipfix][encoder]")
{
    EncoderConfig c = config(uint16_t(min_message_bytes()));
    c.template_refresh_messages = 1; // every message refreshes everything
    Encoder enc(c);
    DecodingSink sink;
    for (unsigned i = 0; i < 2 * kVariants; ++i) {
        const bool v6 = (i & kVariantIpv6) != 0;
        events::Event e = flow_event(i, v6);
        e.present = uint8_t(i & 7);
        if (i & kVariantIcmp)
            e.proto = v6 ? 58 : 1;
        enc.add(e, kNow, sink);
    }
    enc.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty());
    CHECK(sink.decoder.records.size() == 2 * kVariants);
    CHECK(sink.decoder.templates[42].size() == kVariants);
    for (size_t s : sink.sizes)
        CHECK(s <= min_message_bytes());
}

TEST_CASE("A flush with nothing open sends nothing, and domains are independent", "[ipfix][encoder]")
{
    Encoder a(config());
    EncoderConfig cb = config();
    cb.domain_id = 43;
    Encoder b(cb);
    DecodingSink sink;
    a.flush(kNow, sink);
    CHECK(sink.sizes.empty());
    a.add(flow_event(1), kNow, sink);
    b.add(flow_event(2), kNow, sink);
    b.add(flow_event(3), kNow, sink);
    a.flush(kNow, sink);
    b.flush(kNow, sink);
    a.add(flow_event(4), kNow, sink);
    a.flush(kNow, sink);
    REQUIRE(sink.decoder.errors.empty()); // per-domain sequences: 0, 0, then 1 in domain 42
    CHECK(sink.decoder.messages.back().sequence == 1);
    CHECK(b.sequence() == 2);
}

// layer2OctetDeltaCount is derived from the IP bytes with the tags the flow's key shows (template.h).
TEST_CASE("layer2OctetDeltaCount adds 14 bytes a packet, and 4 for each VLAN tag of the key", "[ipfix][encoder]")
{
    events::Event e = flow_event(3, false, 0);
    e.packets[0] = 10, e.packets[1] = 0, e.bytes[0] = 1000, e.bytes[1] = 0;
    CHECK(layer2_octets(e, 0) == 1000 + 10 * 14);
    CHECK(layer2_octets(e, 1) == 0);
    e.vlan_outer = 5;
    CHECK(layer2_octets(e, 0) == 1000 + 10 * 18);
    e.vlan_inner = 6;
    CHECK(layer2_octets(e, 0) == 1000 + 10 * 22);
    // An interim record's delta stays a delta: the derivation is linear in packets and bytes.
    events::Event half = e;
    half.packets[0] = 4, half.bytes[0] = 400;
    events::Event rest = e;
    rest.packets[0] = 6, rest.bytes[0] = 600;
    CHECK(layer2_octets(half, 0) + layer2_octets(rest, 0) == layer2_octets(e, 0));
}
