# SPDX-License-Identifier: BSD-3-Clause
"""Classic libpcap files for the integration tests, stdlib only.

write_pcap() writes crafted frames (Ethernet link type, microsecond timestamps); the frame
builders below make Ethernet/802.1Q/IPv4/IPv6/TCP bytes with correct checksums. read_pcap() and
dissect() are an independent reading of a capture: the tests derive expected flow and packet
counts from them, never from flowcop's own output. dissect() follows the wire formats, not
flowcop's parser: it reports what a frame is, and the tests decide what flowcop must do with it.
"""

import ipaddress
import struct

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
ETH_ARP = 0x0806
TPID_8021Q = 0x8100
TPID_8021AD = 0x88A8
VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)

FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D


# --- writing -------------------------------------------------------------------------------------

def write_pcap(path, records, snaplen=262144):
    """records: iterable of (time_us, frame_bytes) or (time_us, frame_bytes, orig_len).

    time_us is an integer count of microseconds since the Unix epoch, so timestamps are exact."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", _MAGIC_US, 2, 4, 0, 0, snaplen, 1))
        for rec in records:
            t_us, data = rec[0], bytes(rec[1])
            orig = rec[2] if len(rec) > 2 else len(data)
            f.write(struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(data), orig))
            f.write(data)


def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def mac(i):
    return bytes([0x02, 0, 0, 0, (i >> 8) & 0xFF, i & 0xFF])


def ether(payload, ethertype, vlans=(), src=mac(1), dst=mac(2), tpids=None):
    """vlans: outermost first. tpids: one TPID per tag (default 802.1ad outer + 802.1Q inner
    for QinQ, 802.1Q for a single tag)."""
    if tpids is None:
        tpids = [TPID_8021AD] * (len(vlans) - 1) + [TPID_8021Q] if vlans else []
    hdr = dst + src
    for tpid, vid in zip(tpids, vlans):
        hdr += struct.pack("!HH", tpid, vid & 0x0FFF)
    return hdr + struct.pack("!H", ethertype) + payload


def tcp_segment(src_ip, dst_ip, sport, dport, flags, seq=0, ack=0, payload=b"", window=65535,
                data_offset=5):
    """TCP header (no options unless data_offset > 5: zero padding) + payload, checksummed."""
    opts = b"\0" * (max(data_offset, 5) - 5) * 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      (data_offset & 0xF) << 4, flags, window, 0, 0) + opts
    seg = hdr + payload
    s, d = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    if s.version == 4:
        pseudo = s.packed + d.packed + struct.pack("!BBH", 0, 6, len(seg))
    else:
        pseudo = s.packed + d.packed + struct.pack("!IxxxB", len(seg), 6)
    c = _csum(pseudo + seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def ipv4(src, dst, proto, payload, total_length=None, ihl=5, ident=1, flags_frag=0x4000, ttl=64, version=4):
    """version and ihl other than 4 and 5 make the malformed headers a parser must count."""
    tl = 20 + len(payload) if total_length is None else total_length
    hdr = struct.pack("!BBHHHBBH4s4s", (version & 0xF) << 4 | (ihl & 0xF), 0, tl, ident, flags_frag, ttl, proto, 0,
                      ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    hdr = hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]
    return hdr + payload


def ipv6(src, dst, nxt, payload, payload_length=None, hop_limit=64):
    pl = len(payload) if payload_length is None else payload_length
    return struct.pack("!IHBB16s16s", 0x60000000, pl, nxt, hop_limit,
                       ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed) + payload


def tcp_frame(src, dst, sport, dport, flags, seq=0, ack=0, payload=b"", vlans=(), pad_to_60=True):
    """A whole Ethernet frame carrying one TCP segment over IPv4 or IPv6 (picked from src)."""
    seg = tcp_segment(src, dst, sport, dport, flags, seq, ack, payload)
    if ipaddress.ip_address(src).version == 4:
        frame = ether(ipv4(src, dst, 6, seg), ETH_IPV4, vlans)
    else:
        frame = ether(ipv6(src, dst, 6, seg), ETH_IPV6, vlans)
    if pad_to_60 and len(frame) < 60:
        frame += b"\0" * (60 - len(frame))  # Ethernet minimum frame without FCS
    return frame


def short_connection(client, cport, server, sport, client_isn, server_isn, request=b"q" * 20, answer=b"a" * 200):
    """The frames of one whole short TCP connection, in order: the handshake, a request and its answer,
    both FINs and the last ACK (5 frames from the client, 3 from the server; it ends in TIME_WAIT)."""
    cs, ss = client_isn, server_isn
    steps = [  # (from the client, flags, seq, ack, payload)
        (True, SYN, cs, 0, b""),
        (False, SYN | ACK, ss, cs + 1, b""),
        (True, ACK, cs + 1, ss + 1, b""),
        (True, PSH | ACK, cs + 1, ss + 1, request),
        (False, PSH | ACK, ss + 1, cs + 1 + len(request), answer),
        (True, FIN | ACK, cs + 1 + len(request), ss + 1 + len(answer), b""),
        (False, FIN | ACK, ss + 1 + len(answer), cs + 2 + len(request), b""),
        (True, ACK, cs + 2 + len(request), ss + 2 + len(answer), b""),
    ]
    frames = []
    for fwd, fl, s, a, p in steps:
        src, sp, dst, dp = (client, cport, server, sport) if fwd else (server, sport, client, cport)
        frames.append(tcp_frame(src, dst, sp, dp, fl, seq=s, ack=a, payload=p))
    return frames


def icmp_query_frame(src, dst, icmp_type, ident, seq, payload=b"flowcop"):
    """A whole Ethernet frame carrying one ICMP query or reply (echo, timestamp, ...: identifier and
    sequence number after the checksum, code 0): ICMP over IPv4, ICMPv6 over IPv6 (picked from src),
    checksummed (ICMPv6 over its pseudo-header)."""
    msg = struct.pack("!BBHHH", icmp_type, 0, 0, ident, seq) + payload
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    pseudo = b"" if s.version == 4 else s.packed + d.packed + struct.pack("!IxxxB", len(msg), 58)
    msg = msg[:2] + struct.pack("!H", _csum(pseudo + msg)) + msg[4:]
    if s.version == 4:
        frame = ether(ipv4(src, dst, 1, msg), ETH_IPV4)
    else:
        frame = ether(ipv6(src, dst, 58, msg), ETH_IPV6)
    return frame + b"\0" * max(0, 60 - len(frame))


# --- reading -------------------------------------------------------------------------------------

def read_pcap(path):
    """Returns (link_type, [(time_us, caplen, orig_len, data)]). Raises ValueError on a bad file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 24:
        raise ValueError("%s: shorter than a pcap header" % path)
    magic_le = struct.unpack("<I", blob[:4])[0]
    if magic_le in (_MAGIC_US, _MAGIC_NS):
        e = "<"
    elif struct.unpack(">I", blob[:4])[0] in (_MAGIC_US, _MAGIC_NS):
        e = ">"
    else:
        raise ValueError("%s: not a classic pcap file" % path)
    nano = struct.unpack(e + "I", blob[:4])[0] == _MAGIC_NS
    link = struct.unpack(e + "I", blob[20:24])[0]
    out, off = [], 24
    while off + 16 <= len(blob):
        sec, frac, cap, orig = struct.unpack(e + "IIII", blob[off:off + 16])
        off += 16
        data = blob[off:off + cap]
        off += cap
        us = frac // 1000 if nano else frac
        out.append((sec * 1_000_000 + us, cap, orig, data))
    return link, out


