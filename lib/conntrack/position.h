// SPDX-License-Identifier: BSD-3-Clause
// A record's position in its table is a 32-bit index; kNoPosition names none (an empty lookup, a walk's
// end). Header-only, std only.
#pragma once

#include <cstdint>

namespace flowcop::conntrack {

inline constexpr uint32_t kNoPosition = 0xffffffffu;

} // namespace flowcop::conntrack
