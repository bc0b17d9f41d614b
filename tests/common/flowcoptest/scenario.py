# SPDX-License-Identifier: BSD-3-Clause
"""Crafted replay scenarios: TCP conversations on a millisecond timeline, written as a pcap, with
the outcome each flow must have declared next to the packets that cause it.

A Conn sends packets at given times; each packet is tagged with the lifetime (`life`) of the
tracked flow it must belong to, and `ignored=True` marks a packet the tracker must count but not
let move last_seen (an invalid flag combination). Conn.end(life, reason, time_us, state) declares
how that lifetime must end. expected_flows() turns this into one record per lifetime (originator,
counts per direction, bytes, first/last seen, reason, end time), computed from the packets alone.

Bursts. DPDK's pcap PMD hands flowcop up to 32 frames per RX burst whatever their timestamps.
write(isolate=True) pads every group of same-time frames with ARP fillers at that time up to a
multiple of 32, so each RX burst carries exactly one timestamp; the tests then check tracking
rules, not batching. Replaying the same scenario with isolate=False checks that batching does not
change the outcome.
"""

import ipaddress

from . import pcaplib
from .pcaplib import ACK, FIN, PSH, RST, SYN

BURST = 32
T0_US = 1_700_000_000 * 1_000_000  # a whole second, so millisecond offsets stay exact


def ms(t_ms):
    """Absolute time in microseconds of a scenario offset in milliseconds (int or float)."""
    return T0_US + int(round(t_ms * 1000))


def arp_frame(i=0):
    payload = bytes.fromhex("0001080006040001") + pcaplib.mac(0x100 + (i & 0xFF)) + bytes([10, 9, 9, 1]) \
        + b"\0" * 6 + bytes([10, 9, 9, 2])
    f = pcaplib.ether(payload, pcaplib.ETH_ARP, dst=b"\xff" * 6, src=pcaplib.mac(0x100 + (i & 0xFF)))
    return f + b"\0" * (60 - len(f))


class Packet:
    __slots__ = ("t_us", "frame", "conn", "from_client", "life", "ignored")

    def __init__(self, t_us, frame, conn=None, from_client=True, life=None, ignored=False):
        self.t_us, self.frame, self.conn = t_us, frame, conn
        self.from_client, self.life, self.ignored = from_client, life, ignored


class Scenario:
    def __init__(self):
        self.packets = []
        self.conns = []
        self.fillers = 0
        self.non_ip = 0  # deliberate non-IP frames (ticks), fillers excluded

    def conn(self, client, cport, server, sport, vlans=(), reply_vlans=None, key_vlans=None):
        """vlans tag the client's packets, reply_vlans (default: vlans) the server's; key_vlans
        (default: vlans) are the IDs the flow's events show (what --vlan-key keeps)."""
        c = Conn(self, client, cport, server, sport, tuple(vlans), reply_vlans, key_vlans)
        self.conns.append(c)
        return c

    def tick(self, t_ms):
        """A non-TCP frame whose only job is to move the packet clock to t."""
        self.packets.append(Packet(ms(t_ms), arp_frame(len(self.packets))))
        self.non_ip += 1

    def raw(self, t_ms, frame):
        """A frame that must not reach any flow (malformed, or not TCP)."""
        self.packets.append(Packet(ms(t_ms), frame))

    def times(self):
        return sorted({p.t_us for p in self.packets})

    def first_time_at_or_after(self, t_us):
        """The time of the first RX burst at or after t_us: when a cop pass can first see t_us."""
        later = [t for t in self.times() if t >= t_us]
        return later[0] if later else None

    def last_time(self):
        return max(p.t_us for p in self.packets)

    def records(self, isolate=True):
        pk = sorted(self.packets, key=lambda p: p.t_us)  # stable: same-time order as added
        out, i, self.fillers = [], 0, 0
        while i < len(pk):
            j = i
            while j < len(pk) and pk[j].t_us == pk[i].t_us:
                out.append((pk[j].t_us, pk[j].frame))
                j += 1
            if isolate:
                pad = (-(j - i)) % BURST
                out.extend((pk[i].t_us, arp_frame(k)) for k in range(pad))
                self.fillers += pad
            i = j
        return out

    def write(self, path, isolate=True):
        recs = self.records(isolate)
        pcaplib.write_pcap(path, recs)
        return len(recs)

    def expected_flows(self):
        out = []
        for c in self.conns:
            out.extend(c.expected())
        return out


