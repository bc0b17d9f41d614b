// SPDX-License-Identifier: BSD-3-Clause
// Test-only builder of Ethernet frames, layer by layer, for any test that needs
// crafted packets (parser, flow table, state machine).
//
// Usage:
//   auto f = FrameBuilder().vlan(42).ipv4({.src = ip4("10.0.0.1")}).tcp({.flags = tcp_syn}).payload(10).build();
//
// Contract:
// - Every frame starts with a 14-byte Ethernet II header; each layer call writes the
//   previous layer's "next protocol" field (ethertype, IPv4 protocol, IPv6 next
//   header), so layers stack in call order. One IP header per frame (no tunnels).
// - Lengths are filled at build() from what was appended after the IP header: IPv4
//   total length, IPv6 payload length, UDP length; checksums (IPv4 header, TCP, UDP,
//   ICMP/ICMPv6) likewise, so frames are also valid on a wire or in a pcap. Each
//   length can be overridden in the spec to craft a malformed frame.
// - pad_to() adds Ethernet padding that is not counted in any IP length; truncate()
//   cuts the datagram *before* lengths are filled (a consistent short datagram),
//   whereas cutting build()'s result yields a frame shorter than its IP length.
// - Misuse (a layer after the IP payload started, more than one IP header, an
//   extension header outside IPv6) throws std::logic_error: tests, not the data path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace flowcop::test {

using Ipv4Addr = std::array<uint8_t, 4>;
using Ipv6Addr = std::array<uint8_t, 16>;

// Text to address via inet_pton; throws std::invalid_argument on bad text.
Ipv4Addr ip4(const char* text);
Ipv6Addr ip6(const char* text);

struct Ipv4Spec {
    Ipv4Addr src{10, 0, 0, 1};
    Ipv4Addr dst{10, 0, 0, 2};
    uint16_t id = 1;
    uint8_t ttl = 64;
    uint16_t frag_offset = 0; // in 8-byte units (the wire field)
    bool more_fragments = false;
    bool dont_fragment = false;
    std::vector<uint8_t> options{};         // appended after the 20-byte header; pad to 4 yourself
    std::optional<uint8_t> ihl{};           // header length in words; default (20 + options) / 4
    std::optional<uint16_t> total_length{}; // default: everything after the IP header start
    uint8_t version = 4;
};

struct Ipv6Spec {
    Ipv6Addr src{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}; // 2001:db8::1
    Ipv6Addr dst{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}; // 2001:db8::2
    uint8_t hop_limit = 64;
    uint32_t flow_label = 0;
    std::optional<uint16_t> payload_length{}; // default: everything after the 40-byte header
    uint8_t version = 6;
};

struct TcpSpec {
    uint16_t sport = 40000;
    uint16_t dport = 80;
    uint32_t seq = 1000;
    uint32_t ack = 0;
    uint8_t flags = 0x02; // SYN
    uint16_t window = 65535;
    std::vector<uint8_t> options{};       // appended after the 20-byte header; pad to 4 yourself
    std::optional<uint8_t> data_offset{}; // in words; default (20 + options) / 4
};

struct UdpSpec {
    uint16_t sport = 5353;
    uint16_t dport = 53;
    std::optional<uint16_t> length{}; // default: header plus what follows
};

// ICMP/ICMPv6: type defaults to echo request (8, or 128 over IPv6). For queries bytes 4-7 are the
// identifier and sequence; for an error they are `rest` (unused, pointer or MTU) and the quoted
// packet follows as raw() or quote().
struct IcmpSpec {
    std::optional<uint8_t> type{};
    uint8_t code = 0;
    uint16_t id = 1;
    uint16_t seq = 1;
    std::optional<uint32_t> rest{}; // replaces id and seq when set
};

class FrameBuilder {
public:
    FrameBuilder();

    // Tag with TPID 0x8100 (802.1Q); pass 0x88a8 / 0x9100 for QinQ outer tags.
    FrameBuilder& vlan(uint16_t vid, uint16_t tpid = 0x8100, uint8_t pcp = 0);
    // Writes the pending ethertype for a non-IP payload (ARP, MPLS, ...); add raw() after.
    FrameBuilder& ethertype(uint16_t type);

    FrameBuilder& ipv4(const Ipv4Spec& spec = {});
    FrameBuilder& ipv6(const Ipv6Spec& spec = {});
    // Hop-by-hop (0), routing (43) or destination options (60): `len` bytes, a multiple
    // of 8 and >= 8, filled with PadN so the options area is well-formed.
    FrameBuilder& ipv6_ext(uint8_t type, size_t len = 8);
    // Fragment header; offset in 8-byte units.
    FrameBuilder& ipv6_frag(uint16_t offset, bool more, uint32_t id = 0x1234);
    // Authentication header of `len` bytes (a multiple of 4, >= 12).
    FrameBuilder& ipv6_ah(size_t len = 24);

    FrameBuilder& tcp(const TcpSpec& spec = {});
    FrameBuilder& udp(const UdpSpec& spec = {});
    // ICMP over IPv4, ICMPv6 over IPv6: the 8-byte header of `spec` (default an echo request).
    FrameBuilder& icmp(const IcmpSpec& spec = {});
    // Appends another frame's IP datagram (its bytes from its IP header on), cut to at most
    // `max_bytes`: the quoted packet of an ICMP error.
    FrameBuilder& quote(const FrameBuilder& inner, size_t max_bytes = 1u << 16);
    // Writes the pending IP protocol / next-header field for a raw L4 (add raw() after).
    FrameBuilder& next_protocol(uint8_t proto);

    FrameBuilder& payload(size_t n, uint8_t fill = 0xab);
    FrameBuilder& raw(const std::vector<uint8_t>& bytes);
    // Cut the frame under construction to n bytes; lengths are then filled from there.
    FrameBuilder& truncate(size_t n);
    // Ethernet padding up to `frame_len` bytes (60 is the minimum frame without FCS).
    FrameBuilder& pad_to(size_t frame_len);

    std::vector<uint8_t> build() const;

    size_t size() const { return _bytes.size(); }
    size_t l3_offset() const { return _l3; } // start of the IP header (npos if none)
    size_t l4_offset() const { return _l4; } // start of the TCP/UDP/ICMP header (npos if none)
    static constexpr size_t kNpos = static_cast<size_t>(-1);

private:
    enum class Pending { ethertype, ip_proto, none };
    void fill_pending_ethertype(uint16_t type);
    void fill_pending_proto(uint8_t proto);
    void put16(uint16_t v);
    void put32(uint32_t v);
    void fix_lengths(std::vector<uint8_t>& f) const;
    void fix_checksums(std::vector<uint8_t>& f) const;

    std::vector<uint8_t> _bytes;
    Pending _pending = Pending::ethertype;
    size_t _pending_off = 12;
    size_t _l3 = kNpos;
    size_t _l4 = kNpos;
    uint8_t _l4_proto = 0;
    int _ip_version = 0;
    std::optional<uint16_t> _ip_length; // IPv4 total length / IPv6 payload length override
    std::optional<uint16_t> _udp_length;
    size_t _pad_to = 0;
};

// The IP packet's length in an Ethernet frame (VLAN tags skipped), read from its IP header as flowcop's
// byte counters count it: IPv4's total length, IPv6's 40 + payload length; 0 when it holds no IP header.
// Independent of the parser, so tests compare flow bytes with it.
size_t ip_length(const std::vector<uint8_t>& frame);

} // namespace flowcop::test
