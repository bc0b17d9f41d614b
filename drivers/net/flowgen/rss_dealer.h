// SPDX-License-Identifier: BSD-3-Clause
// Contract: RssDealer picks the RX queue a NIC's receive-side scaling would give a frame, so that
// flowgen's port (queues=N) fills its rings as a NIC fills its queues and flowcop runs its rss plan
// on it (app/service/port_plan.h). EAL-free: DPDK's rte_softrss (<rte_thash.h>) computes the Toeplitz
// hash; this file only builds its input as a NIC does and looks the hash up in a redirection table.
//
// What it hashes (the NIC's view, not flowcop's parser's): the OUTER headers, after up to two VLAN
// tags (0x8100, 0x88a8, 0x9100). IPv4 and IPv6 (IPv6 after hop-by-hop, routing and destination
// options headers, as NICs that parse extension headers do):
//   - unfragmented TCP, UDP and SCTP with their field set in the hash fields (RTE_ETH_RSS_NONFRAG_*):
//     addresses and ports (the 4-tuple);
//   - any fragment, first or later (IPv4 MF or offset; an IPv6 Fragment header), and every other
//     protocol (ICMP and its errors, GRE, ...): addresses only (the 2-tuple), when RTE_ETH_RSS_IPV4/6,
//     FRAG_* or NONFRAG_*_OTHER allows it; a NIC cannot see a later fragment's ports, and most apply
//     the 2-tuple to the first fragment too, so a datagram's fragments stay together;
//   - anything else (ARP, a truncated header, a type the fields leave out): hash 0, queue table[0].
// queue = table[hash % table size] (the low bits, as NICs index their table).
// Defaults until program(): the symmetric key (0x6d5a repeated, hash(a->b) == hash(b->a)), every
// field above, and a 128-entry table whose entry j is j mod queues: the same dealing as flowcop's
// rss plan programs on one port, so the port spreads flows symmetrically even on its own.
// Threading: program() before the thread that deals starts; queue() is const and noexcept.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::flowgen {

class RssDealer {
public:
    static constexpr uint16_t kKeyBytes = 40;  // the key length the port declares (hash_key_size)
    static constexpr uint16_t kRetaSize = 128; // the redirection table it declares (reta_size)
    // The hash fields the port declares (flow_type_rss_offloads): IPv4 and IPv6, fragments, TCP,
    // UDP, SCTP and other, as flowcop asks for them.
    static uint64_t offloads() noexcept;

    explicit RssDealer(uint16_t queues = 1) noexcept;

    // Takes a key of kKeyBytes or more (only the first kKeyBytes are used: the longest input, IPv6
    // with ports, reads 36 + 4 bytes), the hash fields (a subset of offloads()) and a table of
    // kRetaSize entries, each below queues. "" or one sentence saying what was refused.
    std::string program(const uint8_t* key, uint16_t key_len, uint64_t hash_fields, const std::vector<uint16_t>& table);

    // The Toeplitz hash a NIC with this configuration computes for the frame (0 when it hashes nothing).
    uint32_t hash(const uint8_t* frame, uint32_t len) const noexcept;
    uint16_t queue(const uint8_t* frame, uint32_t len) const noexcept { return _table[hash(frame, len) % kRetaSize]; }

    uint16_t queues() const noexcept { return _queues; }
    // What it holds, for a read-back.
    const std::array<uint8_t, kKeyBytes>& key() const noexcept { return _key; }
    uint64_t hash_fields() const noexcept { return _fields; }
    std::vector<uint16_t> table() const { return {_table.begin(), _table.end()}; }

private:
    uint16_t _queues;
    uint64_t _fields;
    std::array<uint8_t, kKeyBytes> _key{};
    std::array<uint16_t, kRetaSize> _table{};
};

} // namespace flowcop::flowgen
