// SPDX-License-Identifier: BSD-3-Clause
#include "option_values.h"

#include <arpa/inet.h>

namespace flowcop::app::detail {
namespace {
constexpr std::size_t kMaxQuotedBytes = 64;
}

bool printable(char c)
{
    return c >= 0x20 && c < 0x7f;
}

void append_escaped(std::string& out, char c)
{
    static constexpr char kHex[] = "0123456789abcdef";
    if (printable(c)) {
        out += c;
        return;
    }
    const auto u = static_cast<unsigned char>(c);
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 0xf];
}

std::string escaped(std::string_view v)
{
    std::string out;
    for (const char c : v)
        append_escaped(out, c);
    return out;
}

std::string quote(std::string_view v)
{
    // Appended piecewise: GCC 12 at -O3 warns -Wrestrict (falsely) on `const char* + std::string&&`.
    const bool cut = v.size() > kMaxQuotedBytes;
    std::string out = "'";
    for (const char c : v.substr(0, kMaxQuotedBytes))
        append_escaped(out, c);
    out += cut ? "...'" : "'";
    return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep)
{
    std::string out;
    for (const auto& item : items) {
        if (!out.empty())
            out += sep;
        out += item;
    }
    return out;
}

std::string check_number(std::string_view v, uint64_t min, uint64_t max, bool pow2, uint64_t& out)
{
    uint64_t n = 0;
    if (!parse_decimal(v, n))
        return quote(v) + " is not a number in " + std::to_string(min) + ".." + std::to_string(max);
    if (n < min)
        return "must be at least " + std::to_string(min) + ", got " + std::to_string(n);
    if (n > max)
        return "must be at most " + std::to_string(max) + ", got " + std::to_string(n);
    if (pow2 && (n & (n - 1)) != 0)
        return std::to_string(n) + " is not a power of two (" + std::to_string(min) + ", " + std::to_string(min * 2) +
               ", ..., " + std::to_string(max) + ")";
    out = n;
    return {};
}

std::string check_host_port(std::string_view v, HostPort& out)
{
    std::string_view host;
    std::string_view port;
    const bool bracketed = !v.empty() && v.front() == '[';
    if (bracketed) {
        const auto close = v.find(']');
        if (close == std::string_view::npos)
            return quote(v) + ": '[' without ']' (expected [IPv6]:PORT, e.g. [::1]:9781)";
        host = v.substr(1, close - 1);
        if (close + 1 >= v.size() || v[close + 1] != ':')
            return quote(v) + ": missing :PORT after ']' (e.g. [::1]:9781)";
        port = v.substr(close + 2);
    } else {
        const auto colon = v.find(':');
        if (colon == std::string_view::npos)
            return quote(v) + ": missing :PORT (expected HOST:PORT, e.g. 127.0.0.1:9781, or none)";
        if (v.find(':', colon + 1) != std::string_view::npos)
            return quote(v) + ": an IPv6 address must be in brackets, e.g. [::1]:9781";
        host = v.substr(0, colon);
        port = v.substr(colon + 1);
    }
    if (host.empty())
        return quote(v) + ": missing HOST before ':PORT'";
    if (port.empty())
        return quote(v) + ": missing PORT after ':' (0..65535, 0 = any free port)";
    uint64_t p = 0;
    if (!parse_decimal(port, p) || p > 65535)
        return quote(v) + ": port " + quote(port) + " is not a number in 0..65535";
    std::string h(host);
    unsigned char addr[16]; // in6_addr's size; inet_pton's output is only a validity check here
    if (bracketed) {
        if (inet_pton(AF_INET6, h.c_str(), addr) != 1)
            return quote(v) + ": " + quote(host) + " is not an IPv6 address";
    } else if (h == "localhost") {
        h = "127.0.0.1";
    } else if (inet_pton(AF_INET, h.c_str(), addr) != 1) {
        return quote(v) + ": " + quote(host) + " is not an IPv4 address, [IPv6] address or localhost";
    }
    out.host = std::move(h);
    out.port = static_cast<uint16_t>(p);
    return {};
}

std::string check_network(std::string_view v, std::string& out)
{
    const std::size_t slash = v.find('/');
    std::string_view address = v.substr(0, slash);
    if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
        address = address.substr(1, address.size() - 2);
    const bool v6 = address.find(':') != std::string_view::npos;
    const unsigned bits = v6 ? 128 : 32;
    const char* family = v6 ? "IPv6" : "IPv4";
    unsigned char given[16] = {}; // in6_addr's size; an IPv4 address fills the first 4 bytes
    if (address.empty() || inet_pton(v6 ? AF_INET6 : AF_INET, std::string(address).c_str(), given) != 1)
        return quote(v) + " is not an IPv4 or IPv6 network (ADDRESS/LENGTH, e.g. 192.0.2.0/24 or 2001:db8::/32)";
    uint64_t length = bits;
    if (slash != std::string_view::npos && (!parse_decimal(v.substr(slash + 1), length) || length > bits))
        return quote(v) + ": the prefix length must be a number in 0.." + std::to_string(bits) + " for an " + family +
               " network";
    unsigned char network[16] = {};
    for (unsigned i = 0; i < bits / 8; ++i) {
        const uint64_t kept = length >= 8 * (i + 1) ? 8 : length > 8 * i ? length - 8 * i : 0;
        network[i] = static_cast<unsigned char>(given[i] & (0xff00u >> kept));
    }
    char text[INET6_ADDRSTRLEN];
    inet_ntop(v6 ? AF_INET6 : AF_INET, network, text, sizeof(text));
    const std::string canonical = std::string(text) + "/" + std::to_string(length);
    for (unsigned i = 0; i < bits / 8; ++i)
        if (network[i] != given[i])
            return quote(v) + " has host bits set: the " + family + " network is " + canonical;
    out = canonical;
    return {};
}

} // namespace flowcop::app::detail
