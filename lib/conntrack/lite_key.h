// SPDX-License-Identifier: BSD-3-Clause
// The steady lane's key test (FlowTable::process_lite): for a record whose flags hold
// FlowRecord::kLiteKey (its key is one packet::lite_key() gives), lite_key_of(r, t) is same_key(r.key,
// packet::lite_key(t)). Pure, inline; reads the record's bytes 12..15 and 28..35.
#pragma once

#include <conntrack/flow_record.h>
#include <packet/tcp_lite.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace flowcop::conntrack {

static_assert(offsetof(FlowRecord, key) == 0 && offsetof(packet::FlowKey, addr_lo) == 0 &&
                  offsetof(packet::FlowKey, addr_hi) == 16 && offsetof(packet::FlowKey, port_lo) == 32 &&
                  offsetof(packet::FlowKey, port_hi) == 34,
              "lite_key_of() reads addr_lo's IPv4 part at 12 and addr_hi's with both ports at 28..35");
static_assert(offsetof(packet::TcpLite, addr_lo) == 0 && offsetof(packet::TcpLite, addr_hi) == 4 &&
                  offsetof(packet::TcpLite, port_lo) == 8 && offsetof(packet::TcpLite, port_hi) == 10,
              "a TcpLite's key: addr_lo, then addr_hi and the ports as the key holds them");

// Precondition: r.flags holds FlowRecord::kLiteKey. Every byte of such a key but the two IPv4 addresses
// and the ports is fixed (the mapped prefix, TCP, no VLAN IDs, zone 0), so the key is t's exactly when
// those 12 bytes are t's first 12: two compares of general registers, 6 instructions (the whole 42-byte
// key against one built from t by byte shuffles took 15, tests/benchmarks.md).
inline bool lite_key_of(const FlowRecord& r, const packet::TcpLite& t) noexcept
{
    const auto* k = reinterpret_cast<const uint8_t*>(&r.key);
    const auto* s = reinterpret_cast<const uint8_t*>(&t);
    uint32_t key_lo, seg_lo;
    uint64_t key_rest, seg_rest;
    std::memcpy(&key_lo, k + 12, 4);
    std::memcpy(&seg_lo, s, 4);
    std::memcpy(&key_rest, k + 28, 8);
    std::memcpy(&seg_rest, s + 4, 8);
    return ((key_lo ^ seg_lo) | (key_rest ^ seg_rest)) == 0;
}

} // namespace flowcop::conntrack
