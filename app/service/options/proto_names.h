// SPDX-License-Identifier: BSD-3-Clause
// IP protocol names as conntrack spells them: the one table and parser every flag, filter and listing
// uses (flowcopctl's -p and filters, /flowcop/kill, --events-filter, flow lines).
//
// Pure functions, any thread, no EAL.
#pragma once

#include <cstdint>
#include <string>

namespace flowcop::app {

// "tcp", "udp", "icmp", "icmpv6", ... or the number, as conntrack names protocols.
std::string proto_name(uint8_t proto);
// The name alone (a static string), or nullptr for a protocol without one.
const char* known_proto_name(uint8_t proto) noexcept;
// The inverse (names above, any case, ipv6-icmp too, or 0..255). False if neither.
bool parse_proto(const std::string& name, uint8_t& out);

} // namespace flowcop::app
