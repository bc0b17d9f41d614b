// SPDX-License-Identifier: BSD-3-Clause
// The input language of the flow-table fuzz target (fuzz_table.cpp): inserts, lookups, deletes and
// cop passes for one FlowTable, driven through its pipelined packet path, on a key space built to
// collide in its index.
//
// Contract. Every byte string is a valid script. Byte 0 selects the setup (TableSetup); then ops, each
// one op byte c, some followed by one argument byte a (read as 0 past the end):
//   c < 0x80  a packet for key a % kKeys: kind c & 7 (SYN, SYN-ACK, ACK, PSH-ACK, FIN-ACK, RST, RST-ACK,
//             SYN-FIN), from the key's lower endpoint unless c & 8, the clock first advancing by
//             ((c >> 4) & 7) * 50 ms. Packets gather into the current burst (at most kMaxBurst).
//   0x80-0x8f submit the current burst (the pipeline keeps the last two pending).
//   0x90-0x9f drain, then check.
//   0xa0-0xbf advance to the next whole second plus (c & 0x1f) s, then drain, cop pass without
//             budgets, check.
//   0xc0-0xcf the same to the next whole second, with fire budget 1 + (c & 3) and visit budget 1 +
//             ((c >> 2) & 3) * 4.
//   0xd0-0xdf drain, then kill key a % kKeys.
//   0xe0-0xe7 drain, then destroy_all (shutdown); the table is then reused.
//   other     submit the current burst.
// A burst is also submitted when it is full; the end of the input drains and checks, then passes the
// cop far past every deadline and requires an empty table.
#pragma once

#include <conntrack/flow_table.h>
#include <packet/flow_key.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowcop::fuzz {

// Keys a script can name (one argument byte).
inline constexpr unsigned kKeys = 256;
inline constexpr uint64_t kTableSecNs = 1'000'000'000ull;
inline constexpr uint64_t kTableStartNs = 1'700'000'000ull * kTableSecNs;

// Byte 0: bits 0-1 the capacity (16, 64, 256 or 1024 flows), bit 2 loose pickup, bits 3-4 the key
// space (0: 200 keys homed in bucket 0 and the rest at random, more than one probe window holds;
// 1: every key homed in buckets 0 and 1; 2: random keys; 3: 64 random tuples, each four times: in
// zones 0, 1 and 0x100 and in VLAN 1, so a hash or compare that drops the zone or the VLAN IDs
// merges flows the model keeps apart), bit 5 an active timeout (7 s).
struct TableSetup {
    uint32_t capacity = 256;
    bool loose_pickup = true;
    unsigned key_mode = 0;
    bool active = false;
    static TableSetup from_byte(uint8_t b) noexcept;
    conntrack::TableConfig table_config() const;
};

// The setup's key space: kKeys distinct keys, the same for the same setup on every run.
const std::vector<packet::FlowKey>& key_space(const TableSetup& setup);

// TCP flags of packet kind k (0..7).
uint8_t packet_flags(unsigned kind) noexcept;

// Short timeouts, so a few seconds of virtual time expire flows in every state.
tcpstate::Timeouts table_timeouts() noexcept;
inline constexpr uint32_t kTableActiveTimeoutS = 7;

} // namespace flowcop::fuzz
