# SPDX-License-Identifier: BSD-3-Clause
"""Crafted conversations for the differential test (test_netfilter_diff.py): each puts one of window
tracking's rules in front of Linux's conntrack and of the model, on its own 4-tuple. Plain IPv4/TCP
frames (valid IP checksums, TCP checksums left 0: the test turns conntrack's checksum check off).
"""
import struct

MSS, SACK_PERM, WSCALE = b"\x02\x04\x05\xb4", b"\x04\x02", 3


def tcp_frame(src, dst, sport, dport, seq, ack, flags, win=65535, payload=0, opts=b""):
    opts += b"\x00" * (-len(opts) % 4)
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      (5 + len(opts) // 4) << 4, flags, win, 0, 0) + opts + b"\xab" * payload
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0,
                               bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))))
    csum = sum(struct.unpack(">10H", bytes(ip)))
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip[10:12] = struct.pack(">H", ~csum & 0xFFFF)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + bytes(ip) + tcp


class Conn:
    """A client 10.9.0.1:port and a server 10.9.1.1:80 whose segments number themselves."""

    def __init__(self, frames, port, c_isn=1000000, s_isn=5000000):
        self.f, self.port = frames, port
        self.nxt = {"c": c_isn, "s": s_isn}
        self.rcv = {"c": 0, "s": 0}

    def raw(self, who, seq, ack, flags, win=65535, payload=0, opts=b""):
        a, b = ("10.9.0.1", "10.9.1.1") if who == "c" else ("10.9.1.1", "10.9.0.1")
        pa, pb = (self.port, 80) if who == "c" else (80, self.port)
        self.f.append(tcp_frame(a, b, pa, pb, seq, ack, flags, win, payload, opts))

    def send(self, who, flags, payload=0, win=65535, opts=b""):
        peer = "s" if who == "c" else "c"
        seq = self.nxt[who]
        self.raw(who, seq, self.rcv[who] if flags & 0x10 else 0, flags, win, payload, opts)
        self.nxt[who] = seq + payload + (1 if flags & 0x03 else 0)
        self.rcv[peer] = self.nxt[who]

    def handshake(self, c_opts=b"", s_opts=b""):
        self.send("c", 0x02, opts=c_opts)
        self.send("s", 0x12, opts=s_opts)
        self.send("c", 0x10)


