// SPDX-License-Identifier: BSD-3-Clause
// The policy seam's cold half (ct_judge.h): a packet as the policy sees it, and the states of the
// packets the table does not take.
#include <conntrack/ct_judge.h>

namespace flowcop::conntrack {

const char* ct_state_name(CtState s) noexcept
{
    switch (s) {
    case CtState::new_: return "new";
    case CtState::established: return "established";
    case CtState::related: return "related";
    case CtState::invalid: return "invalid";
    case CtState::untracked: return "untracked";
    }
    return "unknown";
}

CtState state_outside(const packet::Packet& pkt) noexcept
{
    // netfilter gives a packet it cannot parse no conntrack (ct state invalid); what it does not track
    // (ICMPv6 neighbour discovery, notrack) is untracked.
    return packet::is_malformed(pkt.verdict) ? CtState::invalid : CtState::untracked;
}

uint8_t Judge::walk(const packet::Packet& pkt, CtState s) noexcept
{
    policy::PacketView v;
    v.state = s;
    v.family = pkt.ip_version == 4   ? policy::Family::ipv4
               : pkt.ip_version == 6 ? policy::Family::ipv6
                                     : policy::Family::any;
    v.proto = pkt.l4_proto;
    v.port = pkt.in_port;
    v.vlan = pkt.vlan_outer;
    v.zone = pkt.key.zone;
    if (v.family != policy::Family::any) {
        // The packet's own direction. An ICMP error's key is the flow it quotes, reversed (packet.h):
        // its destination is the error's, its source stands for the router's, which the key does not keep.
        uint16_t sport = 0, dport = 0;
        packet::key_endpoints(pkt.key, pkt.src_is_lo, v.src, sport, v.dst, dport);
        if (pkt.verdict == packet::Verdict::tcp || pkt.verdict == packet::Verdict::udp) {
            v.sport = pkt.sport;
            v.dport = pkt.dport;
        }
    }
    const policy::Decision d = _policy->verdict(v);
    _counters->count(d, pkt.ip_len);
    const bool drop = d.action == policy::Action::drop;
    bump(_verdicts.packets[static_cast<uint8_t>(s)][drop ? 1 : 0]);
    return uint8_t(kJudged | static_cast<uint8_t>(s) | (drop ? kDropBit : 0));
}

} // namespace flowcop::conntrack
