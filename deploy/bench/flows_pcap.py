# SPDX-License-Identifier: BSD-3-Clause
"""Writes a pcap of N established TCP flows (or TCP and UDP) for the packet-rate benchmark.

The capture is one loop of steady-state traffic, meant to be replayed with DPDK's pcap vdev and
infinite_rx=1: every frame is a 60-byte PSH|ACK data segment (Ethernet + IPv4 + TCP, 6 bytes of
payload, correct checksums) of one of N flows, and there are no handshakes, so a replayed loop never
repeats a SYN. A tracker picks each flow up from its first segment (flowcop's --loose-pickup on, the
default) in ESTABLISHED state and from then on sees plain in-state segments: the per-packet path of
established traffic.

The capture is `passes` rounds; each round carries one segment of every flow, in an order drawn
afresh per round (fixed seed), client->server in even rounds and server->client in odd ones. Why
more than one round: a flow table hands out record positions in creation order, so if every round
had the creation order, records and keys would be read sequentially, which a hardware prefetcher
hides; with 2 rounds, half the packets reach their flow in an order unrelated to where it is stored,
as on a real link. Flow keys are distinct for up to 2^24 flows (a bijection onto 10.0.0.0/8).

With --udp-share F, a share F of the flows (chosen by a hash of the flow's number, spread through the
capture) are UDP request/response flows instead: every frame of one is a 60-byte datagram (18 bytes
of payload) to or from a DNS, QUIC, NTP or syslog port, requests in even rounds and responses in odd
ones, so from the second round on each is replied, and after 2 s (netfilter's rule, issue 15) a
stream flow: the per-packet path of established UDP. Frame size and count are the TCP capture's, so
the two captures cost a reader (testpmd rxonly) the same.
"""

import argparse
import random
import struct
import sys

FRAME_LEN = 60
PAYLOAD = b"flowcp"  # 14 + 20 + 20 + 6 = 60 bytes: the minimum Ethernet frame without FCS
CLIENT_MAC = bytes.fromhex("026667000001")
SERVER_MAC = bytes.fromhex("026667000002")
SERVER_PORTS = (443, 80, 8080, 22)
UDP_PAYLOAD = b"flowcop-udp-reqres"  # 14 + 20 + 8 + 18 = 60 bytes, as the TCP frames
UDP_SERVER_PORTS = (53, 443, 123, 514)


def _fold(s):
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def _sum16(data):
    return sum(struct.unpack("!%dH" % (len(data) // 2), data))


def flow_endpoints(i):
    """Client and server (address, port) of flow i; distinct clients for i < 2^24."""
    c = (i * 2654435761) & 0xFFFFFF  # odd multiplier: a bijection on 24 bits
    client_ip = (10 << 24) | c
    client_port = 1024 + (i * 40503) % 64000
    s = i % 4096
    server_ip = (172 << 24) | (16 << 16) | s
    server_port = SERVER_PORTS[i % len(SERVER_PORTS)]
    return client_ip, client_port, server_ip, server_port


def is_udp(i, udp_share):
    """Whether flow i is a UDP flow at this share: a multiplicative hash of i against the share, so
    the UDP flows are spread evenly through the flow numbers (and the capture's random order)."""
    return ((i * 2246822519) & 0xFFFFFFFF) < udp_share * 2**32


def udp_flow_count(flows, udp_share):
    return sum(1 for i in range(flows) if is_udp(i, udp_share)) if udp_share > 0 else 0


def udp_frame(src_ip, sport, dst_ip, dport, to_server):
    ip_total = 20 + 8 + len(UDP_PAYLOAD)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, ip_total, 0, 0x4000, 64, 17, 0, src_ip, dst_ip)
    ip_csum = 0xFFFF - _fold(_sum16(ip))
    ip = ip[:10] + struct.pack("!H", ip_csum) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, 8 + len(UDP_PAYLOAD), 0) + UDP_PAYLOAD
    pseudo = struct.pack("!IIBBH", src_ip, dst_ip, 0, 17, len(udp))
    udp_csum = (0xFFFF - _fold(_sum16(pseudo) + _sum16(udp))) or 0xFFFF  # 0 means "no checksum" in UDP
    udp = udp[:6] + struct.pack("!H", udp_csum) + udp[8:]
    eth = (SERVER_MAC + CLIENT_MAC) if to_server else (CLIENT_MAC + SERVER_MAC)
    return eth + b"\x08\x00" + ip + udp


def frame(src_ip, sport, dst_ip, dport, seq, ack, to_server):
    ip_total = 20 + 20 + len(PAYLOAD)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, ip_total, 0, 0x4000, 64, 6, 0, src_ip, dst_ip)
    ip_csum = 0xFFFF - _fold(_sum16(ip))
    ip = ip[:10] + struct.pack("!H", ip_csum) + ip[12:]
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, 0x18, 65535, 0, 0) + PAYLOAD
    pseudo = struct.pack("!IIBBH", src_ip, dst_ip, 0, 6, len(tcp))
    tcp_csum = 0xFFFF - _fold(_sum16(pseudo) + _sum16(tcp))
    tcp = tcp[:16] + struct.pack("!H", tcp_csum) + tcp[18:]
    eth = (SERVER_MAC + CLIENT_MAC) if to_server else (CLIENT_MAC + SERVER_MAC)
    return eth + b"\x08\x00" + ip + tcp


