# SPDX-License-Identifier: BSD-3-Clause
"""The lcore layouts every expiry, tracking, export and control scenario runs on (issue 27).

flowcop's promise (a flow ends at its deadline, never early, late by at most a tick plus the check
interval) must hold on every ownership plan, so a scenario that replays a capture iterates LAYOUTS
and asserts the same exact results on each: a new scenario is added to this matrix, never to one
layout. Each layout is the `-l` list, the port the capture is replayed on and the plan flowcop must
report for it: a pcap port has no RSS, so two lcores run the handoff plan (lcore 0 polls the port and
hands lcore 1 its flows); the rss layout replays the capture on flowcop's own port that deals packets
to two queues by RSS, as a NIC does, so two lcores run the rss plan (no handoff but for ICMP errors and
fragments).

FLOWCOP_TEST_LAYOUTS (comma-separated layout names) narrows the matrix: .ci/run's ASan stage runs
the handoff and rss layouts only (together they exercise every code path the single layout does, the
handoff rings and the time marks), where a third replay of the same scenario proves nothing new about
memory.
"""

import os


class Layout:
    __slots__ = ("name", "lcores", "plan", "port")

    def __init__(self, name, lcores, plan, port="pcap"):
        self.name, self.lcores, self.plan, self.port = name, lcores, plan, port

    def vdevs(self, pcap):
        """The --vdev arguments that replay the capture at `pcap` on this layout (none for the rss
        layout, whose port is flowcop's own: opts())."""
        return [] if self.port == "flowgen" else ["net_pcap0,rx_pcap=" + pcap]

    def opts(self, pcap):
        """The flowcop options the layout's port needs beyond the scenario's own: the rss layout replays
        the capture on --flowgen replay=FILE,queues=2, a ring-backed port whose queues are filled by a
        Toeplitz hash of the outer addresses (and ports of unfragmented TCP/UDP) as a NIC's RSS fills
        them, with flowcop's symmetric key and table (drivers/net/flowgen/rss_dealer.h): two lcores then
        run the rss plan, each tracking what its queue delivers."""
        return ["--flowgen", "replay=%s,queues=2" % pcap] if self.port == "flowgen" else []

    def pcap_vdev(self, pcap):
        """What process.Flowcop's `pcap` argument takes: the capture for a pcap vdev, else None."""
        return None if self.port == "flowgen" else pcap

    def __repr__(self):
        return "%s (-l %s)" % (self.name, self.lcores)


LAYOUTS = [
    Layout("single_lcore", "0", "single_lcore"),
    Layout("handoff", "0-1", "handoff"),
    # Exact like the others since the flowgen port deals its one timeline to every queue as time marks
    # (drivers/net/flowgen/time_marks.h, app/service/dataplane/clock.h): each lcore's cop runs where one
    # lcore's would, though each reads its own queue at its own pace.
    Layout("rss", "0-1", "rss", port="flowgen"),
]

# Layouts run only when FLOWCOP_TEST_LAYOUTS names them (none today).
OPT_IN = []


def selected():
    """LAYOUTS, or the layouts FLOWCOP_TEST_LAYOUTS names when it is set, from LAYOUTS and OPT_IN (an
    unknown name is an error)."""
    want = [w.strip() for w in os.environ.get("FLOWCOP_TEST_LAYOUTS", "").split(",") if w.strip()]
    if not want:
        return list(LAYOUTS)
    names = {l.name for l in LAYOUTS + OPT_IN}
    unknown = [w for w in want if w not in names]
    if unknown:
        raise SystemExit("FLOWCOP_TEST_LAYOUTS names unknown layouts %s (known: %s)" % (unknown, sorted(names)))
    return [l for l in LAYOUTS + OPT_IN if l.name in want]
