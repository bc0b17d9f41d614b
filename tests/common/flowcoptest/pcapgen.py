# SPDX-License-Identifier: BSD-3-Clause
"""A synthetic capture whose every count is known in advance (stdlib only).

The metrics and telemetry tests replay it through DPDK's pcap vdev and compare
what flowcop exports with EXPECTED below, so a counter that is wired to the
wrong field, double-counted or dropped shows up as a wrong number, not just a
missing name. The capture has, in this order (one packet every 10 us from T0):

  * ESTABLISHED_V4 IPv4 flows and ESTABLISHED_V6 IPv6 flows on VLAN 100 that
    complete the handshake, carry data and never close (they stay open for the
    kill and set tests under --clock tsc);
  * CLOSED flows that finish a FIN exchange (TIME_WAIT, 120 s);
  * RESET flows ended by an RST;
  * HALF_OPEN flows that never get past SYN (SYN_SENT, 120 s);
  * one SYN-ACK from the originator of an established flow (invalid for its state),
    stray RSTs and flag-less segments of unknown flows (they cannot start a flow);
  * well-formed traffic of the other protocols: a UDP flow (3 datagrams, unreplied), an echo flow
    (2 requests), an ICMP error quoting the UDP flow (related), a GRE flow (generic, 600 s); and
    what nothing tracks: ARP, a router solicitation, a non-first fragment whose first never comes;
  * one frame of every malformed class the parser names;
  * a last UDP packet at T0 + 300 s, which moves the packet clock past every
    120 s deadline so that, under --clock packet, the final state is exact: the cop
    reaps the UDP and echo flows (30 s) and that packet starts a second UDP flow.
"""
import struct

from . import pcaplib

T0 = 1_700_000_000  # seconds, Unix time of the first packet

ESTABLISHED_V4 = 6
ESTABLISHED_V6 = 4
CLOSED = 3
RESET = 5
HALF_OPEN = 7
STRAY_RST = 2
NO_FLAGS = 1

MAC_A = bytes.fromhex("020000000001")
MAC_B = bytes.fromhex("020000000002")
ETH_IPV4, ETH_IPV6, ETH_ARP, ETH_VLAN = pcaplib.ETH_IPV4, pcaplib.ETH_IPV6, pcaplib.ETH_ARP, pcaplib.TPID_8021Q
FIN, SYN, RST, PSH, ACK = pcaplib.FIN, pcaplib.SYN, pcaplib.RST, pcaplib.PSH, pcaplib.ACK

V4_CLIENT, V4_SERVER = "10.0.0.1", "10.0.1.1"
V6_CLIENT, V6_SERVER = "2001:db8:1111:2222:3333:4444:5555:1", "2001:db8:1111:2222:3333:4444:5555:2"
VLAN = 100


def v4_tuple(i):
    """(client, cport, server, sport) of established IPv4 flow i."""
    return V4_CLIENT, 40000 + i, V4_SERVER, 80


def v6_tuple(i):
    return V6_CLIENT, 41000 + i, V6_SERVER, 443


# The frames are pcaplib's, with this capture's fixed choices: every tag 802.1Q, no DF bit, no
# padding to 60 bytes, and TCP segments numbered as real stacks number them (flowcop checks each
# against its flow's window, as netfilter does): a connection's first sender starts at sequence
# 1000, the other end at 2000, each advances by its payload, SYN and FIN, and an ACK acknowledges
# everything the other end sent. Segments outside a connection (the malformed class) carry 1000/2000.
_next_seq = {}


def _numbered(src, sport, dst, dport, flags, data):
    """(seq, ack) of the next segment from src:sport to dst:dport, and advances that direction."""
    fwd, rev = (src, sport, dst, dport), (dst, dport, src, sport)
    if fwd not in _next_seq:
        _next_seq[fwd] = 2000 if rev in _next_seq else 1000
    seq = _next_seq[fwd]
    ack = _next_seq.get(rev, 2000)
    _next_seq[fwd] = seq + len(data) + (1 if flags & SYN else 0) + (1 if flags & FIN else 0)
    return seq, ack
def eth(payload, ethertype, vlans=()):
    return pcaplib.ether(payload, ethertype, vlans, src=MAC_B, dst=MAC_A, tpids=[ETH_VLAN] * len(vlans))


def ipv4(src, dst, proto, payload, frag=0, total=None, ver_ihl=0x45):
    return pcaplib.ipv4(src, dst, proto, payload, total_length=total, ihl=ver_ihl & 0xF, flags_frag=frag,
                        version=ver_ihl >> 4)


def ipv6(src, dst, nh, payload, plen=None):
    return pcaplib.ipv6(src, dst, nh, payload, payload_length=plen)


