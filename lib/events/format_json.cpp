// SPDX-License-Identifier: BSD-3-Clause
// JSON-lines rendering of an Event, without iostreams or allocation.
#include <events/event.h>
#include <text/appender.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace flowcop::events {
namespace {

// The address as a JSON string: IPv4-mapped addresses dotted, others as IPv6 text.
void addr(text::Appender& o, const uint8_t a[16]) noexcept
{
    static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char printed[INET6_ADDRSTRLEN];
    const bool v4 = std::memcmp(a, kV4Mapped, sizeof kV4Mapped) == 0;
    if (inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? a + 12 : a, printed, sizeof printed) == nullptr)
        return o.fail();
    o.ch('"');
    o.lit(printed);
    o.ch('"');
}

} // namespace

const char* proto_json_name(uint8_t proto, bool ipv4) noexcept
{
    // ICMP over IPv4 and ICMPv6 over IPv6 are the ICMP family; the other way round they are other
    // protocols keyed without ports (lib/packet), named by number.
    if (proto == IPPROTO_TCP)
        return "tcp";
    if (proto == IPPROTO_UDP)
        return "udp";
    if (proto == IPPROTO_ICMP && ipv4)
        return "icmp";
    if (proto == IPPROTO_ICMPV6 && !ipv4)
        return "icmpv6";
    return nullptr;
}

const char* timeout_cap_name(uint8_t cap) noexcept
{
    switch (cap) {
    case 1: return "max_retrans";
    case 2: return "unacknowledged";
    case 3: return "close";
    default: return nullptr;
    }
}

size_t format_json_line(const Event& e, char* buf, size_t buflen) noexcept
{
    std::string_view event;
    switch (e.kind) {
    case Kind::created: event = R"({"event":"new")"; break;
    case Kind::destroyed: event = R"({"event":"destroy")"; break;
    case Kind::interim: event = R"({"event":"interim")"; break;
    case Kind::updated: event = R"({"event":"update")"; break;
    default: return 0;
    }
    text::Appender o(buf, buflen);
    o.lit(event);
    o.lit(R"(,"time":)");
    o.seconds(e.time_ns);
    if (e.present & kHasFlowId) { // the same from new to destroy: a consumer joins a flow's events by it
        o.lit(R"(,"flow_id":)");
        o.u64(e.flow_id);
    }
    o.lit(R"(,"lcore":)");
    o.u64(e.lcore);
    if (e.present & kHasInPort) { // IPFIX's ingressInterface, the same port id
        o.lit(R"(,"in_port":)");
        o.u64(e.in_port);
    }
    // ICMP over IPv4 and ICMPv6 over IPv6 are the ICMP family; the other way round they are other
    // protocols keyed without ports (lib/packet), printed by number.
    const bool v4 =
        std::all_of(e.src, e.src + 10, [](uint8_t b) { return b == 0; }) && e.src[10] == 0xff && e.src[11] == 0xff;
    const bool icmp = (e.proto == IPPROTO_ICMP && v4) || (e.proto == IPPROTO_ICMPV6 && !v4);
    o.lit(R"(,"proto":")");
    if (const char* name = proto_json_name(e.proto, v4))
        o.lit(name);
    else
        o.u64(e.proto); // a string too: one JSON type for "proto"
    o.ch('"');
    o.lit(R"(,"src":)");
    addr(o, e.src);
    o.lit(R"(,"sport":)");
    o.u64(e.sport);
    o.lit(R"(,"dst":)");
    addr(o, e.dst);
    o.lit(R"(,"dport":)");
    o.u64(e.dport);
    if (icmp) {
        // An ICMP query flow's ports are the originator's (identifier, query type): lib/packet/flow_key.h.
        o.lit(R"(,"icmp_id":)");
        o.u64(e.sport);
        o.lit(R"(,"icmp_type":)");
        o.u64(e.dport);
    }
    // 0 means "no tag" in either slot; print the tags that exist, outer first.
    if (e.vlan_outer != 0 || e.vlan_inner != 0) {
        o.lit(R"(,"vlan":[)");
        if (e.vlan_outer != 0)
            o.u64(e.vlan_outer);
        if (e.vlan_outer != 0 && e.vlan_inner != 0)
            o.ch(',');
        if (e.vlan_inner != 0)
            o.u64(e.vlan_inner);
        o.ch(']');
    }
    o.lit(R"(,"state":)");
    o.str(e.state);
    if (e.kind == Kind::destroyed) {
        o.lit(R"(,"reason":)");
        o.str(e.reason);
        if (const char* cap = timeout_cap_name(e.timeout_cap)) {
            o.lit(R"(,"timeout_cap":)");
            o.str(cap);
        }
    }
    if (e.kind == Kind::updated && (e.present & kHasStatus)) {
        o.lit((e.status & kStatusSeenReply) ? R"(,"flags":["SEEN_REPLY")" : R"(,"flags":["UNREPLIED")");
        if (e.status & kStatusAssured)
            o.lit(R"(,"ASSURED")");
        o.ch(']');
    }
    if (e.kind == Kind::updated && (e.present & kHasInvalid)) {
        o.lit(R"(,"invalid":)");
        o.str(e.reason);
    }
    o.lit(R"(,"packets_orig":)");
    o.u64(e.packets[0]);
    o.lit(R"(,"packets_reply":)");
    o.u64(e.packets[1]);
    o.lit(R"(,"bytes_orig":)");
    o.u64(e.bytes[0]);
    o.lit(R"(,"bytes_reply":)");
    o.u64(e.bytes[1]);
    o.lit(R"(,"first_seen":)");
    o.seconds(e.first_seen_ns);
    o.lit(R"(,"last_seen":)");
    o.seconds(e.last_seen_ns);
    o.lit("}\n");
    return o.ok() ? o.size() : 0;
}

} // namespace flowcop::events
