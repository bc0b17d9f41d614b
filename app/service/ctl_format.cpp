// SPDX-License-Identifier: BSD-3-Clause
#include "ctl_format.h"

#include "ctl_query.h"

#include <packet/flow_key.h>
#include <tcpstate/tcp_state.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

namespace flowcop::app {
namespace {

// A bounded appender on a stack buffer: one flow line is at most ~600 bytes (two IPv6 addresses, every
// number at its widest), so kLineBytes always fits; a listing formats 10^6 of them.
constexpr size_t kLineBytes = 1024;

class Line {
public:
    void lit(std::string_view s) noexcept
    {
        const size_t n = std::min(s.size(), kLineBytes - _n);
        std::memcpy(_buf + _n, s.data(), n);
        _n += n;
    }
    void u64(uint64_t v) noexcept
    {
        const auto r = std::to_chars(_buf + _n, _buf + kLineBytes, v);
        if (r.ec == std::errc())
            _n = size_t(r.ptr - _buf);
    }
    void field(std::string_view key, uint64_t v) noexcept
    {
        lit(",\"");
        lit(key);
        lit("\":");
        u64(v);
    }
    // Unix seconds with 6 decimals, truncated, as the event stream prints them.
    void seconds(uint64_t ns) noexcept
    {
        u64(ns / 1'000'000'000u);
        char frac[7];
        uint64_t us = ns % 1'000'000'000u / 1000u;
        frac[0] = '.';
        for (int i = 6; i >= 1; --i, us /= 10)
            frac[i] = char('0' + us % 10);
        lit(std::string_view(frac, sizeof frac));
    }
    void addr(const uint8_t a[16]) noexcept
    {
        char text[packet::kAddrStrLen];
        const size_t n = packet::format_addr(a, text, sizeof text);
        lit("\"");
        lit(std::string_view(text, n));
        lit("\"");
    }
    std::string_view view() const noexcept { return {_buf, _n}; }

private:
    char _buf[kLineBytes];
    size_t _n = 0;
};

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
    Line l;
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
    l.addr(src);
    l.field("sport", sport);
    l.lit(",\"dst\":");
    l.addr(dst);
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
