#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Flows survive a restart through --state-file (issue 32), on pcap vdevs, on every lcore layout and
across a change of lcore count.

Usage: test_state_restart.py FLOWCOP_EXE FLOWCOPCTL TMPDIR

For each (first, second) pair of layouts of the matrix (flowcoptest/layouts.py: one lcore and the
handoff plan's two, so 1->1, 1->2, 2->1, 2->2): a first flowcop (--clock tsc) replays a capture of
N_TCP established TCP connections and one UDP flow, which is listed (flowcopctl -L), and stopped with
SIGINT: it saves the file and writes no destroy event for the saved flows. A second flowcop with the same
file and --udp-timeout-unreplied 1 starts after more than 1 s and replays the same connections' next
segments: flowcopctl -L shows every TCP connection with its id, first-seen time and state, its counters
those of the first run plus the new segments (so the window came back: an out-of-window segment would
not count as accepted); the UDP flow's deadline passed while flowcop was down, so it ends at once as
inactivity under its old id (a destroy event, no new event for any restored flow);
flowcop_state_restored_flows says how many came back. Then, on one lcore: a corrupted, a truncated and
a future-version file each start flowcop with no flows, the reason counted in
flowcop_state_restore_discarded_total. And --state-checkpoint-s 1 on two lcores: after a crash (SIGKILL)
the next start restores the last checkpoint. Every wait is bounded.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time

from flowcoptest import harness, layouts, pcaplib
from flowcoptest import pcapgen as g
from flowcoptest.checks import wait_until
from flowcoptest.exposition import Scrape
from flowcoptest.process import Flowcop

N_TCP = 8
CLIENT, SERVER, UDP_SRC = "10.77.0.1", "10.77.0.2", "10.77.0.9"
T0_US = 1_700_000_000_000_000
DRIFT_S = 0.1


def conns():
    return [(CLIENT, 41000 + i, SERVER, 80) for i in range(N_TCP)]


def capture(path, second):
    """First run: handshakes and a request each, one UDP packet. Second run: each connection's next
    request and its ACK, numbered after the first run's (pcapgen numbers every direction in order)."""
    recs, t = [], T0_US
    for c, cp, s, sp in conns():
        frames = []
        if not second:
            frames = [g.tcp4(c, cp, s, sp, g.SYN), g.tcp4(s, sp, c, cp, g.SYN | g.ACK), g.tcp4(c, cp, s, sp, g.ACK)]
        frames += [g.tcp4(c, cp, s, sp, g.PSH | g.ACK, b"GET / HTTP/1.1\r\n\r\n"), g.tcp4(s, sp, c, cp, g.ACK)]
        for f in frames:
            recs.append((t, f))
            t += 1000
    if not second:
        recs.append((t, g.udp4(UDP_SRC, SERVER)))
    pcaplib.write_pcap(path, recs, snaplen=65535)
    return len(recs)


def ctl(exe, fc, *args):
    r = subprocess.run([sys.executable, exe, f"--file-prefix={fc.prefix}"] + list(args), capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("flowcopctl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def listing(exe, fc):
    return {(f["proto"], f["src"], f["sport"], f["dst"], f["dport"]): f
            for f in (json.loads(line) for line in ctl(exe, fc, "-L", "-o", "json").splitlines())}


def events(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def start(exe, pcap, layout, state, evfile, name, extra=()):
    args = ["--metrics-addr", "127.0.0.1:0", "--state-file", state, "--tick-ms", "10", "--check-interval-ms", "10",
            "--events", evfile, "--events-filter", "new,destroy"] + list(extra) + layout.opts(pcap)
    return Flowcop(exe, layout.pcap_vdev(pcap), args, name, lcores=layout.lcores)


def restart_pair(tap, exe, ctl_exe, tmp, first, second, pcaps):
    label = "%s -> %s" % (first.name, second.name)
    state = os.path.join(tmp, "flows-%s-%s.state" % (first.name, second.name))
    ev1, ev2 = state + ".ev1", state + ".ev2"
    fc = start(exe, pcaps[0], first, state, ev1, "st1")
    try:
        want = N_TCP + 1
        wait_until(lambda: Scrape(fc.url).total("flowcop_flows_active") == want, 30, "%d flows" % want)
        before = listing(ctl_exe, fc)
    finally:
        rc = fc.stop()
    tap.eq(rc, 0, "%s: the first run stops cleanly" % label)
    tap.ok("saved %d flows" % (N_TCP + 1) in fc.stderr, "%s: the stop saves every flow" % label,
           fc.stderr[-800:])
    tap.ok(not [e for e in events(ev1) if e.get("event") == "destroy"],
           "%s: no destroy event for the saved flows" % label)
    ids_before = {e["flow_id"] for e in events(ev1) if e.get("event") == "new"}
    time.sleep(1.2)  # the UDP flow's timeout in the second run (1 s) runs out while flowcop is down

    fc = start(exe, pcaps[1], second, state, ev2, "st2", extra=["--udp-timeout", "1"])
    try:
        wait_until(lambda: Scrape(fc.url).total("flowcop_state_restored_flows") == N_TCP + 1, 30, "the restore")
        # Every second-run segment is tracked: two more packets on each connection (bounded wait).
        def counted():
            now = listing(ctl_exe, fc)
            return now if sum(f["packets_orig"] + f["packets_reply"] for f in now.values()) >= \
                sum(f["packets_orig"] + f["packets_reply"] for k, f in before.items() if k in now) + 2 * N_TCP else None
        after = wait_until(counted, 30, "the second capture's segments on the restored flows")
        m = Scrape(fc.url)
        consumed = os.path.exists(state + ".restored") and not os.path.exists(state)
    finally:
        rc = fc.stop()
    tap.eq(rc, 0, "%s: the second run stops cleanly" % label)
    tap.ok(consumed and os.path.exists(state), "%s: the file is restored once (renamed .restored while running), "
           "and the stop writes it anew" % label)
    tap.eq(m.total("flowcop_state_restore_discarded_total"), 0, "%s: nothing discarded" % label)
    tcp_before = {k: f for k, f in before.items() if f["proto"] == "tcp"}
    tap.eq(sorted(after), sorted(tcp_before), "%s: every TCP connection listed again, the UDP flow gone" % label)
    # First seen goes through the wall clock (app/service/state.h, "Time"): the TSC clock's drift from
    # it over the first run is corrected, a few ms here.
    same = [k for k in tcp_before if k in after and after[k]["state"] == tcp_before[k]["state"] and
            abs(after[k]["first_seen"] - tcp_before[k]["first_seen"]) < DRIFT_S]
    tap.ok(len(same) == N_TCP, "%s: same first-seen times and states" % label,
           json.dumps([(tcp_before[k], after.get(k)) for k in tcp_before if k not in same][:2]))
    # Ids: kept, but where two old lcores' flows claimed one slot on a new lcore (flow_image.h): those are
    # renumbered, counted, and never possible from one old lcore.
    # The UDP flow is restored too (then ends at once): its destroy event shows the id it came back with.
    evs = events(ev2)
    udp_key = [k for k, f in before.items() if f["proto"] == "udp"]
    udp_id = [before[k]["flow_id"] for k in udp_key]
    ends = [e for e in evs if e.get("event") == "destroy"]
    udp_end = [e for e in ends if udp_key and e.get("proto") == "udp" and
               {e["src"], e["dst"]} == {udp_key[0][1], udp_key[0][3]}]
    moved = [k for k in tcp_before if k in after and after[k]["flow_id"] != tcp_before[k]["flow_id"]]
    moved += [e for e in udp_end[:1] if e["flow_id"] not in udp_id]
    renumbered = m.total("flowcop_state_restore_renumbered_flows")
    tap.eq(len(moved), renumbered, "%s: every changed id is a counted renumbering" % label)
    if first.lcores == "0":
        tap.eq(len(moved), 0, "%s: from one lcore every flow keeps its id" % label)
    per_lcore = {}
    for f in after.values():
        per_lcore.setdefault(f["lcore"], []).append(f["flow_id"])
    tap.ok(all(len(v) == len(set(v)) for v in per_lcore.values()), "%s: ids unique on each lcore" % label)
    counting = [k for k in tcp_before if k in after and
                after[k]["packets_orig"] == tcp_before[k]["packets_orig"] + 1 and
                after[k]["packets_reply"] == tcp_before[k]["packets_reply"] + 1 and
                after[k]["bytes_orig"] > tcp_before[k]["bytes_orig"]]
    tap.eq(len(counting), N_TCP, "%s: counters go on counting from the first run's" % label)
    tap.eq(m.total("flowcop_tcp_out_of_window_total"), 0, "%s: the next segments are inside the restored window"
           % label)
    # Its id is the old one unless it was renumbered (counted above: a slot collision between old lcores).
    tap.ok(len(ends) >= 1 and ends[0] in udp_end and ends[0]["reason"] == "inactivity" and
           (ends[0]["flow_id"] in udp_id or renumbered >= 1),
           "%s: the flow idle past its timeout across the downtime ends as inactivity at start, same id "
           "(or a counted renumbering)" % label, json.dumps(ends[:2]))
    restored_new = [e for e in evs if e.get("event") == "new" and e["flow_id"] in ids_before]
    tap.eq(restored_new, [], "%s: no second new event for a restored flow" % label)


def bad_files(tap, exe, tmp, pcap):
    layout = layouts.LAYOUTS[0]
    good = os.path.join(tmp, "good.state")
    ev = good + ".ev"
    fc = start(exe, pcap, layout, good, ev, "stg")
    try:
        wait_until(lambda: Scrape(fc.url).total("flowcop_flows_active") == N_TCP + 1, 30, "flows")
    finally:
        fc.stop()
    with open(good, "rb") as f:
        data = f.read()
    cases = {
        "checksum": data[:300] + bytes([data[300] ^ 0x40]) + data[301:],
        "truncated": data[:len(data) - 100],
        "version": data[:8] + struct.pack("<I", 99) + data[12:],
    }
    for reason, bytes_ in cases.items():
        path = os.path.join(tmp, "bad-%s.state" % reason)
        with open(path, "wb") as f:
            f.write(bytes_)
        empty = os.path.join(tmp, "empty.pcap")
        pcaplib.write_pcap(empty, [], snaplen=65535)
        fc = start(exe, empty, layout, path, path + ".ev", "stb")
        try:
            m = wait_until(lambda: Scrape(fc.url), 10, "a scrape")
            discarded = m.value("flowcop_state_restore_discarded_total", reason=reason)
            active = m.total("flowcop_flows_active")
        finally:
            rc = fc.stop()
        tap.eq(rc, 0, "a %s file: flowcop starts and stops cleanly" % reason)
        tap.eq((discarded, active), (1, 0), "a %s file: no flows, the reason counted" % reason)
        tap.ok("refused (%s)" % reason in fc.stderr, "a %s file: one clear line says so" % reason, fc.stderr[-600:])
    options_changed(tap, exe, tmp, good)


def options_changed(tap, exe, tmp, good):
    """The same file under options that no longer produce its keys or track its protocols."""
    layout = layouts.LAYOUTS[0]
    empty = os.path.join(tmp, "empty-opts.pcap")
    pcaplib.write_pcap(empty, [], snaplen=65535)
    for extra, reason, lost, kept in ((["--port-zone", "0:5"], "key_changed", N_TCP + 1, 0),
                                      (["--track", "udp"], "not_tracked", N_TCP, 1)):
        path = os.path.join(tmp, "opts-%s.state" % reason)
        shutil.copy(good, path)
        fc = start(exe, empty, layout, path, path + ".ev", "sto", extra=extra)
        try:
            m = wait_until(lambda: Scrape(fc.url), 10, "a scrape")
            got = (m.value("flowcop_state_restore_discarded_total", reason=reason),
                   m.total("flowcop_state_restored_flows"))
        finally:
            fc.stop()
        tap.eq(got, (lost, kept), "%s: the flows it no longer fits are counted %s, the others restored"
               % (" ".join(extra), reason))
        tap.ok("not restored: %s" % reason in fc.stderr, "%s: one warning line says so" % " ".join(extra),
               fc.stderr[-500:])


def checkpoint_then_crash(tap, exe, ctl_exe, tmp, pcap):
    """--state-checkpoint-s 1 on the last layout of the matrix: the checkpoint thread saves while the lcores
    run; after a crash (SIGKILL: no save at stop) the next start restores the last checkpoint."""
    # A pcap layout: the restart replays an empty capture, which flowgen's replay= refuses.
    layout = ([l for l in layouts.selected() if l.port == "pcap"] or layouts.LAYOUTS)[-1]
    state = os.path.join(tmp, "checkpoint.state")
    fc = start(exe, pcap, layout, state, state + ".ev", "stc", extra=["--state-checkpoint-s", "1"])
    try:
        wait_until(lambda: Scrape(fc.url).total("flowcop_flows_active") == N_TCP + 1, 30, "flows")
        before = listing(ctl_exe, fc)
        m = wait_until(lambda: (lambda s: s if s.value("flowcop_state_saves_total", result="ok") >= 2 else None)(
            Scrape(fc.url)), 20, "two checkpoints")
        saved = m.value("flowcop_state_saved_flows")
    finally:
        fc.proc.kill()
        fc.proc.wait(timeout=10)
    tap.eq(saved, N_TCP + 1, "%s: a checkpoint while running saves every flow" % layout.name)
    empty = os.path.join(tmp, "empty-ck.pcap")
    pcaplib.write_pcap(empty, [], snaplen=65535)
    fc = start(exe, empty, layout, state, state + ".ev2", "stk")
    try:
        m = wait_until(lambda: (lambda s: s if s.total("flowcop_state_restored_flows") == N_TCP + 1 else None)(
            Scrape(fc.url)), 30, "the restore")
        after = listing(ctl_exe, fc)
    finally:
        fc.stop()
    tap.eq(sorted((k, f["packets_orig"], f["packets_reply"]) for k, f in after.items()),
           sorted((k, f["packets_orig"], f["packets_reply"]) for k, f in before.items()),
           "%s: after a crash the last checkpoint's flows come back with their counters" % layout.name)
    moved = [k for k in before if k in after and after[k]["flow_id"] != before[k]["flow_id"]]
    tap.eq(len(moved), m.total("flowcop_state_restore_renumbered_flows"),
           "%s: ... and their ids, but for the counted renumberings" % layout.name)


def main():
    exe, ctl_exe, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tap = harness.Tap()
    pcaps = [os.path.join(tmp, "first.pcap"), os.path.join(tmp, "second.pcap")]
    g._next_seq.clear()
    capture(pcaps[0], False)
    capture(pcaps[1], True)
    chosen = layouts.selected()
    for first in chosen:
        for second in chosen:
            restart_pair(tap, exe, ctl_exe, tmp, first, second, pcaps)
    bad_files(tap, exe, tmp, pcaps[0])
    checkpoint_then_crash(tap, exe, ctl_exe, tmp, pcaps[0])
    tap.done()


if __name__ == "__main__":
    main()
