// SPDX-License-Identifier: BSD-3-Clause
#include <packet/verdict.h>

namespace flowcop::packet {
namespace {

// Indexed by Verdict; the static_assert keeps it in step with the enum.
constexpr const char* kNames[] = {
    "tcp",
    "udp",
    "icmp",
    "icmp_error",
    "icmp_other",
    "other_l4",
    "non_ip",
    "fragment",
    "truncated_l2",
    "truncated_l3",
    "truncated_l4",
    "ip_bad_version",
    "ipv4_bad_ihl",
    "ip_bad_total_length",
    "ipv6_ext_truncated",
    "ipv6_ext_too_long",
    "tcp_bad_data_offset",
    "icmp_bad_quote",
    "vlan_too_deep",
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == kVerdictCount, "one name per Verdict");

} // namespace

const char* verdict_name(Verdict v) noexcept
{
    const auto i = static_cast<unsigned>(v);
    return i < kVerdictCount ? kNames[i] : "invalid";
}

} // namespace flowcop::packet
