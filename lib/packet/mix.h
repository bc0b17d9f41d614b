// SPDX-License-Identifier: BSD-3-Clause
// murmur3's 64-bit finaliser (fmix64), the one bit mixer flowcop's own hashes end with: every input bit
// reaches every output bit, so a hash's high bits (which the handoff's owner uses) are as good as its low
// ones. Pure and constexpr; no state.
#pragma once

#include <cstdint>

namespace flowcop::packet {

constexpr uint64_t fmix64(uint64_t h) noexcept
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

} // namespace flowcop::packet
