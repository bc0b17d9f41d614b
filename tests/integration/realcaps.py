# SPDX-License-Identifier: BSD-3-Clause
"""An independent reading of a real capture: what the integration tests expect flowcop to report
about it, derived from the frames (pcaplib.dissect) and the TCP rules in lib/tcpstate/tcp-tracking.md,
never from flowcop's output.

Per connection key (VLAN stack cut to the two IDs a flow key keeps, see lib/packet/packet.h, plus
the unordered address/port pair) it keeps the TCP frames in capture order, and derives:
  - can_create: some frame may start a flow (with loose pickup on: SYN, SYN-ACK, FIN+ACK or ACK,
    PSH/ECE/CWR ignored); keys without one must not appear in the event log;
  - restarts: an upper bound on extra lifetimes (a creating frame after an RST, a SYN after a FIN,
    a gap longer than the shortest non-established timeout); with none, the key has exactly one
    flow and all its frames are counted in it;
  - the end the flow must have when it has one lifetime: 'reset' when an RST is the last frame of
    the key; after FINs from both sides and a later ACK (TIME_WAIT), 'closed' when the capture runs
    on past the TIME_WAIT timeout, 'shutdown' when it ends inside it.
"""

from collections import defaultdict

from flowcoptest import pcaplib
from flowcoptest.pcaplib import ACK, FIN, RST, SYN, URG

# The shortest state timeout a non-established flow can be in (CLOSE, 10 s); a gap longer than
# this may end a flow early, so it counts as a possible restart.
MIN_TIMEOUT_S = 10


def flag_class(flags):
    f = flags & (FIN | SYN | RST | ACK | URG)
    if f in (RST, RST | ACK):
        return "rst"
    if f in (SYN, SYN | URG):
        return "syn"
    if f == SYN | ACK:
        return "synack"
    if f in (FIN | ACK, FIN | ACK | URG):
        return "fin"
    if f in (ACK, ACK | URG):
        return "ack"
    return "invalid"


class Conn:
    def __init__(self, key):
        self.key = key
        self.frames = []  # (t_us, IP length (pcaplib.ip_length), src_endpoint, class), in capture order

    def can_create(self):
        return any(c in ("syn", "synack", "fin", "ack") for _, _, _, c in self.frames)

    def noncreating(self):
        return sum(1 for _, _, _, c in self.frames if c in ("rst", "invalid"))

    def restarts(self):
        n, prev = 0, None
        seen_rst = seen_fin = seen_synack = opened = False
        for i, (t, _, _, c) in enumerate(self.frames):  # capture order; a negative step is no gap
            # A gap matters unless the flow sits in ESTABLISHED (5 days): opened, no FIN or RST yet.
            established = opened and not seen_fin and not seen_rst
            if prev is not None and t - prev > MIN_TIMEOUT_S * 1_000_000 and not established:
                n += 1
            prev = t
            if c == "synack":
                seen_synack = True
            if c == "ack" and (i == 0 or seen_synack):
                opened = True
            if seen_rst and c in ("syn", "synack", "fin", "ack"):
                n += 1
                seen_rst = False
            if seen_fin and c == "syn":
                n += 1
            if c == "rst":
                seen_rst = True
            if c == "fin":
                seen_fin = True
        return n

    def max_gap(self):
        """(gap_us, time before the gap, time after it)."""
        best = (0, None, None)
        for (a, *_), (b, *_) in zip(self.frames, self.frames[1:]):
            if b - a > best[0]:
                best = (b - a, a, b)
        return best

    def expected_end(self, capture_end_us, time_wait_s=120, slack_s=2):
        """'reset', 'closed', 'shutdown' or None (no prediction) for a one-lifetime key, with the
        default timeouts. Frames are taken in capture order, as flowcop sees them."""
        fr = self.frames
        if not fr:
            return None
        classes = [c for _, _, _, c in fr]
        if classes[-1] == "rst":
            return "reset"
        if "rst" in classes or "invalid" in classes:
            return None
        # Past SYN_SENT: picked up mid-stream (ACK/FIN first), or SYN, SYN-ACK, ACK in that order.
        opened = classes[0] in ("ack", "fin")
        if classes[0] == "syn":
            syn_src = fr[0][2]
            try:
                i = classes.index("synack")
                opened = any(c == "ack" and src == syn_src for _, _, src, c in fr[i + 1:])
            except ValueError:
                opened = False
        if not opened:
            return None
        fin_from, time_wait, last_ok = set(), False, None
        for t, _, src, c in fr:
            if c == "fin":
                fin_from.add(src)
            elif c == "ack" and len(fin_from) == 2:
                time_wait = True
            if c in ("ack", "fin"):
                last_ok = t
        if not fin_from:
            return "shutdown"  # ESTABLISHED: 5 days outlast any capture here
        if not time_wait:
            return None        # FIN_WAIT / CLOSE_WAIT / LAST_ACK: timeouts of 30-120 s may run
        left = capture_end_us - last_ok - time_wait_s * 1_000_000
        if left > slack_s * 1_000_000:
            return "closed"
        if left < 0:
            return "shutdown"
        return None  # within a tick or two of the deadline: either is right


class Reading:
    def __init__(self, path):
        _, recs = pcaplib.read_pcap(path)
        self.frames = len(recs)
        self.first_us = min(r[0] for r in recs) if recs else 0
        self.end_us = max(r[0] for r in recs) if recs else 0
        self.kinds = defaultdict(int)
        self.conns = {}
        self.shorter_than_ethernet = 0
        for t, cap, orig, data in recs:
            if cap < 14:
                self.shorter_than_ethernet += 1
            fr = pcaplib.dissect(data)
            self.kinds[fr.kind] += 1
            if fr.kind != "tcp":
                continue
            vl = fr.vlans[:2]
            a, b = (fr.src, fr.sport), (fr.dst, fr.dport)
            key = (vl, min(a, b), max(a, b))
            c = self.conns.get(key)
            if c is None:
                c = self.conns[key] = Conn(key)
            c.frames.append((t, pcaplib.ip_length(data), a, flag_class(fr.flags)))

    def tcp_frames(self):
        return self.kinds["tcp"]

    def creating_keys(self):
        return {k for k, c in self.conns.items() if c.can_create()}