def frames():
    f = []
    # Out-of-window segments of every kind against a live flow, which stays ESTABLISHED.
    c = Conn(f, 40001)
    c.handshake()
    c.send("c", 0x18, 500)
    c.send("s", 0x18, 300)
    c.send("c", 0x10)
    c.raw("c", c.nxt["c"] + 200000, c.rcv["c"], 0x18, payload=10)   # seq_above_window
    c.raw("c", c.nxt["c"] + 70000, c.rcv["c"], 0x18, payload=10)    # seq_overshoot
    c.raw("c", c.nxt["c"] - 70000, c.rcv["c"], 0x18, payload=10)    # seq_below_window (old duplicate)
    c.raw("c", c.nxt["c"], c.rcv["c"] + 5, 0x10)                    # ack_above_sent
    c.raw("c", c.nxt["c"], c.rcv["c"] - 70000, 0x10)                # ack_below_window
    c.raw("s", c.nxt["s"] - 1, 0, 0x04)                             # RST below the client's ack
    c.raw("s", c.nxt["s"] + 1000, 0, 0x04)                          # in window, inexact: kept
    c.raw("c", c.nxt["c"] + 300000, c.rcv["c"], 0x11)               # a FIN outside: no close
    for k in range(20):                                             # a blind RST storm
        c.raw("s", (0x9E3779B9 * (k + 1)) & 0xFFFFFFFF, 0, 0x04)
    c.send("c", 0x10)
    # An RST at exactly the peer's ack ends the flow.
    c = Conn(f, 40002)
    c.handshake()
    c.send("c", 0x18, 100)
    c.send("s", 0x10)
    c.send("s", 0x04)
    # Window scaling both ways: data 200000 bytes ahead is inside a 2000 << 7 window, then a close.
    c = Conn(f, 40003)
    c.handshake(MSS + b"\x01\x03\x03\x07", MSS + b"\x01\x03\x03\x07")
    c.send("s", 0x10, win=2000)
    c.raw("c", c.nxt["c"] + 200000, c.rcv["c"], 0x18, payload=100)
    c.send("c", 0x11)
    c.send("s", 0x11)
    c.send("c", 0x10)
    # The same data without scaling (only the client offers it) is outside.
    c = Conn(f, 40004)
    c.handshake(MSS + b"\x01\x03\x03\x07", MSS)
    c.send("s", 0x10, win=2000)
    c.raw("c", c.nxt["c"] + 200000, c.rcv["c"], 0x18, payload=100)
    # SACK permitted: an edge past what was sent is refused, one within is not.
    c = Conn(f, 40005)
    c.handshake(MSS + SACK_PERM, MSS + SACK_PERM)
    base = c.nxt["c"]
    for _ in range(3):
        c.send("c", 0x18, 1000)
    c.raw("s", c.nxt["s"], base, 0x10, opts=b"\x01\x01\x05\x0a" + struct.pack(">II", base + 1000, base + 3000))
    c.raw("s", c.nxt["s"], base, 0x10, opts=b"\x01\x01\x05\x0a" + struct.pack(">II", base + 1000, base + 3001))
    # Data, then an RST right after it from the same side (netfilter's RST train).
    c = Conn(f, 40006)
    c.handshake()
    c.send("c", 0x18, 50)
    c.send("s", 0x18, 19)
    c.send("s", 0x04)
    # Retransmissions and a zero window.
    c = Conn(f, 40007)
    c.handshake()
    seq = c.nxt["c"]
    c.send("c", 0x18, 100)
    for _ in range(4):
        c.raw("c", seq, c.rcv["c"], 0x18, payload=100)
    c.send("s", 0x10, win=0)
    c.send("c", 0x18, 1)
    c.send("s", 0x10)
    # Sequence numbers crossing 2^32 both ways, then a close.
    c = Conn(f, 40008, 0xFFFFFF00, 0xFFFFFFF0)
    c.handshake()
    for _ in range(6):
        c.send("c", 0x18, 100)
        c.send("s", 0x18, 7)
    c.send("c", 0x11)
    c.send("s", 0x11)
    c.send("c", 0x10)
    # A simultaneous open.
    c = Conn(f, 40009)
    c.send("c", 0x02)
    c.send("s", 0x02)
    c.raw("c", c.nxt["c"] - 1, c.rcv["c"], 0x12)
    c.raw("s", c.nxt["s"] - 1, c.rcv["s"], 0x12)
    c.send("c", 0x10)
    c.send("s", 0x18, 10)
    # A flow picked up mid-stream, then the other side's RST before its ack.
    c = Conn(f, 40010, 7000000, 9000000)
    c.rcv["c"] = 9000000
    c.send("c", 0x18, 100)
    c.send("s", 0x18, 100)
    c.send("c", 0x10)
    c.raw("s", c.nxt["s"] - 50, 0, 0x04)
    # A closed port: SYN answered by RST+ACK with sequence 0; and a SYN with a spoofed RST+ACK.
    c = Conn(f, 40011)
    c.send("c", 0x02)
    c.raw("s", 0, c.nxt["c"], 0x14, win=0)
    c = Conn(f, 40012)
    c.send("c", 0x02)
    c.raw("s", 0, c.nxt["c"] + 12345, 0x14, win=0)
    return f


def write(path):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames()):
            out.write(struct.pack("<IIII", 1000 + i // 1000, (i % 1000) * 1000, len(frame), len(frame)) + frame)
