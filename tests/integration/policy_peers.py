#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Helpers test_policy_veth.py runs inside a network namespace (`ip netns exec NS python3 ...`).

  watch IFACE HOST PORT LPORT
        connect from local port LPORT to HOST:PORT and keep the connection open; print
        {"rcv_nxt": N, "snd_nxt": M} once the handshake is seen on IFACE (the peer's next sequence number
        and ours, from the SYN-ACK an AF_PACKET socket caught). Then, until a line arrives on stdin (at most
        30 s), record every TCP frame from HOST:PORT to LPORT with RST set and every ICMP frame that arrives
        on IFACE; then try the connection (send, recv: a reset shows as ECONNRESET) and print
        {"rsts": [seq, ...], "icmp": [[type, code], ...], "reset": bool}.
  rst SRC SPORT DST DPORT SEQ
        send one TCP RST|ACK with sequence number SEQ from SRC:SPORT to DST:DPORT through a raw socket
        (a spoofed segment: no socket of this namespace owns that connection's state).
  fragneeded SRC DST QSRC QSPORT QDST QDPORT QSEQ MTU
        send one ICMP destination unreachable, fragmentation needed (type 3 code 4, next-hop MTU MTU) from
        SRC to DST quoting a TCP segment QSRC:QSPORT -> QDST:QDPORT with sequence QSEQ.
  synflood SRC DST FIRST_PORT COUNT
        send COUNT SYNs from SRC to DST's ports FIRST_PORT.. (one each, source ports 30000..), paced to
        1000 a 50 ms so the af_packet rings between the namespaces do not overflow.
Only the namespaces the test made see any of this.
"""

import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ip_header(src, dst, proto, payload_len):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, 0x4242, 0, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", checksum(h)) + h[12:]


def tcp_segment(src, sport, dst, dport, seq, ack, flags):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 0, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    return tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]


def send_raw(dst, datagram):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.sendto(datagram, (dst, 0))
    s.close()


def rst(src, sport, dst, dport, seq):
    tcp = tcp_segment(src, sport, dst, dport, seq, 0, 0x14)  # RST|ACK
    send_raw(dst, ip_header(src, dst, 6, len(tcp)) + tcp)


def fragneeded(src, dst, qsrc, qsport, qdst, qdport, qseq, mtu):
    quoted_tcp = tcp_segment(qsrc, qsport, qdst, qdport, qseq, 0, 0x18)[:8]
    quoted = ip_header(qsrc, qdst, 6, 20 + 1000)[:20] + quoted_tcp  # the quoted packet was 1040 bytes
    icmp = struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + quoted
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    send_raw(dst, ip_header(src, dst, 1, len(icmp)) + icmp)


def synflood(src, dst, first, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    for i in range(count):
        tcp = tcp_segment(src, 30000 + i % 30000, dst, first + i, 1000 + i, 0, 0x02)
        s.sendto(ip_header(src, dst, 6, len(tcp)) + tcp, (dst, 0))
        if i % 1000 == 999:
            time.sleep(0.05)
    s.close()


def watch(iface, host, port, lport):
    ps = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    ps.bind((iface, 0))
    ps.settimeout(0.2)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", lport))
    s.settimeout(10)
    s.connect((host, port))
    hp = socket.inet_aton(host)
    rcv_nxt = snd_nxt = None
    rsts, icmp = [], []

    def frame(data, direction):
        nonlocal rcv_nxt, snd_nxt
        if len(data) < 34 or data[12:14] != b"\x08\x00":
            return
        ip = data[14:]
        ihl = (ip[0] & 0xF) * 4
        if ip[9] == 1 and direction != PACKET_OUTGOING:
            icmp.append([ip[ihl], ip[ihl + 1]])
            return
        if ip[9] != 6 or ip[12:16] != hp:
            return
        sp, dp, seq, ack = struct.unpack("!HHII", ip[ihl:ihl + 12])
        flags = ip[ihl + 13]
        if sp != port or dp != lport:
            return
        if flags & 0x12 == 0x12 and rcv_nxt is None:
            rcv_nxt, snd_nxt = (seq + 1) & 0xFFFFFFFF, ack
        elif flags & 0x04:
            rsts.append(seq)

    deadline = time.monotonic() + 5
    while rcv_nxt is None and time.monotonic() < deadline:
        try:
            data, addr = ps.recvfrom(65535)
            frame(data, addr[2])
        except socket.timeout:
            pass
    print(json.dumps({"rcv_nxt": rcv_nxt, "snd_nxt": snd_nxt}), flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r, _, _ = select.select([ps, sys.stdin], [], [], 0.2)
        if sys.stdin in r:
            sys.stdin.readline()
            break
        if ps in r:
            data, addr = ps.recvfrom(65535)
            frame(data, addr[2])
    reset = False
    try:
        s.settimeout(1)
        s.send(b"GET / HTTP/1.0\r\n\r\n")
        s.recv(1)
    except ConnectionResetError:
        reset = True
    except OSError:
        pass
    print(json.dumps({"rsts": rsts, "icmp": icmp, "reset": reset}), flush=True)


if __name__ == "__main__":
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "watch":
        watch(a[0], a[1], int(a[2]), int(a[3]))
    elif cmd == "rst":
        rst(a[0], int(a[1]), a[2], int(a[3]), int(a[4]))
    elif cmd == "synflood":
        synflood(a[0], a[1], int(a[2]), int(a[3]))
    elif cmd == "fragneeded":
        fragneeded(a[0], a[1], a[2], int(a[3]), a[4], int(a[5]), int(a[6]), int(a[7]))
    else:
        sys.exit("unknown command " + cmd)
