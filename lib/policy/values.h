// SPDX-License-Identifier: BSD-3-Clause
// Internal to lib/policy: the values a policy word can carry, read strictly (no sign, no hex, no
// spaces, no trailing bytes). Pure, allocation-free, never throws.
#pragma once

#include <policy/ruleset.h>

#include <optional>
#include <string_view>

namespace flowcop::policy::detail {

std::optional<State> parse_state(std::string_view w) noexcept;

// A protocol name nft knows for `meta l4proto` (tcp, udp, icmp, icmpv6, ...) or a number 0-255.
std::optional<uint8_t> parse_l4proto(std::string_view w) noexcept;

enum class RangeResult { ok, not_a_range, reversed };
// "N" or "N-M", each 0-65535; reversed when N > M (nft refuses that too).
RangeResult parse_port_range(std::string_view w, PortRange& out) noexcept;

// "A" (a host: /32 or /128) or "A/LEN" in the family's text form. IPv4 comes out IPv4-mapped
// with its length plus 96. Host bits past the length are cleared, as nft normalises them.
bool parse_prefix(std::string_view w, Family family, Prefix& out) noexcept;

// A decimal number lo..hi.
bool parse_number(std::string_view w, unsigned lo, unsigned hi, unsigned& out) noexcept;

// A port name for iif: letters, digits and `_ . : -`, starting with a letter or digit (DPDK device
// names such as net_af_packet0 and 0000:01:00.0 fit; the service resolves it).
bool is_port_name(std::string_view w) noexcept;

} // namespace flowcop::policy::detail