class Conn:
    def __init__(self, sc, client, cport, server, sport, vlans, reply_vlans=None, key_vlans=None):
        self.sc, self.client, self.cport, self.server, self.sport, self.vlans = sc, client, cport, server, sport, vlans
        self.reply_vlans = vlans if reply_vlans is None else tuple(reply_vlans)
        self.key_vlans = vlans if key_vlans is None else tuple(key_vlans)
        self.packets = []
        self.ends = {}
        self.starts = {}
        self.seq = [1000, 5000]

    def send(self, t_ms, from_client, flags, payload=0, life=0, ignored=False):
        src, sp, dst, dp = ((self.client, self.cport, self.server, self.sport) if from_client
                            else (self.server, self.sport, self.client, self.cport))
        d = 0 if from_client else 1
        frame = pcaplib.tcp_frame(src, dst, sp, dp, flags, self.seq[d], self.seq[1 - d], b"x" * payload,
                                  self.vlans if from_client else self.reply_vlans)
        self.seq[d] += payload + (1 if flags & (SYN | FIN) else 0)
        p = Packet(ms(t_ms), frame, self, from_client, life, ignored)
        self.packets.append(p)
        self.sc.packets.append(p)
        return p

    # Conversation pieces (c = client, s = server).
    def handshake(self, t_ms, step_ms=1, life=0):
        self.send(t_ms, True, SYN, life=life)
        self.send(t_ms + step_ms, False, SYN | ACK, life=life)
        self.send(t_ms + 2 * step_ms, True, ACK, life=life)
        return t_ms + 2 * step_ms

    def exchange(self, t_ms, c_bytes, s_bytes, step_ms=1, life=0):
        self.send(t_ms, True, PSH | ACK, c_bytes, life=life)
        self.send(t_ms + step_ms, False, ACK, life=life)
        self.send(t_ms + 2 * step_ms, False, PSH | ACK, s_bytes, life=life)
        self.send(t_ms + 3 * step_ms, True, ACK, life=life)
        return t_ms + 3 * step_ms

    def close(self, t_ms, step_ms=1, life=0, client_first=True):
        """FIN, FIN+ACK, ACK: ends in TIME_WAIT at the last packet."""
        self.send(t_ms, client_first, FIN | ACK, life=life)
        self.send(t_ms + step_ms, not client_first, FIN | ACK, life=life)
        self.send(t_ms + 2 * step_ms, client_first, ACK, life=life)
        return t_ms + 2 * step_ms

    def start(self, life, state):
        """The state the `new` event of this lifetime must show."""
        self.starts[life] = state

    def end(self, life, reason, time_us, state):
        """time_us: an int, a (earliest, latest) pair, or a callable returning one, evaluated once
        the whole scenario is built."""
        self.ends[life] = (reason, time_us, state)

    def last_seen_us(self, life):
        return max(p.t_us for p in self.packets if p.life == life and not p.ignored)

    def expected(self):
        lives = sorted({p.life for p in self.packets if p.life is not None})
        out = []
        for life in lives:
            pk = [p for p in self.packets if p.life == life]
            first = min(pk, key=lambda p: p.t_us)
            orig_is_client = first.from_client
            o = [p for p in pk if p.from_client == orig_is_client]
            r = [p for p in pk if p.from_client != orig_is_client]
            src, sp, dst, dp = ((self.client, self.cport, self.server, self.sport) if orig_is_client
                                else (self.server, self.sport, self.client, self.cport))
            reason, t_end, state = self.ends[life]
            if callable(t_end):
                t_end = t_end()
            out.append(dict(
                name="%s:%d-%s:%d%s life %d" % (self.client, self.cport, self.server, self.sport,
                                                ("/vlan" + ",".join(map(str, self.vlans))) if self.vlans else "", life),
                src=str(ipaddress.ip_address(src)), sport=sp, dst=str(ipaddress.ip_address(dst)), dport=dp,
                vlan=list(self.key_vlans), packets_orig=len(o), packets_reply=len(r),
                bytes_orig=sum(pcaplib.ip_length(p.frame) for p in o),  # IP bytes, as flowcop counts
                bytes_reply=sum(pcaplib.ip_length(p.frame) for p in r),
                first_seen=first.t_us, last_seen=self.last_seen_us(life), reason=reason, time=t_end,
                state=state, start_state=self.starts.get(life)))
        return out
