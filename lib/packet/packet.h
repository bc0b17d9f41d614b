// SPDX-License-Identifier: BSD-3-Clause
// Contract: parse() turns one Ethernet frame into a Packet (flow key, TCP fields,
// Verdict). It is the single parser; parse_mbuf() (packet_mbuf.h) is a thin entry
// that hands it header bytes from an mbuf.
//
// Ownership and threading: parse() reads the bytes it is given and writes only
// `out`; it keeps no state, so any number of lcores call it concurrently. Hot-path
// safe: no allocation, no exceptions, no logging, no syscalls, bounded work (at most
// max_vlan_tags tags, max_ipv6_ext_headers extension headers, max_header_bytes bytes).
//
// Safety: every read is bounds-checked against the bytes given. No input, however
// hostile, reads out of bounds or is guessed at: a frame that breaks a rule gets the
// malformed Verdict of the first rule it breaks (outer layer first; see verdict.h).
//
// Output: `out` is zeroed and then filled as far as parsing got: VLAN IDs (key.vlan, vlan_outer/inner, extra.vlan_tags) once the L2 header parsed;
// ip_version, ip_len, l4_proto and the key's addresses/proto once the IP header passed its
// version, IHL and length checks (so they are set for fragment, ipv6_ext_*,
// truncated_l4, udp, icmp*, other_l4 too); the extra.frag_* fields for every fragment;
// ports once the L4 fixed header fitted (also for udp, and for
// tcp_bad_data_offset); seq/ack/sack/window/tcp_flags/tcp_opt/l4_payload_len for tcp
// (l4_payload_len also for udp); extra.icmp_type/icmp_code for icmp, icmp_error,
// icmp_other and icmp_bad_quote. The key is a flow's identity for tcp, udp, icmp,
// icmp_error (the quoted packet's flow) and other_l4; for fragment it is the flow's
// key without ports. Return value == out.verdict. in_port is not the parser's: parse()
// leaves it 0, and the caller that knows the port sets it (the worker, app/service).
//
// sport/dport are always the key's port fields as this packet's direction sees them,
// so key_endpoints(key, src_is_lo) gives them back: the L4 ports for TCP and UDP; for
// an ICMP query (sport, dport) = (identifier, query type) and for its reply
// (query type, identifier), so that a request and its reply have the same key; for
// an ICMP error, the quoted packet's reversed (the error travels back to the quoted
// packet's sender); 0/0 where the key has no ports.
//
// Decisions (each covered by tests/packet):
// - VLAN: up to max_vlan_tags tags of TPID 0x8100, 0x88a8 or 0x9100 in any order;
//   the first two IDs are kept (key and vlan_outer/inner), further tags are skipped
//   but counted in extra.vlan_tags (a third tag is outside the key, so two links that
//   differ only there share flows; vlan_tags > 2 lets the caller count such packets);
//   one more tag than the limit is vlan_too_deep. See flow_key.h for why VLAN IDs are
//   in the key.
// - Ethernet padding after the IP datagram is fine (frames under 60 bytes are
//   padded): the IP length, not the frame, bounds L4 and gives l4_payload_len.
// - A frame shorter than its IP total length (IPv6: 40 + payload length) is
//   ip_bad_total_length: on a NIC that is a malformed frame. Consequence: replaying a
//   snaplen-truncated capture counts every frame whose datagram was cut as malformed
//   and does not track it - in zeek's truncated SMTP trace that is the SYN (options
//   cut) and every data segment, 12 of 24 frames; the other 12 lost only Ethernet
//   padding and are tracked.
// - Length 0 (Linux BIG TCP / GSO): an IPv4 total length of 0, or an IPv6 payload
//   length of 0, means "length from the frame" ONLY when the L4 protocol is TCP, the
//   datagram is not fragmented and the IP datagram in the frame is longer than 65535
//   bytes (otherwise ip_bad_total_length, or truncated_l4 for an IPv6 payload length
//   of 0 before a TCP header in a short frame). Why: Linux writes 0
//   exactly when a GSO TCP super-packet's length does not fit 16 bits
//   (iph_totlen(), ipv6_payload_len()), and tcpdump reads such frames the same way.
//   TCP has no length field of its own, so the frame is the only length left; UDP
//   and others carry their own length and a 0 there is corruption. Requiring > 65535
//   keeps a zero length in an ordinary (possibly padded) frame malformed, so padding
//   never becomes payload.
// - Fragments: a first fragment (IPv4 offset 0 with MF=1; IPv6 Fragment header with
//   offset 0 and M=1) carries the ports and is parsed like any packet, truncated_l4
//   if the L4 header does not fit in it. Any non-first fragment is `fragment` (no
//   ports). An IPv6 atomic fragment (offset 0, M=0, RFC 6946) is a normal packet and
//   gets no extra.frag_* fields. Every other fragment, first or not, gets frag_flags
//   (kFragmented, kFragMore), frag_id (IPv4's 16-bit identification, IPv6's 32-bit),
//   frag_offset (bytes) and frag_data_len (bytes of the fragmentable part in this
//   fragment), whatever its verdict after that, so lib/fragattr can attribute later
//   fragments to the first one's flow and tell when a datagram is complete.
// - IPv6 extension headers walked: hop-by-hop, routing, destination options,
//   fragment, and AH; ESP, No Next Header and anything else end the walk as
//   other_l4. More than max_ipv6_ext_headers is ipv6_ext_too_long, as is a chain
//   whose headers reach past the first max_header_bytes bytes of the frame.
// - TCP: data offset < 5 or data offset * 4 past the segment end (from IP lengths)
//   is tcp_bad_data_offset. With a data offset above 5 the options are read as netfilter reads
//   them (tcp_options.h: window scale, SACK permitted, the highest SACK right edge) into tcp_opt
//   and sack; sack == ack without SACK blocks. Options that are not all within the first
//   kMaxHeaderBytes bytes (only behind a long IPv6 extension chain) are not read, as if absent.
//   Malformed options are ignored from the first bad one on, never a verdict of their own.
// - ICMP (protocol 1 over IPv4, 58 over IPv6; 1 over IPv6 and 58 over IPv4 are
//   other_l4) needs 8 bytes of header over IPv4 and 4 over IPv6 (RFC 792, 4443).
//   The type decides the class, as netfilter's nf_conntrack_proto_icmp{,v6} do:
//   * queries, tracked by addresses + identifier + query type (netfilter's tuple):
//     ICMPv4 echo 8/0, timestamp 13/14, information 15/16, address mask 17/18;
//     ICMPv6 echo 128/129, node information 139/140 (request/reply). They need 8
//     bytes (the identifier is bytes 4-5), else truncated_l4. icmp_is_request()
//     tells a request, which may start a flow, from a reply, which may not.
//   * errors, icmp_error: ICMPv4 destination unreachable 3, source quench 4,
//     redirect 5, time exceeded 11, parameter problem 12 (netfilter's icmp_is_err);
//     ICMPv6 destination unreachable 1, packet too big 2, time exceeded 3, parameter
//     problem 4. After the 8-byte error header comes the quoted packet: its IP header
//     (IPv4 in ICMPv4, IPv6 in ICMPv6; IPv6 extension headers walked as above) and at
//     least 8 bytes of its L4 header (RFC 792's minimum) when it is TCP, UDP or ICMP,
//     all within the ICMP message and the first kMaxHeaderBytes bytes of the frame.
//     The key is the flow the quoted packet belongs to, built as parse() would build
//     it for that packet (its own total length is not checked: a quote is cut by
//     design); a quoted non-first fragment or another protocol keys by addresses +
//     protocol, a quoted ICMP message that is neither query nor error has no ports.
//     A quote that breaks any of this, or quotes an ICMP error (RFC 1122 3.2.2 and
//     RFC 4443 2.4(e) forbid errors about errors), is icmp_bad_quote. key.proto is
//     the quoted protocol, l4_proto stays 1/58, icmp_type/code are the error's own.
//   * everything else is icmp_other, keyed by addresses (ports 0): never a flow.
// - VLAN key modes (--vlan-key) and zones are applied after parse() by key_policy.h.
// - Speed: the common frame (untagged IPv4 without options, not a fragment, carrying TCP with a valid
//   data offset) takes a straight-line fast path that fills `out` exactly as the general path would
//   (parse_internal.h; tests/packet compares the two on every fuzzed input); every other frame goes
//   through the general path, whose branch order favours untagged IPv4 then TCP.
#pragma once

