// SPDX-License-Identifier: BSD-3-Clause
// Tracking seeds for the key (see corpus_seeds.h): zones from the script's ports (track_script.h:
// port 0 none, ports 1 and 2 zone 7, port 3 zone 9) and the three --vlan-key modes, over TCP, UDP,
// ICMP errors and fragments, so a key that drops or mixes up a zone or a VLAN ID shows as merged or
// split flows, misplaced errors and fragments, or a key the oracle's rules reject.
#include "corpus_script_frames.h"

namespace flowcop::fuzz {

using namespace seed;

namespace {

// Moves the script to `port` (the 0xfc op cycles 0, 1, 2, 3) without ending the burst.
class Ports {
public:
    explicit Ports(ScriptWriter& w) : _w(w) {}
    ScriptWriter& on(unsigned port)
    {
        while (_at != port % kScriptPorts) {
            _w.next_port();
            _at = (_at + 1) % kScriptPorts;
        }
        return _w;
    }

private:
    ScriptWriter& _w;
    unsigned _at = 0;
};

} // namespace

std::vector<Seed> crafted_key_scripts()
{
    std::vector<Seed> out;
    auto add = [&](const char* name, const ScriptWriter& w) { out.push_back({name, w.bytes()}); };
    TrackSetup all;
    all.all_protocols = true;
    const Ep c{"10.0.3.1", 5353}, dns{"10.0.3.2", 53}, cl{"10.0.3.3", 41000}, web{"10.0.3.4", 443};
    { // The same tuples on every port: zone 0, zone 7 (ports 1 and 2 one zone) and zone 9 are three
        // flows each. ICMP errors find a flow in their own zone only; a datagram's later fragments
        // join its first fragment in their zone, not across zones; a kill names the zoned key.
        ScriptWriter w(all);
        Ports p(w);
        put(p.on(0), udp(c, dns));
        put(p.on(1), udp(c, dns));
        put(p.on(2), udp(dns, c)); // replies to port 1's query: one zone
        put(p.on(3), udp(c, dns));
        put(p.on(1), tcp(cl, web, kSyn));
        put(p.on(2), tcp(web, cl, kSyn | kAck));
        put(p.on(1), tcp(cl, web, kAck));
        w.flush();
        put(p.on(3), icmp_error("10.0.3.254", c.addr, ip(c.addr, dns.addr).udp({.sport = c.port, .dport = dns.port})));
        put(p.on(2), icmp_error(web.addr, cl.addr, ip(cl.addr, web.addr).tcp({.sport = cl.port, .dport = web.port})));
        put(p.on(3), icmp_error(web.addr, cl.addr, ip(cl.addr, web.addr).tcp({.sport = cl.port, .dport = web.port})));
        const auto zoned = udp_fragments(c, dns, 41, 3), other = udp_fragments(c, dns, 42, 3);
        put(p.on(1), zoned[0]);
        put(p.on(2), zoned[2]); // zone 7: attributed
        put(p.on(0), zoned[1]); // zone 0 has no first fragment of id 41: held, never attributed
        put(p.on(0), other[0]);
        put(p.on(3), other[1]); // zone 9: not zone 0's datagram
        put(p.on(0), other[2]);
        put(p.on(0), tcp(cl, web, kAck)); // zone 0: a flow of its own (loose pickup)
        w.kill(0);                        // the zone 0 TCP flow only
        put(p.on(2), tcp(cl, web, kAck, 10));
        w.advance(15).advance(39).advance(45);
        add("zones_same_tuples_per_port", w);
    }
    { // --vlan-key outer: an inner tag added or changed on one side is one flow; another outer tag is
        // another flow; a datagram's fragments join across inner tags.
        TrackSetup outer = all;
        outer.vlan_key = packet::VlanKey::outer;
        ScriptWriter w(outer);
        put(w, udp(c, dns, 200, 300));
        put(w, udp(dns, c, 200, 301));
        put(w, udp(c, dns, 200));
        put(w, udp(c, dns, 201, 300));
        put(w, tcp(cl, web, kSyn, 0, 100, 1));
        put(w, tcp(web, cl, kSyn | kAck, 0, 100, 2));
        put(w, tcp(cl, web, kAck, 0, 100));
        const auto frags = udp_fragments(c, dns, 43, 3, 200, 300);
        const auto retagged = udp_fragments(c, dns, 43, 3, 200, 302);
        put(w, frags[0]);
        put(w, retagged[1]);
        put(w, frags[2]);
        w.advance(15).advance(39).advance(45);
        add("vlan_key_outer_inner_tag_ignored", w);
    }
    { // --vlan-key none: a link that tags one direction only; requests tagged, replies not; echo
        // request and reply in different VLANs; a kill by the untagged key.
        TrackSetup none = all;
        none.vlan_key = packet::VlanKey::none;
        ScriptWriter w(none);
        put(w, udp(c, dns, 100));
        put(w, udp(dns, c));
        put(w, tcp(cl, web, kSyn, 0, 10));
        put(w, tcp(web, cl, kSyn | kAck));
        put(w, tcp(cl, web, kAck, 0, 10, 20));
        put(w, echo("10.0.3.1", "10.0.3.2", true, 11, 5));
        put(w, echo("10.0.3.2", "10.0.3.1", false, 11, 6));
        put(w, icmp_error("10.0.3.254", c.addr, ip(c.addr, dns.addr, 7).udp({.sport = c.port, .dport = dns.port})));
        w.kill(0);
        w.advance(15).advance(39).advance(45);
        add("vlan_key_none_one_sided_tags", w);
    }
    { // TCP only, ports and --vlan-key none together: a handshake across ports 1 and 2 of zone 7
        // with tags on one side, closed; the same tuple on port 3 (zone 9) is picked up on its own.
        TrackSetup tcp_only;
        tcp_only.vlan_key = packet::VlanKey::none;
        ScriptWriter w(tcp_only);
        Ports p(w);
        const Ep a{"10.0.3.5", 42000}, b{"10.0.3.6", 22};
        put(p.on(1), tcp(a, b, kSyn, 0, 30));
        put(p.on(2), tcp(b, a, kSyn | kAck));
        put(p.on(1), tcp(a, b, kAck, 0, 30));
        put(p.on(3), tcp(a, b, kAck));
        put(p.on(2), tcp(b, a, kAck, 0, 30));
        w.flush();
        p.on(1);
        close(w, a, b);
        w.advance(15).advance(39).advance(45);
        add("tcp_zones_vlan_key_none", w);
    }
    return out;
}

} // namespace flowcop::fuzz