def ip_length(data):
    """The IP packet's length in Ethernet frame `data`, as flowcop's byte counters count it (RFC 7012):
    IPv4's total length, IPv6's 40 + payload length; for a Linux BIG TCP frame (length field 0 and more
    than 65535 bytes after the Ethernet header) the frame's bytes after it. 0 when not IP or cut short.
    Independent of flowcop's parser: tests compare flowcop's bytes with it."""
    n, off = len(data), 14
    if n < 14:
        return 0
    etype = struct.unpack("!H", data[12:14])[0]
    while etype in VLAN_TPIDS and off + 4 <= n:
        etype = struct.unpack("!H", data[off + 2:off + 4])[0]
        off += 4
    if etype == ETH_IPV4 and off + 4 <= n:
        total = struct.unpack("!H", data[off + 2:off + 4])[0]
        return n - off if total == 0 and n - off > 0xFFFF else total
    if etype == ETH_IPV6 and off + 6 <= n:
        payload = struct.unpack("!H", data[off + 4:off + 6])[0]
        return n - off if payload == 0 and n - off - 40 > 0xFFFF else 40 + payload
    return 0


class Frame:
    """What dissect() found. kind: 'tcp', 'fragment' (non-first IP fragment), 'other_ip',
    'non_ip' or 'broken' (a header does not fit, or a length field is inconsistent)."""
    __slots__ = ("kind", "vlans", "src", "dst", "sport", "dport", "flags", "ip_version")

    def __init__(self, kind, vlans=(), src=None, dst=None, sport=0, dport=0, flags=0, ip_version=0):
        self.kind, self.vlans, self.src, self.dst = kind, tuple(vlans), src, dst
        self.sport, self.dport, self.flags, self.ip_version = sport, dport, flags, ip_version

    def flow_key(self):
        """VLAN stack + unordered endpoint pair: one key per connection in both directions."""
        a, b = (self.src, self.sport), (self.dst, self.dport)
        return (self.vlans,) + (min(a, b), max(a, b))