def tcp_frame(src_ip, sport, dst_ip, dport, seq, ack, flags, payload, to_server):
    """An Ethernet + IPv4 + TCP frame with correct checksums, padded to the 60-byte minimum."""
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack("!H", 0xFFFF - _fold(_sum16(ip))) + ip[12:]
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    pseudo = struct.pack("!IIBBH", src_ip, dst_ip, 0, 6, len(tcp))
    body = tcp + (b"\0" if len(tcp) % 2 else b"")
    tcp = tcp[:16] + struct.pack("!H", 0xFFFF - _fold(_sum16(pseudo) + _sum16(body))) + tcp[18:]
    eth = (SERVER_MAC + CLIENT_MAC) if to_server else (CLIENT_MAC + SERVER_MAC)
    fr = eth + b"\x08\x00" + ip + tcp
    return fr + b"\0" * max(0, FRAME_LEN - len(fr))


CHURN_FRAMES = 8  # frames of one short connection (write_churn)


CHURN_FRAMES = 8  # frames of one write_churn connection


def write_churn(path, connections):
    """A churn of short TCP connections, one after another: each a handshake, a 6-byte request and its
    6-byte answer, and both FINs acknowledged (8 frames), leaving the flow assured in TIME_WAIT. Replayed
    with infinite_rx through a table smaller than `connections`, every SYN meets a full table of closing
    flows (the early-drop path, issue 27); keys are flow_endpoints(i). Returns the frames written."""
    rec = struct.Struct("<IIII")
    n = 0
    with open(path, "wb", buffering=1 << 22) as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(connections):
            cip, cport, sip, sport = flow_endpoints(i)
            cs, ss = (i * 7919 + 1) & 0xFFFFFFFF, (i * 104729 + 7) & 0xFFFFFFFF
            p = len(PAYLOAD)
            steps = [(True, 0x02, cs, 0, b""), (False, 0x12, ss, cs + 1, b""), (True, 0x10, cs + 1, ss + 1, b""),
                     (True, 0x18, cs + 1, ss + 1, PAYLOAD), (False, 0x18, ss + 1, cs + 1 + p, PAYLOAD),
                     (True, 0x11, cs + 1 + p, ss + 1 + p, b""), (False, 0x11, ss + 1 + p, cs + 2 + p, b""),
                     (True, 0x10, cs + 2 + p, ss + 2 + p, b"")]
            for to_server, flags, seq, ack, payload in steps:
                fr = (tcp_frame(cip, cport, sip, sport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, flags, payload, True)
                      if to_server else
                      tcp_frame(sip, sport, cip, cport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, flags, payload, False))
                f.write(rec.pack(1700000000 + n // 1000000, n % 1000000, len(fr), len(fr)))
                f.write(fr)
                n += 1
    return n


def write(path, flows, passes, seed, udp_share=0.0):
    rng = random.Random(seed)
    order = list(range(flows))
    rec = struct.Struct("<IIII")
    n = 0
    with open(path, "wb", buffering=1 << 22) as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # pcap, microseconds, Ethernet
        for p in range(passes):
            rng.shuffle(order)
            to_server = p % 2 == 0
            for i in order:
                cip, cport, sip, sport = flow_endpoints(i)
                if udp_share > 0 and is_udp(i, udp_share):
                    sport = UDP_SERVER_PORTS[i % len(UDP_SERVER_PORTS)]
                    fr = (udp_frame(cip, cport, sip, sport, True) if to_server
                          else udp_frame(sip, sport, cip, cport, False))
                    f.write(rec.pack(1700000000 + n // 1000000, n % 1000000, FRAME_LEN, FRAME_LEN))
                    f.write(fr)
                    n += 1
                    continue
                cseq = (i * 7919 + 1) & 0xFFFFFFFF
                sseq = (i * 104729 + 7) & 0xFFFFFFFF
                if to_server:
                    fr = frame(cip, cport, sip, sport, cseq, sseq, True)
                else:
                    fr = frame(sip, sport, cip, cport, sseq, cseq, False)
                f.write(rec.pack(1700000000 + n // 1000000, n % 1000000, FRAME_LEN, FRAME_LEN))
                f.write(fr)
                n += 1
    return n


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, required=True, help="concurrent flows, 1..16777216")
    ap.add_argument("--passes", type=int, default=2, help="rounds over all flows (default 2)")
    ap.add_argument("--seed", type=int, default=20240601, help="order seed (default 20240601)")
    ap.add_argument("--udp-share", type=float, default=0.0,
                    help="share of the flows that are UDP request/response flows, 0..1 (default 0: all TCP)")
    ap.add_argument("out", help="pcap file to write")
    a = ap.parse_args(argv)
    if not 1 <= a.flows <= 1 << 24:
        ap.error("--flows must be in 1..16777216 (client addresses are a bijection onto 24 bits)")
    if a.passes < 1:
        ap.error("--passes must be at least 1")
    if not 0.0 <= a.udp_share <= 1.0:
        ap.error("--udp-share must be in 0..1")
    n = write(a.out, a.flows, a.passes, a.seed, a.udp_share)
    print("%s: %d frames, %d flows (%d UDP) x %d passes" % (a.out, n, a.flows, udp_flow_count(a.flows, a.udp_share),
                                                            a.passes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