#include <cstddef>
#include <cstdint>

#include <packet/flow_key.h>
#include <packet/tcp_options.h>
#include <packet/verdict.h>

#include <rte_tcp.h> // header-only: the flag bits below, no EAL

namespace flowcop::packet {

// One more tag than the two a key keeps: 802.1ad QinQ is two tags, and a third
// shows up in real provider networks (zeek's vlan-qinqinq trace). A fourth is
// allowed as slack; five stacked tags have no known deployment and only bound the loop.
inline constexpr unsigned kMaxVlanTags = 4;
inline constexpr unsigned kKeyVlanTags = 2;

// RFC 8200 4.1's recommended order has at most six walkable headers (hop-by-hop,
// destination, routing, fragment, AH, destination); 8 admits every legitimate
// chain with room to spare while bounding per-packet work (RFC 7045, 8504).
inline constexpr unsigned kMaxIpv6ExtHeaders = 8;

// Header bytes the parser ever looks at, and what parse_mbuf() copies when the
// first segment is short. The deepest IPv4/TCP header stack is 14 + 4*4 + 60 + 60 =
// 150 bytes; IPv6/TCP with the maximal TCP header leaves 126 bytes of extension
// headers (hop-by-hop 8 + routing 24 + fragment 8 + AH 24 + destination 8 = 72 is
// a generous real chain). Applying the cap in the core, whatever the entry point,
// keeps a frame's classification independent of how the NIC segmented it.
inline constexpr uint32_t kMaxHeaderBytes = 256;

struct Packet {
    FlowKey key;
    uint16_t in_port; // the DPDK port the frame arrived on (set by the caller; 0 from parse())
    // The IP packet's length, what byte counters count (RFC 7012 octetDeltaCount): IPv4's total length,
    // IPv6's 40 + payload length (from the frame for BIG TCP); a fragment's own. Ethernet and VLAN
    // headers and padding are not in it (IPFIX derives frame bytes from it: lib/ipfix/ipfix.md). 0 when
    // not IP. The frame's length is not kept: nothing counts it per flow.
    uint32_t ip_len;
    uint32_t l4_payload_len; // TCP payload bytes (from IP lengths, minus TCP header); UDP: minus 8
    uint32_t seq, ack;       // host order
    uint32_t sack;           // highest SACK right edge in the options, else == ack (tcp_options.h)
    uint16_t window;         // as on the wire (unscaled)
    uint16_t sport, dport;   // host order: the key's port fields from this packet's side (see above)
    uint16_t vlan_outer, vlan_inner;
    uint8_t tcp_flags;  // FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10 URG=0x20 ECE=0x40 CWR=0x80
    uint8_t ip_version; // 4 or 6 (0 if not IP)
    uint8_t l4_proto;   // the IP payload's protocol (1/58 for every ICMP class)
    bool src_is_lo;     // the packet's source is key.addr_lo/port_lo (for direction)
    Verdict verdict;
    uint8_t tcp_opt; // kTcpOpt* bits and the window scale (tcp_options.h); 0 without options
    // Non-TCP protocols and fragments (all 0 when they do not apply), one group that the fast path
    // zeroes with two stores: a memset of the whole Packet past ~80 bytes becomes `rep stos`,
    // which costs the common frame ~10 instructions and a microcoded start-up.
    struct Extra {
        uint8_t icmp_type, icmp_code; // the ICMP/ICMPv6 message's own type and code
        uint8_t vlan_tags;            // VLAN tags seen (0..kMaxVlanTags); only kKeyVlanTags are keyed
        uint8_t frag_flags;           // kFragmented | kFragMore; 0 when not a fragment (nor atomic)
        uint16_t frag_offset;         // this fragment's offset in the datagram, bytes
        uint16_t frag_data_len;       // bytes of the datagram's fragmentable part in this fragment
        uint32_t frag_id;             // IPv4 identification or IPv6 fragment identification
    } extra;
};
static_assert(sizeof(Packet::Extra) == 12, "no padding inside the protocol group");
static_assert(offsetof(Packet, extra) + sizeof(Packet::Extra) == sizeof(Packet), "nothing after the group");
static_assert(offsetof(Packet, in_port) == sizeof(FlowKey) && offsetof(Packet, ip_len) == sizeof(FlowKey) + 2,
              "in_port fills what was padding between the key and ip_len: a Packet is no larger for it");

// Packet::Extra::frag_flags bits.
inline constexpr uint8_t kFragmented = 0x01; // one fragment of a larger datagram, first or not
inline constexpr uint8_t kFragMore = 0x02;   // more fragments follow (IPv4 MF, IPv6 M)
// Set by the caller, never by parse(): a later fragment (verdict fragment) whose key's ports are now its
// flow's (lib/fragattr found its first fragment), so the flow table counts it on that flow.
inline constexpr uint8_t kFragAttributed = 0x04;

// True for an ICMP/ICMPv6 query request (echo request, ...): the only ICMP packet that may start a
// flow. Replies, errors and others may not. Meaningful for Verdict::icmp.
bool icmp_is_request(const Packet& p) noexcept;

// TCP flag bits as in Packet::tcp_flags (byte 13 of the TCP header): DPDK's, the one definition
// flowcop's libraries, driver and tests use.
inline constexpr uint8_t kTcpFin = RTE_TCP_FIN_FLAG, kTcpSyn = RTE_TCP_SYN_FLAG, kTcpRst = RTE_TCP_RST_FLAG,
                         kTcpPsh = RTE_TCP_PSH_FLAG, kTcpAck = RTE_TCP_ACK_FLAG, kTcpUrg = RTE_TCP_URG_FLAG,
                         kTcpEce = RTE_TCP_ECE_FLAG, kTcpCwr = RTE_TCP_CWR_FLAG;

// Plain byte span entry point (tests, fuzzing): the whole frame is in memory.
// Fills `out` as far as it got; returns out.verdict. frame may be nullptr when len is 0.
Verdict parse(const uint8_t* frame, uint32_t len, Packet& out) noexcept;

// The parse core, for entries that hold only the front of a frame (parse_mbuf()).
// `hdr` holds the first hdr_len bytes of a frame of frame_len bytes.
// Precondition: hdr_len >= min(frame_len, max_header_bytes), i.e. the front of the
// frame up to the cap is present. If fewer bytes are given, a header past hdr_len is
// classified as truncated at its layer. Lengths (IP total length against the frame,
// l4_payload_len, BIG TCP) use frame_len.
Verdict parse(const uint8_t* hdr, uint32_t hdr_len, uint32_t frame_len, Packet& out) noexcept;

} // namespace flowcop::packet
