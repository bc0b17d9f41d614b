// SPDX-License-Identifier: BSD-3-Clause
// Oracle: the key rules, --vlan-key and --port-zone, and fragment attribution by key (see track_oracle.h).
#include "track_oracle.h"

namespace flowcop::fuzz {

namespace {

// The VLAN IDs --vlan-key keeps of a frame's outer and inner tags, written out from the option's
// description (key_policy.h), not with its code.
void expect_vlan(packet::VlanKey mode, uint16_t outer, uint16_t inner, uint16_t& key_outer, uint16_t& key_inner)
{
    key_outer = mode == packet::VlanKey::none ? 0 : outer;
    key_inner = mode == packet::VlanKey::both ? inner : 0;
}

bool is_port_zone(uint16_t zone)
{
    for (uint16_t z : kPortZones)
        if (z == zone)
            return true;
    return false;
}

} // namespace

void Oracle::check_frame_keys(const packet::Packet* const* pkts, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) {
        const packet::Packet& p = *pkts[i];
        if (p.ip_version == 0)
            continue; // no key: the frame never reached an IP header
        uint16_t outer = 0, inner = 0;
        expect_vlan(_vlan_key, p.vlan_outer, p.vlan_inner, outer, inner);
        if (packet::key_vlan_outer(p.key) != outer || packet::key_vlan_inner(p.key) != inner)
            fail("frame " + std::to_string(i) + " of the burst: key VLAN " +
                 std::to_string(packet::key_vlan_outer(p.key)) + "/" + std::to_string(packet::key_vlan_inner(p.key)) +
                 " for tags " + std::to_string(p.vlan_outer) + "/" + std::to_string(p.vlan_inner) +
                 " under --vlan-key " + packet::vlan_key_name(_vlan_key));
        if (p.key.zone != port_zone(p.in_port))
            fail("frame " + std::to_string(i) + " of the burst: zone " + std::to_string(p.key.zone) + " on port " +
                 std::to_string(p.in_port) + ", whose zone is " + std::to_string(port_zone(p.in_port)));
        if (!(p.extra.frag_flags & packet::kFragmented))
            continue;
        Datagram d{p.key, p.extra.frag_id, p.src_is_lo};
        d.key.port_lo = d.key.port_hi = 0;
        if (p.verdict != packet::Verdict::fragment) {
            if (p.extra.frag_offset == 0)
                _first_fragments[d].insert({p.key.port_lo, p.key.port_hi});
        } else if ((p.extra.frag_flags & packet::kFragAttributed) && (p.key.port_lo | p.key.port_hi) != 0) {
            auto it = _first_fragments.find(d);
            if (it == _first_fragments.end() || !it->second.count({p.key.port_lo, p.key.port_hi}))
                fail("frame " + std::to_string(i) + " of the burst: a later fragment (id " +
                     std::to_string(p.extra.frag_id) + ", zone " + std::to_string(p.key.zone) +
                     ") got ports no first fragment of its datagram had");
        }
    }
}

void Oracle::check_flow_keys(const Flows& s1)
{
    for (const conntrack::FlowSnapshot& f : s1.v) {
        if ((_vlan_key != packet::VlanKey::both && packet::key_vlan_inner(f.key) != 0) ||
            (_vlan_key == packet::VlanKey::none && packet::key_vlan_outer(f.key) != 0))
            fail(std::string("a flow keyed with a VLAN ID --vlan-key ") + packet::vlan_key_name(_vlan_key) +
                 " leaves out");
        if (!is_port_zone(f.key.zone))
            fail("a flow in zone " + std::to_string(f.key.zone) + ", which no port has");
    }
}

} // namespace flowcop::fuzz