def _tcp(data, off, end, vlans, src, dst, ver):
    if end - off < 20:
        return Frame("broken", vlans)
    sport, dport = struct.unpack("!HH", data[off:off + 4])
    doff = (data[off + 12] >> 4) * 4
    if doff < 20 or off + doff > end:
        return Frame("broken", vlans)
    return Frame("tcp", vlans, src, dst, sport, dport, data[off + 13], ver)


def dissect(data, orig_len=None):
    """Classifies one Ethernet frame. A frame whose IP datagram extends past the captured bytes
    is 'broken' (a NIC never delivers such a frame; a replay of a snaplen-cut capture does)."""
    n = len(data)
    if n < 14:
        return Frame("broken")
    off, etype, vlans = 12, struct.unpack("!H", data[12:14])[0], []
    off = 14
    while etype in VLAN_TPIDS:
        if off + 4 > n:
            return Frame("broken", vlans)
        vlans.append(struct.unpack("!H", data[off:off + 2])[0] & 0x0FFF)
        etype = struct.unpack("!H", data[off + 2:off + 4])[0]
        off += 4
    if etype == ETH_IPV4:
        if off + 20 > n or data[off] >> 4 != 4:
            return Frame("broken", vlans)
        ihl = (data[off] & 0xF) * 4
        total = struct.unpack("!H", data[off + 2:off + 4])[0]
        if ihl < 20 or off + ihl > n:
            return Frame("broken", vlans)
        if total == 0 and data[off + 9] == 6 and n - off > 0xFFFF:
            total = n - off  # Linux BIG TCP: the frame gives the length
        if total < ihl or off + total > n:
            return Frame("broken", vlans)
        src = str(ipaddress.IPv4Address(data[off + 12:off + 16]))
        dst = str(ipaddress.IPv4Address(data[off + 16:off + 20]))
        frag = struct.unpack("!H", data[off + 6:off + 8])[0]
        if frag & 0x1FFF:
            return Frame("fragment", vlans, src, dst, ip_version=4)
        if data[off + 9] != 6:
            return Frame("other_ip", vlans, src, dst, ip_version=4)
        return _tcp(data, off + ihl, off + total, vlans, src, dst, 4)
    if etype == ETH_IPV6:
        if off + 40 > n or data[off] >> 4 != 6:
            return Frame("broken", vlans)
        plen = struct.unpack("!H", data[off + 4:off + 6])[0]
        end = off + 40 + plen
        if end > n:
            return Frame("broken", vlans)
        src = str(ipaddress.IPv6Address(data[off + 8:off + 24]))
        dst = str(ipaddress.IPv6Address(data[off + 24:off + 40]))
        nxt, p = data[off + 6], off + 40
        for _ in range(8):
            if nxt in (0, 43, 60):  # hop-by-hop, routing, destination options
                if p + 8 > end:
                    return Frame("broken", vlans)
                nxt, p = data[p], p + (data[p + 1] + 1) * 8
            elif nxt == 44:  # fragment
                if p + 8 > end:
                    return Frame("broken", vlans)
                fo = struct.unpack("!H", data[p + 2:p + 4])[0]
                if fo & 0xFFF8:
                    return Frame("fragment", vlans, src, dst, ip_version=6)
                nxt, p = data[p], p + 8
            elif nxt == 51:  # AH
                if p + 8 > end:
                    return Frame("broken", vlans)
                nxt, p = data[p], p + (data[p + 1] + 2) * 4
            else:
                break
        if nxt != 6:
            return Frame("other_ip", vlans, src, dst, ip_version=6)
        return _tcp(data, p, end, vlans, src, dst, 6)
    return Frame("non_ip", vlans)
