// SPDX-License-Identifier: BSD-3-Clause
// Parser seeds: crafted frames, one per rule, and the frames of a capture (see corpus_seeds.h).
#include "corpus_seeds.h"

#include "frame_builder.h"
#include "pcap_reader.h"

#include <packet/packet.h>

#include <cstring>
#include <set>
#include <tuple>

namespace flowcop::fuzz {

using test::FrameBuilder;

namespace {

std::vector<uint8_t> cut(std::vector<uint8_t> f, size_t n)
{
    f.resize(std::min(n, f.size()));
    return f;
}

std::vector<uint8_t> with_byte(std::vector<uint8_t> f, size_t at, uint8_t v)
{
    if (at < f.size())
        f[at] = v;
    return f;
}

} // namespace

size_t significant_prefix(const std::vector<uint8_t>& frame)
{
    packet::Packet want, got;
    packet::parse(frame.data(), uint32_t(frame.size()), want);
    const size_t limit = std::min<size_t>(frame.size(), 255);
    std::vector<uint8_t> probe(frame.size(), 0);
    for (size_t h = 0; h < limit; ++h) {
        packet::parse(probe.data(), uint32_t(probe.size()), got);
        if (std::memcmp(&got, &want, sizeof want) == 0)
            return h;
        probe[h] = frame[h];
    }
    return limit;
}

std::vector<Seed> crafted_frames()
{
    const std::vector<uint8_t> v4 = FrameBuilder().ipv4().tcp().payload(20).build();
    const std::vector<uint8_t> v6 = FrameBuilder().ipv6().tcp().payload(10).build();
    std::vector<Seed> s = {
        {"tcp_v4", v4},
        {"tcp_v4_options",
         FrameBuilder().ipv4({.options = {1, 1, 1, 1, 1, 1, 1, 0}}).tcp({.options = {2, 4, 5, 0xb4}}).build()},
        {"tcp_v4_padded", FrameBuilder().ipv4().tcp({.flags = 0x10}).pad_to(60).build()},
        {"tcp_v4_first_fragment", FrameBuilder().ipv4({.more_fragments = true}).tcp().payload(8).build()},
        {"tcp_v4_later_fragment", FrameBuilder().ipv4({.frag_offset = 3}).next_protocol(6).payload(16).build()},
        {"tcp_v4_bigtcp_zero_length",
         FrameBuilder().ipv4({.total_length = 0}).tcp({.flags = 0x10}).payload(70000).build()},
        {"tcp_v4_bad_data_offset", FrameBuilder().ipv4().tcp({.data_offset = 4}).build()},
        {"tcp_v4_data_offset_past_end", FrameBuilder().ipv4().tcp({.data_offset = 15}).build()},
        {"tcp_v4_bad_ihl", FrameBuilder().ipv4({.ihl = 4}).tcp().build()},
        {"tcp_v4_bad_version", FrameBuilder().ipv4({.version = 6}).tcp().build()},
        {"tcp_v4_total_length_past_frame", FrameBuilder().ipv4({.total_length = 400}).tcp().build()},
        {"tcp_v4_truncated_l3", cut(v4, 20)},
        {"tcp_v4_truncated_l4", FrameBuilder().ipv4().tcp().truncate(14 + 20 + 10).build()},
        {"truncated_l2", cut(v4, 10)},
        {"empty", {}},
        {"vlan_qinq_tcp", FrameBuilder().vlan(10, 0x88a8).vlan(20).ipv4().tcp().build()},
        {"vlan_triple_tcp", FrameBuilder().vlan(1, 0x9100).vlan(2, 0x88a8).vlan(3).ipv4().tcp().build()},
        {"vlan_too_deep", FrameBuilder().vlan(1).vlan(2).vlan(3).vlan(4).vlan(5).ipv4().tcp().build()},
        {"vlan_truncated", cut(FrameBuilder().vlan(7).ipv4().tcp().build(), 16)},
        {"udp_v4", FrameBuilder().ipv4().udp().payload(8).build()},
        {"icmp_v4", FrameBuilder().ipv4().icmp().pad_to(60).build()},
        {"icmp_v4_echo_reply", FrameBuilder().ipv4().icmp({.type = 0, .id = 9}).build()},
        {"icmp_v4_error_tcp",
         FrameBuilder().ipv4().icmp({.type = 3, .code = 1, .rest = 0}).quote(FrameBuilder().ipv4().tcp(), 28).build()},
        {"icmp_v4_error_echo", FrameBuilder()
                                   .ipv4()
                                   .icmp({.type = 11, .rest = 0})
                                   .quote(FrameBuilder().ipv4({.more_fragments = true}).icmp())
                                   .build()},
        {"icmp_v4_bad_quote",
         FrameBuilder().ipv4().icmp({.type = 3, .rest = 0}).quote(FrameBuilder().ipv4().udp(), 20).build()},
        {"icmp_v4_other", FrameBuilder().ipv4().icmp({.type = 9}).build()},
        {"other_l4_v4", FrameBuilder().ipv4().next_protocol(47).payload(8).build()},
        {"arp", FrameBuilder().ethertype(0x0806).payload(28).build()},
        {"tcp_v6", v6},
        {"tcp_v6_truncated_l3", cut(v6, 40)},
        {"tcp_v6_payload_length_past_frame", FrameBuilder().ipv6({.payload_length = 500}).tcp().build()},
        {"tcp_v6_zero_payload_length", FrameBuilder().ipv6({.payload_length = 0}).tcp().build()},
        {"tcp_v6_ext_chain", FrameBuilder()
                                 .vlan(7)
                                 .ipv6()
                                 .ipv6_ext(0)
                                 .ipv6_ext(43, 24)
                                 .ipv6_frag(0, true)
                                 .ipv6_ah()
                                 .ipv6_ext(60)
                                 .tcp()
                                 .build()},
        {"tcp_v6_atomic_fragment", FrameBuilder().ipv6().ipv6_frag(0, false).tcp().build()},
        {"tcp_v6_later_fragment", FrameBuilder().ipv6().ipv6_frag(3, false).next_protocol(6).payload(16).build()},
        {"tcp_v6_ext_near_cap", FrameBuilder().ipv6().ipv6_ext(0, 160).tcp().payload(30).build()},
        // truncate(), not cut(): the payload length matches the short datagram, so the header runs off
        // the packet rather than the frame falling short of its IP length.
        {"tcp_v6_ext_truncated", FrameBuilder().ipv6().ipv6_ext(0, 64).tcp().truncate(14 + 40 + 20).build()},
        {"v6_esp", FrameBuilder().ipv6().next_protocol(50).payload(16).build()},
        {"v6_no_next_header", FrameBuilder().ipv6().next_protocol(59).build()},
        {"icmp_v6", FrameBuilder().ipv6().icmp().build()},
        {"icmp_v6_error_udp_ext", FrameBuilder()
                                      .ipv6()
                                      .icmp({.type = 2, .rest = 1280})
                                      .quote(FrameBuilder().ipv6().ipv6_ext(0).ipv6_frag(0, true).udp().payload(100))
                                      .build()},
        {"icmp_v6_neighbour_solicitation", FrameBuilder().ipv6().icmp({.type = 135, .rest = 0}).payload(16).build()},
        {"udp_v6_later_fragment", FrameBuilder().ipv6().ipv6_frag(100, true, 77).next_protocol(17).payload(64).build()},
        {"udp_v6", FrameBuilder().ipv6().udp().payload(4).build()},
        {"tcp_v6_mapped_v4_addresses",
         FrameBuilder().ipv6({.src = test::ip6("::ffff:10.0.0.1"), .dst = test::ip6("::ffff:10.0.0.2")}).tcp().build()},
        {"tcp_v4_self_connect", FrameBuilder()
                                    .ipv4({.src = test::ip4("10.0.0.1"), .dst = test::ip4("10.0.0.1")})
                                    .tcp({.sport = 5, .dport = 5})
                                    .build()},
        {"tcp_v4_ihl_15",
         with_byte(FrameBuilder().ipv4({.options = std::vector<uint8_t>(40, 1)}).tcp().build(), 14, 0x4f)},
    };
    std::vector<uint8_t> ext9 = FrameBuilder()
                                    .ipv6()
                                    .ipv6_ext(0)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .ipv6_ext(60)
                                    .tcp()
                                    .build();
    s.push_back({"tcp_v6_ext_too_long", ext9});
    return s;
}

std::vector<Seed> capture_frames(const std::string& path, const std::string& tag, std::string& error)
{
    test::PcapReader pcap;
    std::vector<Seed> out;
    if (!pcap.open(path)) {
        error = path + ": " + pcap.error();
        return out;
    }
    // The first frame of each kind, so a capture of thousands of similar segments gives a few seeds.
    std::set<std::tuple<int, int, int, bool, bool>> kinds;
    test::PcapRecord rec;
    unsigned index = 0;
    while (pcap.next(rec)) {
        packet::Packet p;
        packet::parse(rec.data.data(), uint32_t(rec.data.size()), p);
        const auto kind = std::make_tuple(int(p.verdict), int(p.tcp_flags), int(p.ip_version), p.vlan_outer != 0,
                                          p.l4_payload_len != 0);
        if (kinds.insert(kind).second)
            out.push_back({tag + "-frame" + std::to_string(index), rec.data});
        ++index;
    }
    if (!pcap.error().empty())
        error = path + ": " + pcap.error();
    return out;
}

} // namespace flowcop::fuzz
