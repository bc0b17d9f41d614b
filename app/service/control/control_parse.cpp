// SPDX-License-Identifier: BSD-3-Clause
#include "control_parse.h"

#include <service/options/proto_names.h>

#include <arpa/inet.h>

#include <text/decimal.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace flowcop::app {

namespace {

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t at = s.find(sep, start);
        out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos)
            return out;
        start = at + 1;
    }
}

bool parse_uint(const std::string& s, uint64_t max, uint64_t& out)
{
    return text::parse_decimal_in(s, 0, max, out);
}

// *_timeout covers udp_timeout, icmp_timeout and generic_timeout, tcp_* the TCP state timeouts and window
// tracking's settings (the reply must fit 127 bytes).
constexpr char kSettableHint[] = "settable: *_budget*, *_timeout, tcp_*, udp_timeout_stream";

} // namespace

bool parse_addr(const std::string& s, uint8_t out[16], bool* typed_ipv4)
{
    std::memset(out, 0, 16);
    if (typed_ipv4 != nullptr)
        *typed_ipv4 = false;
    if (s.find('\0') != std::string::npos)
        return false; // inet_pton would stop there and accept the prefix
    in_addr v4{};
    if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
        out[10] = 0xff;
        out[11] = 0xff;
        std::memcpy(out + 12, &v4, 4);
        if (typed_ipv4 != nullptr)
            *typed_ipv4 = true;
        return true;
    }
    return inet_pton(AF_INET6, s.c_str(), out) == 1;
}

std::string quoted(const std::string& s)
{
    constexpr size_t kMax = 40;
    std::string q = reply_text(s, SIZE_MAX);
    if (q.size() > kMax)
        q = reply_text(s, kMax) + "...";
    return "'" + q + "'";
}

std::string reply_text(std::string_view text, size_t max_len)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (const char ch : text) {
        const auto b = static_cast<unsigned char>(ch);
        const bool plain = b >= 0x20 && b < 0x7f;
        const size_t need = plain ? 1 : 4;
        if (out.size() + need > max_len)
            break;
        if (plain) {
            out += ch;
        } else {
            out += "\\x";
            out += hex[b >> 4];
            out += hex[b & 0xf];
        }
    }
    return out;
}

std::string parse_no_params(const std::string& params)
{
    return params.empty() ? "" : "this command takes no parameters, got " + quoted(params);
}

std::string parse_flow_tuple(const std::string& params, packet::FlowKey& key)
{
    std::vector<std::string> f = split(params, ',');
    // An optional leading protocol (TCP when absent): an address never parses as one.
    uint8_t proto = 6;
    uint8_t a_probe[16];
    if (!f.empty() && !parse_addr(f[0], a_probe) && parse_proto(f[0], proto))
        f.erase(f.begin());
    if (f.size() < 4 || f.size() > 6)
        return "expected IP,PORT,IP,PORT[,VLAN[,VLAN]] (after an optional PROTO,), got " + quoted(params);
    uint8_t a[16], b[16];
    uint64_t pa = 0, pb = 0, v1 = 0, v2 = 0;
    if (!parse_addr(f[0], a))
        return quoted(f[0]) + " is not an IPv4 or IPv6 address";
    if (!parse_addr(f[2], b))
        return quoted(f[2]) + " is not an IPv4 or IPv6 address";
    if (!parse_uint(f[1], 65535, pa))
        return quoted(f[1]) + " is not a port (0..65535)";
    if (!parse_uint(f[3], 65535, pb))
        return quoted(f[3]) + " is not a port (0..65535)";
    if (f.size() >= 5 && !parse_uint(f[4], 4095, v1))
        return quoted(f[4]) + " is not a VLAN ID (0..4095)";
    if (f.size() == 6 && !parse_uint(f[5], 4095, v2))
        return quoted(f[5]) + " is not a VLAN ID (0..4095)";
    const bool a_is_v4 = packet::is_ipv4_mapped(a);
    if (a_is_v4 != packet::is_ipv4_mapped(b))
        return "both addresses must be IPv4 or both IPv6";
    if ((proto == 1 && !a_is_v4) || (proto == 58 && a_is_v4))
        return std::string(proto == 1 ? "icmp" : "icmpv6") + " needs " + (proto == 1 ? "IPv4" : "IPv6") +
               " addresses (the other is keyed as protocol " + std::to_string(proto) + ": give the number)";
    key = packet::make_flow_key(a, uint16_t(pa), b, uint16_t(pb), proto, uint16_t(v1), uint16_t(v2), 0);
    return "";
}

