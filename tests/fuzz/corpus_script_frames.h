// SPDX-License-Identifier: BSD-3-Clause
// The frames and steps the crafted tracking seeds are written with (corpus_scripts.cpp,
// corpus_protocol_scripts.cpp, corpus_key_scripts.cpp): TCP segments numbered as a real stack numbers them, UDP, ICMP echo
// and errors, other protocols and fragmented UDP, over IPv4 or IPv6 by the address text, optionally
// VLAN-tagged; put() carries only the bytes that decide a frame's parse. Test code: allocates freely.
#pragma once

#include "corpus_seeds.h"
#include "frame_builder.h"
#include "track_script.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <rte_tcp.h>

namespace flowcop::fuzz::seed {

using test::FrameBuilder;

// DPDK's TCP flag bits (rte_tcp.h) under short names.
inline constexpr uint8_t kFin = RTE_TCP_FIN_FLAG, kSyn = RTE_TCP_SYN_FLAG, kRst = RTE_TCP_RST_FLAG,
                         kAck = RTE_TCP_ACK_FLAG;

struct Ep {
    const char* addr;
    uint16_t port;
};

// What each direction has sent so far (next_seq), kept across seeds within one crafted_scripts() call.
inline std::map<std::string, uint32_t>& sent_so_far()
{
    static std::map<std::string, uint32_t> next;
    return next;
}

// Forgets every direction's numbering: crafted_scripts() starts with it, so its output does not depend
// on what ran before it in the process (the committed corpus must equal any call's output).
inline void restart_sequence_numbers()
{
    sent_so_far().clear();
}

// The next sequence number a sends to b: an ISN from the endpoints, advanced by what a sent, so every
// seed's segments are numbered as a real stack numbers them and pass window tracking (issue 16).
inline uint32_t& next_seq(Ep a, Ep b)
{
    std::map<std::string, uint32_t>& next = sent_so_far();
    const std::string k =
        std::string(a.addr) + ":" + std::to_string(a.port) + ">" + b.addr + ":" + std::to_string(b.port);
    auto it = next.find(k);
    if (it == next.end())
        it = next.emplace(k, 1000u + 7919u * a.port + 104729u * b.port).first;
    return it->second;
}

inline std::vector<uint8_t> tcp(Ep a, Ep b, uint8_t flags, size_t payload = 0, uint16_t vlan = 0, uint16_t vlan2 = 0)
{
    uint32_t& nxt = next_seq(a, b);
    const uint32_t seq = nxt, ack = (flags & 0x10) ? next_seq(b, a) : 0;
    nxt += uint32_t(payload) + ((flags & 0x02) ? 1u : 0u) + ((flags & 0x01) ? 1u : 0u);
    FrameBuilder f;
    if (vlan)
        f.vlan(vlan, vlan2 ? 0x88a8 : 0x8100);
    if (vlan2)
        f.vlan(vlan2);
    if (std::string(a.addr).find(':') != std::string::npos)
        f.ipv6({.src = test::ip6(a.addr), .dst = test::ip6(b.addr)});
    else
        f.ipv4({.src = test::ip4(a.addr), .dst = test::ip4(b.addr)});
    f.tcp({.sport = a.port, .dport = b.port, .seq = seq, .ack = ack, .flags = flags});
    if (payload)
        f.payload(payload);
    return f.build();
}

// Frames carry only the bytes that decide their parse (payload becomes padding).
inline ScriptWriter& put(ScriptWriter& w, const std::vector<uint8_t>& f, unsigned dt_ms = 1)
{
    return w.frame(f, dt_ms, significant_prefix(f));
}

inline const Ep client{"10.0.0.1", 40000}, server{"10.0.0.2", 80};

inline void handshake(ScriptWriter& w, Ep a, Ep b)
{
    put(w, tcp(a, b, kSyn));
    put(w, tcp(b, a, kSyn | kAck));
    put(w, tcp(a, b, kAck));
}

inline void close(ScriptWriter& w, Ep a, Ep b)
{
    put(w, tcp(a, b, kFin | kAck));
    put(w, tcp(b, a, kAck));
    put(w, tcp(b, a, kFin | kAck));
    put(w, tcp(a, b, kAck));
}

inline Ep nth(unsigned i)
{
    return Ep{"10.1.0.1", uint16_t(20000 + i)};
}

inline bool is_v6(const char* addr)
{
    return std::string(addr).find(':') != std::string::npos;
}

// An IP header from a to b (the family by the address) after optional VLAN tags.
inline FrameBuilder ip(const char* a, const char* b, uint16_t vlan = 0, uint16_t vlan2 = 0)
{
    FrameBuilder f;
    if (vlan)
        f.vlan(vlan, vlan2 ? 0x88a8 : 0x8100);
    if (vlan2)
        f.vlan(vlan2);
    if (is_v6(a))
        f.ipv6({.src = test::ip6(a), .dst = test::ip6(b)});
    else
        f.ipv4({.src = test::ip4(a), .dst = test::ip4(b)});
    return f;
}

inline std::vector<uint8_t> udp(Ep a, Ep b, uint16_t vlan = 0, uint16_t vlan2 = 0)
{
    return ip(a.addr, b.addr, vlan, vlan2).udp({.sport = a.port, .dport = b.port}).payload(20).build();
}

// An ICMP (IPv4) or ICMPv6 echo request or reply.
inline std::vector<uint8_t> echo(const char* a, const char* b, bool request, uint16_t id, uint16_t vlan = 0)
{
    const uint8_t type = is_v6(a) ? (request ? 128 : 129) : (request ? 8 : 0);
    return ip(a, b, vlan).icmp({.type = type, .id = id}).payload(16).build();
}

inline std::vector<uint8_t> proto_frame(const char* a, const char* b, uint8_t proto, uint16_t vlan = 0)
{
    return ip(a, b, vlan).next_protocol(proto).payload(24).build();
}

// An ICMP error (port unreachable; over IPv6 packet too big) from `from` to `to` quoting `quoted`.
inline std::vector<uint8_t> icmp_error(const char* from, const char* to, const FrameBuilder& quoted)
{
    return is_v6(from) ? ip(from, to).icmp({.type = 2, .rest = 1280}).quote(quoted).build()
                       : ip(from, to).icmp({.type = 3, .code = 3, .rest = 0}).quote(quoted).build();
}

// A UDP datagram of 8 + 16 * parts bytes from a to b in `parts` fragments (IPv4 or IPv6 by address),
// optionally VLAN-tagged.
inline std::vector<std::vector<uint8_t>> udp_fragments(Ep a, Ep b, uint16_t id, unsigned parts, uint16_t vlan = 0,
                                                       uint16_t vlan2 = 0)
{
    std::vector<std::vector<uint8_t>> out;
    for (unsigned i = 0; i < parts; ++i) {
        const uint16_t offset = i == 0 ? 0 : uint16_t(3 + 2 * (i - 1)); // 8-byte units
        const bool more = i + 1 < parts;
        FrameBuilder f;
        if (vlan)
            f.vlan(vlan, vlan2 ? 0x88a8 : 0x8100);
        if (vlan2)
            f.vlan(vlan2);
        if (is_v6(a.addr))
            f.ipv6({.src = test::ip6(a.addr), .dst = test::ip6(b.addr)}).ipv6_frag(offset, more, id);
        else
            f.ipv4({.src = test::ip4(a.addr),
                    .dst = test::ip4(b.addr),
                    .id = id,
                    .frag_offset = offset,
                    .more_fragments = more});
        if (i == 0)
            f.udp({.sport = a.port, .dport = b.port, .length = uint16_t(8 + 16 * parts)});
        else
            f.next_protocol(17);
        out.push_back(f.payload(16).build());
    }
    return out;
}

inline void fragments_in(ScriptWriter& w, const std::vector<std::vector<uint8_t>>& frames,
                         std::initializer_list<unsigned> order)
{
    for (unsigned i : order)
        put(w, frames[i]);
}

} // namespace flowcop::fuzz::seed
