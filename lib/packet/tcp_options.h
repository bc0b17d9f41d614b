// SPDX-License-Identifier: BSD-3-Clause
// Contract: the TCP options that window tracking needs (netfilter's tcp_options() and tcp_sack()), read
// from the option bytes of one TCP header. parse() calls it for every TCP segment whose data offset is
// above 5 and whose whole header is in the bytes it may read; the results land in Packet::tcp_opt and
// Packet::sack.
//
// What is read, and how malformed options are treated (as netfilter does: ignored, never an error):
// - Window scale (kind 3, length 3): the shift, clamped to 14 (RFC 7323 2.3, netfilter's TCP_MAX_WSCALE).
// - SACK permitted (kind 4, length 2).
// - SACK (kind 5, length 2 + 8n, n >= 1): the highest right edge among the blocks of the FIRST such
//   option, by wraparound order starting from the segment's ack (netfilter keeps the first edge "after"
//   the best so far, beginning with the ack), so `sack` == ack when there are no blocks.
// - EOL (0) ends the walk; NOP (1) is one byte; every other option is kind, length, data. A length below
//   2, or one that runs past the option bytes, ends the walk (netfilter: "silly" or partial options);
//   what was read before it stands. Options of the wrong length (a window scale of length 4) are skipped.
// - The walk is bounded by the option bytes given (at most 40) and reads none outside them.
// Pure, noexcept, no allocation: any thread.
#pragma once

#include <cstdint>

namespace flowcop::packet {

// Packet::tcp_opt bits. The low four bits are the window scale shift (0..14), meaningful only with
// kTcpOptWscale set.
inline constexpr uint8_t kTcpOptScaleMask = 0x0f;
inline constexpr uint8_t kTcpOptWscale = 0x10;   // a window scale option was present
inline constexpr uint8_t kTcpOptSackPerm = 0x20; // SACK permitted was present
inline constexpr uint8_t kTcpOptPresent = 0x40;  // the header had option bytes (data offset > 5)
inline constexpr uint8_t kTcpMaxWscale = 14;

struct TcpOptions {
    uint8_t bits = 0;  // the kTcpOpt* bits above, kTcpOptPresent included when len > 0
    uint32_t sack = 0; // highest SACK right edge, or the ack passed in
};

// Reads `len` option bytes at `opts` (the bytes after the 20-byte fixed header) of a segment whose
// acknowledgement number is `ack`. len == 0 gives {0, ack}.
TcpOptions parse_tcp_options(const uint8_t* opts, uint32_t len, uint32_t ack) noexcept;

} // namespace flowcop::packet
