// SPDX-License-Identifier: BSD-3-Clause
// Private: the generator's per-flow record and how a flow's addresses follow from its serial number.
//
// Flow is 32 bytes (the whole per-flow memory, see help()): addresses and ports are kept as 32/16-bit
// values and expanded into IPv4 or IPv6 by the frame writer's templates, and each side's next sequence
// number doubles as the state of the byte stream.
//
// Addresses: flow serial n is mapped through a seed-keyed bijection of 39 bits onto (client address
// 10.0.0.0/8, client port 32768..65535), so no two flows of one run share a 4-tuple until 2^39 (5.5e11)
// flows have started; the server side (172.16.0.0/12, a common service port) is a hash of n.
#pragma once

#include <cstdint>

#include "rng.h"

namespace flowcop::flowgen::detail {

enum class Fate : uint8_t { fin = 0, rst = 1, idle = 2 };

// Bits of Flow::bits.
inline constexpr uint8_t kFateMask = 0x03;
inline constexpr uint8_t kBitServerCloses = 0x04; // the server sends the FIN first / the RST
inline constexpr uint8_t kBitIpv6 = 0x08;
inline constexpr uint8_t kBitServerData = 0x10; // the next data segment goes server -> client

struct Flow {
    uint64_t end_slot;                 // the slot at which the planned lifetime is over
    uint32_t client_ip, server_ip;     // IPv4 address, or the low 32 bits of the IPv6 address
    uint16_t client_port, server_port; // host order
    uint32_t client_next, server_next; // next sequence number each side sends
    uint8_t data_sent;                 // data segments sent, saturating at 255 (only ">= 2" matters)
    uint8_t bits;                      // fate_mask | bit_* above
    uint8_t step;                      // position in the handshake / close sequence (schedule.cpp)
    uint8_t unused;

    Fate fate() const noexcept { return static_cast<Fate>(bits & kFateMask); }
    bool ipv6() const noexcept { return (bits & kBitIpv6) != 0; }
    bool server_closes() const noexcept { return (bits & kBitServerCloses) != 0; }
};
static_assert(sizeof(Flow) == 32, "the per-flow memory figure in help() assumes 32 bytes");

inline constexpr unsigned kTupleBits = 39;
inline constexpr uint64_t kTupleMask = (uint64_t{1} << kTupleBits) - 1;

// A bijection on [0, 2^39): xor with a key, odd multiplies mod 2^39 and xor-shifts are each invertible.
inline uint64_t permute39(uint64_t n, uint64_t key) noexcept
{
    uint64_t x = (n ^ key) & kTupleMask;
    x = (x * 0x9e3779b97f4a7c15ULL) & kTupleMask;
    x ^= x >> 19;
    x = (x * 0xbf58476d1ce4e5b9ULL) & kTupleMask;
    x ^= x >> 21;
    return x;
}

// Fills the address fields of f from serial n.
inline void assign_tuple(Flow& f, uint64_t n, uint64_t key) noexcept
{
    static constexpr uint16_t kServicePorts[8] = {443, 443, 443, 443, 80, 80, 8080, 22};
    const uint64_t x = permute39(n, key);
    f.client_port = static_cast<uint16_t>(32768 + (x & 0x7fff));
    f.client_ip = 0x0a000000u | static_cast<uint32_t>(x >> 15); // 10.0.0.0/8
    const uint64_t h = mix64(n ^ ~key);
    f.server_ip = 0xac100000u | static_cast<uint32_t>(h & 0xfffff); // 172.16.0.0/12
    f.server_port = kServicePorts[(h >> 20) & 7];
}

} // namespace flowcop::flowgen::detail