std::string parse_flow_query(const std::string& params, FlowQuery& q)
{
    if (params.empty())
        return "";
    for (const std::string& kv : split(params, ',')) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos)
            return "expected key=value, got " + quoted(kv) + " (keys: addr, port, proto, lcore, limit)";
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        uint64_t n = 0;
        if (k == "addr") {
            if (!parse_addr(v, q.filter.addr))
                return "addr: " + quoted(v) + " is not an IPv4 or IPv6 address";
            q.filter.match_addr = true;
        } else if (k == "port") {
            if (!parse_uint(v, 65535, n))
                return "port: " + quoted(v) + " is not a port (0..65535)";
            q.filter.match_port = true;
            q.filter.port = uint16_t(n);
        } else if (k == "proto") {
            bool known = false;
            for (size_t p = 0; p < conntrack::kProtoCount; ++p) {
                if (v == conntrack::proto_name(conntrack::Proto(p))) {
                    q.filter.match_proto = true;
                    q.filter.proto = conntrack::Proto(p);
                    known = true;
                }
            }
            if (!known)
                return "proto: " + quoted(v) + " is not one of tcp, udp, icmp, other";
        } else if (k == "lcore") {
            if (!parse_uint(v, 1023, n))
                return "lcore: " + quoted(v) + " is not an lcore id (0..1023)";
            q.match_lcore = true;
            q.lcore = unsigned(n);
        } else if (k == "limit") {
            if (!parse_uint(v, FlowQuery::kMaxLimit, n) || n == 0)
                return "limit: " + quoted(v) + " is not a number in 1.." + std::to_string(FlowQuery::kMaxLimit);
            q.limit = unsigned(n);
        } else {
            return "unknown key " + quoted(k) + " (keys: addr, port, proto, lcore, limit)";
        }
    }
    return "";
}

std::vector<std::string> settable_names()
{
    std::vector<std::string> names{"timeout_budget", "visit_budget_factor", "default_inactivity_timeout",
                                   "active_timeout"};
    for (const char* st : kTcpStateFlagNames)
        names.push_back(std::string("tcp_timeout_") + st);
    // TCP window tracking.
    for (const char* n : {"tcp_be_liberal", "tcp_ignore_invalid_rst", "tcp_max_retrans", "tcp_timeout_max_retrans",
                          "tcp_timeout_unacknowledged"})
        names.emplace_back(n);
    for (size_t i = 0; i < protostate::kTimeoutCount; ++i) {
        std::string n = protostate::timeout_flag_name(protostate::Timeout(i));
        for (char& ch : n)
            ch = ch == '-' ? '_' : ch;
        names.push_back(std::move(n));
    }
    return names;
}

std::string apply_setting(const std::string& params, Options& opt)
{
    const size_t comma = params.find(',');
    if (comma == std::string::npos)
        return "expected NAME,VALUE, got " + quoted(params) + " (" + kSettableHint + ")";
    // Names are snake_case (as describe() and the config line spell them); a flag's spelling with
    // '-' is accepted too, so tcp-timeout-time-wait and tcp_timeout_time_wait are one name.
    std::string name = params.substr(0, comma);
    const std::string value = params.substr(comma + 1);
    for (char& ch : name)
        ch = ch == '-' ? '_' : ch;
    bool known = false;
    for (const std::string& n : settable_names())
        known = known || name == n;
    if (!known)
        return quoted(params.substr(0, comma)) + " cannot be set at run time (" + kSettableHint + ")";
    // Validate through the command line's parser: same ranges, same messages.
    std::string flag = "--" + name;
    for (char& ch : flag)
        ch = ch == '_' ? '-' : ch;
    std::vector<std::string> args{"flowcop", flag, value};
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    const ParseOutcome r = parse_options(int(argv.size()), argv.data());
    if (r.kind != ParseOutcome::ok)
        return r.message.rfind("flowcop: ", 0) == 0 ? r.message.substr(9) : r.message;
    const Options& n = r.options;
    if (name == "timeout_budget")
        opt.timeout_budget = n.timeout_budget;
    else if (name == "visit_budget_factor")
        opt.visit_budget_factor = n.visit_budget_factor;
    else if (name == "default_inactivity_timeout")
        opt.default_inactivity_timeout_s = n.default_inactivity_timeout_s;
    else if (name == "active_timeout")
        opt.active_timeout_s = n.active_timeout_s;
    else if (name == "tcp_be_liberal")
        opt.tcp_be_liberal = n.tcp_be_liberal;
    else if (name == "tcp_ignore_invalid_rst")
        opt.tcp_ignore_invalid_rst = n.tcp_ignore_invalid_rst;
    else if (name == "tcp_max_retrans")
        opt.tcp_max_retrans = n.tcp_max_retrans;
    else if (name == "tcp_timeout_max_retrans")
        opt.tcp_timeout_max_retrans_s = n.tcp_timeout_max_retrans_s;
    else if (name == "tcp_timeout_unacknowledged")
        opt.tcp_timeout_unacknowledged_s = n.tcp_timeout_unacknowledged_s;
    else if (protostate::Timeout t; protostate::parse_timeout_flag_name(flag.substr(2), t))
        opt.proto_timeout_s[size_t(t)] = n.proto_timeout_s[size_t(t)];
    else
        for (size_t i = 0; i < kTcpStateFlagNames.size(); ++i)
            if (name == std::string("tcp_timeout_") + kTcpStateFlagNames[i])
                opt.tcp_timeout_s[i] = n.tcp_timeout_s[i];
    return "";
}

} // namespace flowcop::app