def tcp(src, dst, sport, dport, flags, data=b"", offset_words=5, seq=1000, ack=2000):
    return pcaplib.tcp_segment(src, dst, sport, dport, flags, seq=seq, ack=ack, payload=data,
                               data_offset=offset_words)


def tcp4(src, sport, dst, dport, flags, data=b""):
    seq, ack = _numbered(src, sport, dst, dport, flags, data)
    return eth(ipv4(src, dst, 6, tcp(src, dst, sport, dport, flags, data, seq=seq, ack=ack)), ETH_IPV4)


def tcp6(src, sport, dst, dport, flags, data=b""):
    seq, ack = _numbered(src, sport, dst, dport, flags, data)
    return eth(ipv6(src, dst, 6, tcp(src, dst, sport, dport, flags, data, seq=seq, ack=ack)), ETH_IPV6,
               vlans=(VLAN,))


def udp4(src, dst, sport=5353, dport=53):
    return eth(ipv4(src, dst, 17, struct.pack("!HHHH", sport, dport, 12, 0) + b"abcd"), ETH_IPV4)


def _handshake(mk, c, cp, s, sp):
    return [mk(c, cp, s, sp, SYN), mk(s, sp, c, cp, SYN | ACK), mk(c, cp, s, sp, ACK)]


def _malformed():
    """One frame per malformed verdict, keyed by the verdict's exported name."""
    ok_tcp = tcp("10.9.0.1", "10.9.0.2", 1, 2, ACK)
    v6 = (V6_CLIENT, V6_SERVER)
    ext = lambda nh: bytes([nh, 0]) + b"\0" * 6  # an 8-byte destination-options header
    chain = b"".join(ext(60) for _ in range(8)) + ext(6) + ok_tcp  # 9 extension headers
    return {
        "truncated_l2": (MAC_A + MAC_B)[:10],
        "truncated_l3": eth(b"\x45" + b"\0" * 9, ETH_IPV4),
        "truncated_l4": eth(ipv4("10.9.0.1", "10.9.0.2", 6, b"\0" * 10), ETH_IPV4),
        "ip_bad_version": eth(ipv4("10.9.0.1", "10.9.0.2", 6, ok_tcp, ver_ihl=0x55), ETH_IPV4),
        "ipv4_bad_ihl": eth(ipv4("10.9.0.1", "10.9.0.2", 6, ok_tcp, ver_ihl=0x44), ETH_IPV4),
        "ip_bad_total_length": eth(ipv4("10.9.0.1", "10.9.0.2", 6, ok_tcp, total=1000), ETH_IPV4),
        "ipv6_ext_truncated": eth(ipv6(*v6, 0, b"\0" * 4), ETH_IPV6),
        "ipv6_ext_too_long": eth(ipv6(*v6, 60, chain), ETH_IPV6),
        "tcp_bad_data_offset": eth(ipv4("10.9.0.1", "10.9.0.2", 6, tcp("10.9.0.1", "10.9.0.2", 1, 2, ACK, offset_words=4)), ETH_IPV4),
        "vlan_too_deep": eth(ipv4("10.9.0.1", "10.9.0.2", 6, ok_tcp), ETH_IPV4, vlans=(1, 2, 3, 4, 5)),
        # A time exceeded quoting 4 bytes of TCP (8 are required).
        "icmp_bad_quote": eth(ipv4("10.9.0.2", "10.9.0.1", 1, b"\x0b\0\0\0\0\0\0\0" +
                                   ipv4("10.9.0.1", "10.9.0.2", 6, ok_tcp)[:24]), ETH_IPV4),
    }


