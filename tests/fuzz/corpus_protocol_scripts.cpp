// SPDX-License-Identifier: BSD-3-Clause
// Tracking seeds for every protocol but TCP (TrackSetup::all_protocols; see corpus_seeds.h): UDP
// unreplied, replied and stream, ICMP/ICMPv6 echo, ICMP errors quoting known flows both ways and no
// flow, GRE/ESP/SCTP, fragments in and out of order, VLAN variants, a fragment flood, a full table.
#include "corpus_script_frames.h"

namespace flowcop::fuzz {

using namespace seed;

std::vector<Seed> crafted_protocol_scripts()
{
    std::vector<Seed> out;
    auto add = [&](const char* name, const ScriptWriter& w) { out.push_back({name, w.bytes()}); };
    TrackSetup all;
    all.all_protocols = true;
    const Ep c{"10.0.0.1", 5353}, dns{"10.0.0.2", 53}, c2{"10.0.0.3", 5354};
    { // UDP: a reply (REPLIED), then after 2 s a packet that makes it a stream (assured, 6 s): it
        // survives a 5 s pause that would end an unreplied flow (3 s); a second flow stays unreplied
        // and expires.
        ScriptWriter w(all);
        put(w, udp(c, dns));
        put(w, udp(dns, c));
        w.advance(25); // 2.5 s
        put(w, udp(c, dns));
        w.advance(39).advance(11); // 5 s
        put(w, udp(c, dns));
        put(w, udp(c2, dns));
        w.advance(35).advance(39);
        add("udp_unreplied_replied_stream", w);
    }
    { // ICMP and ICMPv6 echo: request and reply; a reply without a request, and one after the flow
        // ended (2 s), start nothing.
        ScriptWriter w(all);
        put(w, echo("10.0.0.1", "10.0.0.2", true, 7));
        put(w, echo("10.0.0.2", "10.0.0.1", false, 7));
        put(w, echo("2001:db8::1", "2001:db8::2", true, 9));
        put(w, echo("2001:db8::2", "2001:db8::1", false, 9));
        put(w, echo("10.0.0.2", "10.0.0.1", false, 99));
        w.advance(25);
        put(w, echo("10.0.0.2", "10.0.0.1", false, 7));
        w.advance(30);
        add("icmp_echo_v4_v6", w);
    }
    { // ICMP errors quoting a UDP flow from either side, a TCP flow, an ICMPv6 error quoting an
        // IPv6 UDP flow, and one quoting no flow: related or unknown, never a new flow.
        ScriptWriter w(all);
        const Ep c6{"2001:db8::1", 5000}, s6{"2001:db8::2", 53};
        put(w, udp(c, dns));
        put(w, udp(dns, c));
        handshake(w, client, server);
        put(w, udp(c6, s6));
        put(w, icmp_error("10.0.0.254", c.addr, ip(c.addr, dns.addr).udp({.sport = c.port, .dport = dns.port})));
        put(w, icmp_error(c.addr, dns.addr, ip(dns.addr, c.addr).udp({.sport = dns.port, .dport = c.port})));
        put(w, icmp_error(server.addr, client.addr,
                          ip(client.addr, server.addr).tcp({.sport = client.port, .dport = server.port})));
        put(w, icmp_error("2001:db8::fe", c6.addr, ip(c6.addr, s6.addr).udp({.sport = c6.port, .dport = s6.port})));
        put(w, icmp_error("10.0.0.254", c.addr, ip(c.addr, dns.addr).udp({.sport = 1, .dport = 2})));
        w.advance(20).advance(45);
        add("icmp_errors_known_both_ways_and_unknown", w);
    }
    { // Other protocols, keyed by addresses and protocol: GRE both ways, ESP one way, SCTP over IPv6;
        // alive at 3.5 s (generic: 4 s), gone after.
        ScriptWriter w(all);
        put(w, proto_frame("10.0.0.1", "10.0.0.2", 47));
        put(w, proto_frame("10.0.0.2", "10.0.0.1", 47));
        put(w, proto_frame("10.0.0.1", "10.0.0.9", 50));
        put(w, proto_frame("2001:db8::1", "2001:db8::2", 132));
        put(w, proto_frame("2001:db8::2", "2001:db8::1", 132));
        w.advance(35);
        put(w, proto_frame("10.0.0.1", "10.0.0.2", 47));
        w.advance(39).advance(15);
        add("other_protocols_gre_esp_sctp", w);
    }
    { // Fragmented UDP: in order, last first, middle first, duplicates, IPv6 reversed, and a
        // datagram whose first fragment never comes (unattributed after the 1 s hold).
        ScriptWriter w(all);
        const Ep c6{"2001:db8::1", 5000}, s6{"2001:db8::2", 53};
        fragments_in(w, udp_fragments(c, dns, 1, 3), {0, 1, 2});
        fragments_in(w, udp_fragments(c, dns, 2, 3), {2, 0, 1});
        fragments_in(w, udp_fragments(dns, c, 3, 3), {1, 0, 2});
        fragments_in(w, udp_fragments(c, dns, 4, 3), {2, 2, 0, 1, 1});
        fragments_in(w, udp_fragments(c6, s6, 5, 3), {2, 1, 0});
        fragments_in(w, udp_fragments(c, dns, 6, 3), {1, 2});
        w.advance(15).advance(45);
        add("fragments_in_and_out_of_order", w);
    }
    { // The same UDP 5-tuple untagged, in VLAN 100 and in QinQ 200/300 (three flows); ICMP and GRE
        // in a VLAN.
        ScriptWriter w(all);
        put(w, udp(c, dns));
        put(w, udp(c, dns, 100));
        put(w, udp(c, dns, 200, 300));
        put(w, udp(dns, c, 100));
        put(w, echo("10.0.0.1", "10.0.0.2", true, 3, 5));
        put(w, echo("10.0.0.2", "10.0.0.1", false, 3, 5));
        put(w, proto_frame("10.0.0.1", "10.0.0.2", 47, 7));
        w.advance(39).advance(45);
        add("vlan_variants_all_protocols", w);
    }
    { // 40 unmatched later fragments against 16 attributor slots, then a real datagram last
        // fragment first: the held ones evict each other, the real one still joins its flow.
        ScriptWriter w(all);
        for (uint16_t i = 0; i < 40; ++i) {
            const std::string src = "172.16.0." + std::to_string(i + 1);
            put(w, udp_fragments(Ep{src.c_str(), 1000}, dns, uint16_t(100 + i), 3)[1], 0);
        }
        fragments_in(w, udp_fragments(c, dns, 7, 3), {2, 0, 1});
        w.advance(15).advance(45);
        add("fragment_flood_small_attributor", w);
    }
    { // An 8-flow table of unreplied UDP flows: TCP handshakes evict them (never assured), then
        // new UDP flows evict what is unassured or are refused.
        TrackSetup small = all;
        small.capacity = 8;
        ScriptWriter w(small);
        for (unsigned i = 0; i < 8; ++i)
            put(w, udp(Ep{"10.2.0.1", uint16_t(3000 + i)}, dns));
        for (unsigned i = 0; i < 4; ++i)
            handshake(w, nth(i), server);
        for (unsigned i = 8; i < 20; ++i)
            put(w, udp(Ep{"10.2.0.1", uint16_t(3000 + i)}, dns), 2);
        w.advance(35).advance(45);
        add("table_full_all_protocols", w);
    }
    return out;
}

} // namespace flowcop::fuzz
