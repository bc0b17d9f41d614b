// SPDX-License-Identifier: BSD-3-Clause
// parse_tcp_options(): one bounded walk over the option bytes (see tcp_options.h).
#include <packet/tcp_options.h>

#include "wire_internal.h"

namespace flowcop::packet {
namespace {

constexpr uint8_t kEol = 0, kNop = 1, kWscale = 3, kSackPerm = 4, kSack = 5;
constexpr uint32_t kWscaleLen = 3, kSackPermLen = 2, kSackBaseLen = 2, kSackBlockLen = 8;

// Wraparound order of sequence numbers (RFC 1982): a is after b.
constexpr bool seq_after(uint32_t a, uint32_t b) noexcept
{
    return static_cast<int32_t>(a - b) > 0;
}

} // namespace

TcpOptions parse_tcp_options(const uint8_t* opts, uint32_t len, uint32_t ack) noexcept
{
    TcpOptions out{0, ack};
    if (len == 0)
        return out;
    out.bits = kTcpOptPresent;
    bool sack_seen = false;
    uint32_t i = 0;
    while (i < len) {
        const uint8_t kind = opts[i];
        if (kind == kEol)
            break;
        if (kind == kNop) {
            ++i;
            continue;
        }
        if (len - i < 2)
            break; // a kind without its length byte
        const uint32_t size = opts[i + 1];
        if (size < 2 || size > len - i)
            break; // "silly" or partial: netfilter stops here too
        const uint8_t* data = opts + i + 2;
        if (kind == kWscale && size == kWscaleLen) {
            const uint8_t shift = data[0] > kTcpMaxWscale ? kTcpMaxWscale : data[0];
            out.bits = static_cast<uint8_t>((out.bits & ~kTcpOptScaleMask) | kTcpOptWscale | shift);
        } else if (kind == kSackPerm && size == kSackPermLen) {
            out.bits |= kTcpOptSackPerm;
        } else if (kind == kSack && !sack_seen && size >= kSackBaseLen + kSackBlockLen &&
                   (size - kSackBaseLen) % kSackBlockLen == 0) {
            sack_seen = true; // netfilter reads the first SACK option only
            for (uint32_t b = 0; b + kSackBlockLen <= size - kSackBaseLen; b += kSackBlockLen) {
                const uint32_t right = wire::be32(data + b + 4);
                if (seq_after(right, out.sack))
                    out.sack = right;
            }
        }
        i += size;
    }
    return out;
}

} // namespace flowcop::packet
