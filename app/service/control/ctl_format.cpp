// SPDX-License-Identifier: BSD-3-Clause
#include "ctl_format.h"

#include "ctl_query.h"

#include <packet/flow_key.h>
#include <tcpstate/tcp_state.h>
#include <text/appender.h>

#include <string_view>

namespace flowcop::app {
namespace {

// One flow line is at most ~600 bytes (two IPv6 addresses, every number at its widest), so a stack buffer
// of kLineBytes always holds it; a listing formats 10^6 of them.
constexpr size_t kLineBytes = 1024;

void addr(text::Appender& l, const uint8_t a[16]) noexcept
{
    char printed[packet::kAddrStrLen];
    const size_t n = packet::format_addr(a, printed, sizeof printed);
    l.ch('"');
    l.lit(std::string_view(printed, n));
    l.ch('"');
}

} // namespace

FlowFlags flow_flags(const conntrack::FlowSnapshot& f) noexcept
{
    FlowFlags flags{};
    flags.names[flags.count++] = conntrack::seen_reply(f) ? "SEEN_REPLY" : "UNREPLIED";
    if (f.assured)
        flags.names[flags.count++] = "ASSURED";
    if (f.reset)
        flags.names[flags.count++] = "RESET";
    if (f.killed)
        flags.names[flags.count++] = "KILLED";
    return flags;
}

uint64_t seconds_left(const conntrack::FlowSnapshot& f, uint64_t now_ns)
{
    return f.deadline_ns > now_ns ? (f.deadline_ns - now_ns) / 1'000'000'000ull : 0;
}

void append_flow_json(std::string& out, unsigned lcore, const conntrack::FlowSnapshot& f, uint64_t now_ns)
{
    uint8_t src[16], dst[16];
    uint16_t sport = 0, dport = 0;
    packet::key_endpoints(f.key, f.orig_is_lo, src, sport, dst, dport);
    char buf[kLineBytes];
    text::Appender l(buf, sizeof buf);
    l.lit("{\"flow_id\":");
    l.u64(f.flow_id);
    l.field("lcore", lcore);
    l.field("in_port", f.in_port);
    l.lit(",\"proto\":\"");
    if (const char* name = known_proto_name(f.key.proto))
        l.lit(name);
    else
        l.u64(f.key.proto);
    l.lit("\",\"src\":");
    addr(l, src);
    l.field("sport", sport);
    l.lit(",\"dst\":");
    addr(l, dst);
    l.field("dport", dport);
    if (const uint16_t outer = packet::key_vlan_outer(f.key), inner = packet::key_vlan_inner(f.key); outer || inner) {
        l.lit(",\"vlan\":[");
        l.u64(outer);
        l.lit(",");
        l.u64(inner);
        l.lit("]");
    }
    if (f.key.zone != 0)
        l.field("zone", f.key.zone);
    l.lit(",\"state\":\"");
    l.lit(conntrack::state_name(f)); // TCP's state, or UNREPLIED/REPLIED
    l.lit("\"");
    l.field("timeout", seconds_left(f, now_ns));
    l.lit(",\"flags\":[");
    const char* separator = "\"";
    for (const char* flag : flow_flags(f)) {
        l.lit(separator);
        l.lit(flag);
        l.lit("\"");
        separator = ",\"";
    }
    l.lit("]");
    l.field("packets_orig", f.packets[0]);
    l.field("packets_reply", f.packets[1]);
    l.field("bytes_orig", f.bytes[0]);
    l.field("bytes_reply", f.bytes[1]);
    l.lit(",\"first_seen\":");
    l.seconds(f.first_seen_ns);
    l.lit(",\"last_seen\":");
    l.seconds(f.last_seen_ns);
    l.lit("}\n");
    out.append(l.view());
}

} // namespace flowcop::app
