// SPDX-License-Identifier: BSD-3-Clause
#include <flowgen/rss_dealer.h>

#include <cstring>

#include <rte_byteorder.h>
#include <rte_ethdev.h> // RTE_ETH_RSS_* flags only
#include <rte_thash.h>

namespace flowcop::flowgen {
namespace {

constexpr uint64_t kV4Tcp = RTE_ETH_RSS_NONFRAG_IPV4_TCP, kV4Udp = RTE_ETH_RSS_NONFRAG_IPV4_UDP,
                   kV4Sctp = RTE_ETH_RSS_NONFRAG_IPV4_SCTP, kV4Other = RTE_ETH_RSS_NONFRAG_IPV4_OTHER,
                   kV4Frag = RTE_ETH_RSS_FRAG_IPV4, kV4 = RTE_ETH_RSS_IPV4;
constexpr uint64_t kV6Tcp = RTE_ETH_RSS_NONFRAG_IPV6_TCP, kV6Udp = RTE_ETH_RSS_NONFRAG_IPV6_UDP,
                   kV6Sctp = RTE_ETH_RSS_NONFRAG_IPV6_SCTP, kV6Other = RTE_ETH_RSS_NONFRAG_IPV6_OTHER,
                   kV6Frag = RTE_ETH_RSS_FRAG_IPV6, kV6 = RTE_ETH_RSS_IPV6;

uint16_t be16(const uint8_t* p) noexcept
{
    return uint16_t(p[0] << 8 | p[1]);
}

uint32_t be32(const uint8_t* p) noexcept
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// The field an unfragmented packet of this protocol is hashed with ports under (0: none).
uint64_t l4_field(uint8_t proto, bool v4) noexcept
{
    switch (proto) {
    case 6: return v4 ? kV4Tcp : kV6Tcp;
    case 17: return v4 ? kV4Udp : kV6Udp;
    case 132: return v4 ? kV4Sctp : kV6Sctp;
    default: return 0;
    }
}

} // namespace

uint64_t RssDealer::offloads() noexcept
{
    return kV4 | kV4Frag | kV4Tcp | kV4Udp | kV4Sctp | kV4Other | kV6 | kV6Frag | kV6Tcp | kV6Udp | kV6Sctp | kV6Other;
}

RssDealer::RssDealer(uint16_t queues) noexcept : _queues(queues == 0 ? 1 : queues), _fields(offloads())
{
    for (unsigned i = 0; i < kKeyBytes; ++i)
        _key[i] = i % 2 == 0 ? 0x6d : 0x5a;
    for (unsigned j = 0; j < kRetaSize; ++j)
        _table[j] = uint16_t(j % _queues);
}

std::string RssDealer::program(const uint8_t* key, uint16_t key_len, uint64_t hash_fields,
                               const std::vector<uint16_t>& table)
{
    if (key == nullptr || key_len < kKeyBytes)
        return "flowgen: an RSS key of " + std::to_string(key_len) + " bytes (at least " + std::to_string(kKeyBytes) +
               " needed)";
    if ((hash_fields & ~offloads()) != 0)
        return "flowgen: RSS hash fields the port does not offer";
    if (table.size() != kRetaSize)
        return "flowgen: a redirection table of " + std::to_string(table.size()) + " entries (the port has " +
               std::to_string(kRetaSize) + ")";
    for (uint16_t q : table)
        if (q >= _queues)
            return "flowgen: a redirection table naming queue " + std::to_string(q) + " of " + std::to_string(_queues);
    std::memcpy(_key.data(), key, kKeyBytes);
    _fields = hash_fields;
    std::copy(table.begin(), table.end(), _table.begin());
    return {};
}

uint32_t RssDealer::hash(const uint8_t* f, uint32_t len) const noexcept
{
    uint32_t off = 12;
    if (len < off + 2)
        return 0;
    uint16_t type = be16(f + off);
    for (unsigned tags = 0; (type == 0x8100 || type == 0x88a8 || type == 0x9100) && tags < 2; ++tags) {
        off += 4;
        if (len < off + 2)
            return 0;
        type = be16(f + off);
    }
    off += 2;
    union rte_thash_tuple t;
    std::memset(&t, 0, sizeof t);
    bool v4 = false, fragment = false;
    uint8_t proto = 0;
    uint32_t l4 = 0;
    if (type == 0x0800) {
        if (len < off + 20 || (f[off] >> 4) != 4 || (f[off] & 0xf) < 5)
            return 0;
        v4 = true;
        proto = f[off + 9];
        fragment = (be16(f + off + 6) & 0x3fff) != 0; // MF or an offset
        t.v4.src_addr = be32(f + off + 12);
        t.v4.dst_addr = be32(f + off + 16);
        l4 = off + (f[off] & 0xfu) * 4;
    } else if (type == 0x86dd) {
        if (len < off + 40 || (f[off] >> 4) != 6)
            return 0;
        proto = f[off + 6];
        // rte_softrss reads the addresses as host-order 32-bit words (rte_thash_load_v6_addrs).
        for (unsigned w = 0; w < 4; ++w) {
            const uint32_t s = be32(f + off + 8 + 4 * w), d = be32(f + off + 24 + 4 * w);
            std::memcpy(t.v6.src_addr + 4 * w, &s, 4);
            std::memcpy(t.v6.dst_addr + 4 * w, &d, 4);
        }
        l4 = off + 40;
        for (unsigned ext = 0; ext < 4 && (proto == 0 || proto == 43 || proto == 60 || proto == 44); ++ext) {
            if (len < l4 + 8)
                return 0;
            if (proto == 44) {
                fragment = true;
                break;
            }
            proto = f[l4];
            l4 += (uint32_t(f[l4 + 1]) + 1) * 8;
        }
    } else {
        return 0;
    }
    const uint64_t l3_fields =
        v4 ? (fragment ? kV4Frag | kV4 : kV4Other | kV4) : (fragment ? kV6Frag | kV6 : kV6Other | kV6);
    const uint64_t l4f = fragment ? 0 : l4_field(proto, v4);
    if (l4f != 0 && (_fields & l4f) != 0 && len >= l4 + 4) {
        if (v4) {
            t.v4.sport = be16(f + l4);
            t.v4.dport = be16(f + l4 + 2);
        } else {
            t.v6.sport = be16(f + l4);
            t.v6.dport = be16(f + l4 + 2);
        }
        return rte_softrss(reinterpret_cast<uint32_t*>(&t), v4 ? RTE_THASH_V4_L4_LEN : RTE_THASH_V6_L4_LEN,
                           _key.data());
    }
    // TCP/UDP/SCTP fall back to the addresses when only the IP field is on (RTE_ETH_RSS_IPV4/6).
    const uint64_t allowed = l4f != 0 ? (v4 ? kV4 : kV6) : l3_fields;
    if ((_fields & allowed) == 0)
        return 0;
    return rte_softrss(reinterpret_cast<uint32_t*>(&t), v4 ? RTE_THASH_V4_L3_LEN : RTE_THASH_V6_L3_LEN, _key.data());
}

} // namespace flowcop::flowgen
