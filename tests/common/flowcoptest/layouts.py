# SPDX-License-Identifier: BSD-3-Clause
"""The lcore layouts every expiry, tracking, export and control scenario runs on (issue 27).

flowcop's promise (a flow ends at its deadline, never early, late by at most a tick plus the check
interval) must hold on every ownership plan, so a scenario that replays a capture iterates LAYOUTS
and asserts the same exact results on each: a new scenario is added to this matrix, never to one
layout. Each layout is the `-l` list and the plan flowcop must report for it (a pcap port has no
RSS, so two lcores run the handoff plan: lcore 0 polls the port and hands lcore 1 its flows).

FLOWCOP_TEST_LAYOUTS (comma-separated layout names) narrows the matrix: .ci/run's ASan stage runs
the handoff layout only (it exercises every code path the single layout does, and the rings), where
a second replay of the same scenario proves nothing new about memory.
"""

import os


class Layout:
    __slots__ = ("name", "lcores", "plan")

    def __init__(self, name, lcores, plan):
        self.name, self.lcores, self.plan = name, lcores, plan

    def vdevs(self, pcap):
        """The --vdev arguments that replay the capture at `pcap` on this layout (a layout whose plan
        needs another port, such as a forced-RSS dispatch port, returns its own)."""
        return ["net_pcap0,rx_pcap=" + pcap]

    def __repr__(self):
        return "%s (-l %s)" % (self.name, self.lcores)


# A list: the rss layout (a forced-RSS dispatch port) is added here when it exists.
LAYOUTS = [
    Layout("single_lcore", "0", "single_lcore"),
    Layout("handoff", "0-1", "handoff"),
]


def selected():
    """LAYOUTS, narrowed by FLOWCOP_TEST_LAYOUTS when it is set (an unknown name is an error)."""
    want = [w.strip() for w in os.environ.get("FLOWCOP_TEST_LAYOUTS", "").split(",") if w.strip()]
    if not want:
        return list(LAYOUTS)
    names = {l.name for l in LAYOUTS}
    unknown = [w for w in want if w not in names]
    if unknown:
        raise SystemExit("FLOWCOP_TEST_LAYOUTS names unknown layouts %s (known: %s)" % (unknown, sorted(names)))
    return [l for l in LAYOUTS if l.name in want]
