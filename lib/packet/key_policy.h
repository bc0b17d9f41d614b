// SPDX-License-Identifier: BSD-3-Clause
// Contract: how much of the L2 context goes into a flow's key, applied by the caller (the worker)
// to a parsed Packet before it reaches the flow table: --vlan-key. parse() itself always keys both
// VLAN IDs (flow_key.h), so the parser, its fast path and its fuzz contract stay one thing; a policy
// other than the default is a few stores per packet, and the default costs nothing (the caller
// skips the call).
// - VlanKey::both (the default, Suricata's vlan.use-for-tracking: true): outer and inner VLAN IDs
//   are in the key, so overlapping address plans in different VLANs stay apart.
// - VlanKey::outer: only the outer ID is kept: for links where a provider's service tag is
//   constant but an inner tag is added or stripped on one side only.
// - VlanKey::none: no VLAN ID is in the key (vlan.use-for-tracking: false): for links that tag one
//   direction only, which would otherwise split every connection in two.
// Packet::vlan_outer/vlan_inner keep what was on the wire whatever the policy; only key.vlan
// changes. A third or fourth tag is never in the key (packet.h, extra.vlan_tags). Pure, allocation-free,
// any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include <packet/packet.h>

namespace flowcop::packet {

enum class VlanKey : uint8_t { both, outer, none };

// "both", "outer", "none" (the --vlan-key values); "unknown" out of range.
const char* vlan_key_name(VlanKey mode) noexcept;
// Exact inverse of vlan_key_name for the three modes; false (and `out` unchanged) otherwise.
bool parse_vlan_key(std::string_view text, VlanKey& out) noexcept;

// Zeroes the VLAN IDs `mode` leaves out of the key (packing: flow_key.h, outer << 12 | inner). Also
// for keys that come from elsewhere than a packet (a control-plane kill), so both name flows alike.
inline void apply_vlan_key(FlowKey& key, VlanKey mode) noexcept
{
    if (mode == VlanKey::outer) {
        key.vlan[1] &= 0xf0; // the outer ID's low 4 bits stay
        key.vlan[2] = 0;
    } else if (mode == VlanKey::none) {
        key.vlan[0] = key.vlan[1] = key.vlan[2] = 0;
    }
}

inline void apply_vlan_key(Packet& p, VlanKey mode) noexcept
{
    apply_vlan_key(p.key, mode);
}

} // namespace flowcop::packet
