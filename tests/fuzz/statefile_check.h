// SPDX-License-Identifier: BSD-3-Clause
// The state-file fuzz target's body (issue 32): one input is a whole --state-file. Checked against
// statefile.h's and flow_image.h's contracts:
// - statefile::parse() returns for any bytes, never reading past them (ASan), and says ok only for
//   a file whose size is exactly its header's count of entries;
// - every entry of an ok file decodes, and decoding is a fixed point: decode(encode(decode(bytes)))
//   equals decode(bytes), field by field (no field lost, no bits that change on a second trip);
// - the first kMaxRestored entries restore into a small heap table (two of them, as two lcores) the
//   way the service does (own slots, finish_restore, then the renumbered ones): never a crash, never
//   more flows than the capacity, ids unique within a table, and the counters' invariant
//   (created == active) holds; a cop pass beyond any deadline a restored flow can have (its times
//   clamped to now, a set timeout to 2^32 s after it) ends every flow (none is left without a
//   deadline) and the invariant still holds.
// Returns nullptr when every check holds, else what broke. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flowcop::fuzz {

inline constexpr size_t kMaxRestored = 512;

const char* check_statefile(const uint8_t* data, size_t size);

} // namespace flowcop::fuzz