def frames():
    """The capture as a list of (time in microseconds, frame bytes)."""
    _next_seq.clear()
    out = []
    for i in range(ESTABLISHED_V4):
        c, cp, s, sp = v4_tuple(i)
        out += _handshake(tcp4, c, cp, s, sp)
        out += [tcp4(c, cp, s, sp, PSH | ACK, b"GET / HTTP/1.0\r\n\r\n"), tcp4(s, sp, c, cp, ACK)]
    for i in range(ESTABLISHED_V6):
        c, cp, s, sp = v6_tuple(i)
        out += _handshake(tcp6, c, cp, s, sp)
        out += [tcp6(c, cp, s, sp, PSH | ACK, b"hello"), tcp6(s, sp, c, cp, ACK)]
    for i in range(CLOSED):
        c, cp, s, sp = "10.0.0.2", 42000 + i, V4_SERVER, 21
        out += _handshake(tcp4, c, cp, s, sp)
        out += [tcp4(c, cp, s, sp, FIN | ACK), tcp4(s, sp, c, cp, ACK), tcp4(s, sp, c, cp, FIN | ACK),
                tcp4(c, cp, s, sp, ACK)]
    for i in range(RESET):
        c, cp, s, sp = "10.0.0.3", 43000 + i, V4_SERVER, 22
        out += [tcp4(c, cp, s, sp, SYN), tcp4(s, sp, c, cp, SYN | ACK), tcp4(c, cp, s, sp, RST)]
    for i in range(HALF_OPEN):
        out.append(tcp4("10.0.0.4", 44000 + i, V4_SERVER, 25, SYN))
    c, cp, s, sp = v4_tuple(0)
    out.append(tcp4(c, cp, s, sp, SYN | ACK))  # orig sends a SYN-ACK: invalid in ESTABLISHED
    for i in range(STRAY_RST):
        out.append(tcp4("10.0.0.5", 45000 + i, V4_SERVER, 80, RST))
    for i in range(NO_FLAGS):
        out.append(tcp4("10.0.0.6", 46000 + i, V4_SERVER, 80, 0))
    out += [eth(b"\0\1\x08\0\6\4\0\1" + b"\0" * 20, ETH_ARP)] * 2
    out += [udp4("10.0.0.7", "10.0.0.8")] * 3
    out += [eth(ipv4("10.0.0.7", "10.0.0.8", 1, b"\x08\0\0\0\0\0\0\0"), ETH_IPV4)] * 2
    # A port unreachable quoting the UDP flow, and a router solicitation.
    out.append(eth(ipv4("10.0.0.8", "10.0.0.7", 1, b"\x03\x03\0\0\0\0\0\0" + udp4("10.0.0.7", "10.0.0.8")[14:42]),
                   ETH_IPV4))
    out.append(eth(ipv4("10.0.0.7", "10.0.0.8", 1, b"\x0a\0\0\0\0\0\0\0"), ETH_IPV4))
    out.append(eth(ipv4("10.0.0.7", "10.0.0.8", 17, b"\0" * 16, frag=100), ETH_IPV4))
    out.append(eth(ipv4("10.0.0.7", "10.0.0.8", 47, b"\0" * 8), ETH_IPV4))
    out += list(_malformed().values())
    timed = [(T0 * 1_000_000 + 10 * n, f) for n, f in enumerate(out)]
    timed.append(((T0 + 300) * 1_000_000, udp4("10.0.0.7", "10.0.0.8")))
    return timed


def _count_packets():
    flows_tcp = (ESTABLISHED_V4 + ESTABLISHED_V6) * 5 + CLOSED * 7 + RESET * 3 + HALF_OPEN
    results = {
        "tracked": flows_tcp,
        "tcp_invalid_for_state": 1,
        "tcp_no_flow": STRAY_RST + NO_FLAGS,
        "tcp_table_full": 0,
        "tcp_out_of_window": 0,  # every segment is numbered as a real stack numbers it
        "udp": 3 + 1,
        "icmp": 2,
        "icmp_error": 1,
        "icmp_other": 1,
        "other_l4": 1,
        "non_ip": 2,
        "fragment": 1,
    }
    results.update({name: 1 for name in _malformed()})
    return results


# The flows of the other protocols (issue 15): the UDP flow, the echo flow, the GRE flow.
OTHER_FLOWS = 3

# What flowcop must report after replaying the capture with --clock packet (one lcore).
EXPECTED = {
    "packets": _count_packets(),
    # TCP, the three other flows, and the second UDP flow the last packet starts.
    "created": ESTABLISHED_V4 + ESTABLISHED_V6 + CLOSED + RESET + HALF_OPEN + OTHER_FLOWS + 1,
    "created_tcp": ESTABLISHED_V4 + ESTABLISHED_V6 + CLOSED + RESET + HALF_OPEN,
    "expired": {"closed": CLOSED, "reset": RESET, "inactivity": HALF_OPEN + 2},
    "active": ESTABLISHED_V4 + ESTABLISHED_V6 + 2,  # and the GRE flow and the second UDP flow
    # Deadlines passed by the jump to T0 + 300 s: TIME_WAIT and SYN_SENT flows (120 s), the UDP and
    # echo flows (30 s).
    "lagged": CLOSED + HALF_OPEN + 2,
}


def write(path):
    """Writes the capture (classic pcap, microsecond timestamps, Ethernet) and returns its packet count."""
    recs = frames()
    pcaplib.write_pcap(path, recs, snaplen=65535)
    return len(recs)


if __name__ == "__main__":  # cd tests/common && python3 -m flowcoptest.pcapgen FILE.pcap
    import sys
    print(write(sys.argv[1]), "packets")
