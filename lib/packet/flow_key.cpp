// SPDX-License-Identifier: BSD-3-Clause
// FlowKey helpers for events and listings (off the per-packet path).
#include <cstdio>
#include <cstring>

#include <packet/flow_key.h>

namespace flowcop::packet {
namespace {

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

uint32_t vlan_packed(const FlowKey& key) noexcept
{
    return (uint32_t{key.vlan[0]} << 16) | (uint32_t{key.vlan[1]} << 8) | key.vlan[2];
}

// RFC 5952 4.2: the longest run of >= 2 zero groups, the first one on a tie.
void longest_zero_run(const uint16_t g[8], int& start, int& len) noexcept
{
    start = -1, len = 0;
    for (int i = 0; i < 8;) {
        if (g[i] != 0) {
            ++i;
            continue;
        }
        int j = i;
        while (j < 8 && g[j] == 0)
            ++j;
        if (j - i > len && j - i >= 2)
            start = i, len = j - i;
        i = j;
    }
}

size_t format_ipv6(const uint8_t a[16], char* out) noexcept
{
    uint16_t g[8];
    for (int i = 0; i < 8; ++i)
        g[i] = static_cast<uint16_t>((a[2 * i] << 8) | a[2 * i + 1]);
    int zs, zl;
    longest_zero_run(g, zs, zl);
    size_t n = 0;
    for (int i = 0; i < 8;) {
        if (i == zs) {
            out[n++] = ':';
            if (i == 0)
                out[n++] = ':';
            i += zl;
            continue;
        }
        n += static_cast<size_t>(std::snprintf(out + n, 6, "%x", g[i]));
        if (++i < 8)
            out[n++] = ':';
    }
    out[n] = '\0';
    return n;
}

} // namespace

void key_endpoints(const FlowKey& key, bool orig_is_lo, uint8_t src[16], uint16_t& sport, uint8_t dst[16],
                   uint16_t& dport) noexcept
{
    std::memcpy(src, orig_is_lo ? key.addr_lo : key.addr_hi, 16);
    std::memcpy(dst, orig_is_lo ? key.addr_hi : key.addr_lo, 16);
    sport = orig_is_lo ? key.port_lo : key.port_hi;
    dport = orig_is_lo ? key.port_hi : key.port_lo;
}

bool key_is_ipv4(const FlowKey& key) noexcept
{
    return is_ipv4_mapped(key.addr_lo) && is_ipv4_mapped(key.addr_hi);
}

uint16_t key_vlan_outer(const FlowKey& key) noexcept
{
    return static_cast<uint16_t>(vlan_packed(key) >> 12);
}

uint16_t key_vlan_inner(const FlowKey& key) noexcept
{
    return static_cast<uint16_t>(vlan_packed(key) & 0x0fff);
}

size_t format_addr(const uint8_t addr[16], char* buf, size_t buflen) noexcept
{
    char tmp[kAddrStrLen];
    size_t n;
    if (is_ipv4_mapped(addr))
        n = static_cast<size_t>(std::snprintf(tmp, sizeof tmp, "%u.%u.%u.%u", addr[12], addr[13], addr[14], addr[15]));
    else
        n = format_ipv6(addr, tmp);
    if (buf == nullptr || n + 1 > buflen) {
        if (buf != nullptr && buflen > 0)
            buf[0] = '\0';
        return 0;
    }
    std::memcpy(buf, tmp, n + 1);
    return n;
}

bool is_ipv4_mapped(const uint8_t addr[16]) noexcept
{
    return std::memcmp(addr, kV4MappedPrefix, sizeof kV4MappedPrefix) == 0;
}

FlowKey make_flow_key(const uint8_t a[16], uint16_t port_a, const uint8_t b[16], uint16_t port_b, uint8_t proto,
                      uint16_t vlan_outer, uint16_t vlan_inner, uint16_t zone) noexcept
{
    FlowKey key;
    std::memset(&key, 0, sizeof key);
    const int c = std::memcmp(a, b, 16);
    const bool a_lo = c < 0 || (c == 0 && port_a <= port_b);
    std::memcpy(key.addr_lo, a_lo ? a : b, 16);
    std::memcpy(key.addr_hi, a_lo ? b : a, 16);
    key.port_lo = a_lo ? port_a : port_b;
    key.port_hi = a_lo ? port_b : port_a;
    key.proto = proto;
    const uint32_t packed = (uint32_t{vlan_outer} << 12) | vlan_inner;
    key.vlan[0] = static_cast<uint8_t>(packed >> 16);
    key.vlan[1] = static_cast<uint8_t>(packed >> 8);
    key.vlan[2] = static_cast<uint8_t>(packed);
    key.zone = zone;
    return key;
}

} // namespace flowcop::packet
