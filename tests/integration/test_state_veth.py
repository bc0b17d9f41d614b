#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Real TCP peers keep their flows across a restart of flowcop inline (--state-file, issue 32).

Usage: test_state_veth.py FLOWCOP_EXE FLOWCOPCTL TMPDIR

Two network namespaces joined through flowcop inline on af_packet veths (test_inline_veth.py's Net).
A server (state_peers.py serve) answers echo lines and serves a rate-limited 12 MiB download; from the
other namespace a client (state_peers.py hold) opens four long-lived connections, echoes once on each
and starts the download. flowcop (one lcore) sets a 2 s timeout on one idle connection (flowcopctl -U),
lists the flows, and is stopped with SIGTERM mid-download: it saves the file. After more than 2 s a
second flowcop on TWO lcores starts with the same file. Checked:
- flowcopctl -L shows the same connections with the same flow ids, first-seen times (through the wall
  clock: a few ms of TSC drift), states, and counters that went on counting (an echo on each idle
  connection after the restart);
- the window state came back: an out-of-window segment injected on an idle connection after the
  restart is counted out of window (an `update` event with an invalid reason, for that flow's id);
- the connection whose 2 s timeout ran out during the downtime ends as inactivity at start, under its id;
- no second `new` event for a restored connection, and the download arrives intact (sha256), TCP
  retransmitting across the downtime.
Every wait is bounded; namespaces, veths and processes are removed on every exit path. Skips when
not root or when ip, ethtool or the af_packet PMD are missing.
"""

import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

from flowcoptest import harness
from flowcoptest.exposition import Scrape
from test_inline_veth import Net, prerequisites, sh, stop

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
PEERS = os.path.join(HERE, "state_peers.py")
SERVER_IP, CLIENT_IP, PORT = "10.213.7.2", "10.213.7.1", 8081
IDLE = (41001, 41002, 41003)
SHORT = 41004  # its timeout set to 2 s: it runs out while flowcop is down
GET = 41010
SIZE, RATE = 12 << 20, 1.5e6  # an 8 s download
DRIFT_S = 0.1


class Run:
    """One flowcop process on the two veths (stderr to a file), with its control socket's prefix."""

    def __init__(self, exe, net, tmp, name, lcores, state, events):
        self.prefix = "fct-sv-%s-%d" % (name, os.getpid())
        self.log = os.path.join(tmp, name + ".log")
        ring = "framecnt=4096,blocksz=4096,framesz=2048"
        cmd = [exe, "--no-huge", "-m", "512", "--no-pci", "-l", lcores, "--file-prefix=" + self.prefix,
               "--log-level=lib.eal:error", "--vdev=net_af_packet0,iface=%s,%s" % (net.root[0], ring),
               "--vdev=net_af_packet1,iface=%s,%s" % (net.root[1], ring), "--",
               "--mode", "inline", "--clock", "tsc", "--tick-ms", "100", "--check-interval-ms", "100",
               "--metrics-addr", "127.0.0.1:0", "--state-file", state, "--events", events,
               "--events-filter", "new,update,destroy:tcp", "--quiet"]
        self.err = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 30
        self.url = None
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"metrics at (http://\S+/metrics)", self.text())
            if m:
                self.url = m.group(1)
                break
            time.sleep(0.1)
        if self.url is None:
            self.stop()
            raise RuntimeError("flowcop did not start: " + self.text()[-1500:])

    def text(self):
        with open(self.log) as f:
            return f.read()

    def ctl(self, ctl_exe, *args):
        r = subprocess.run([PY, ctl_exe, "--file-prefix=" + self.prefix] + list(args), capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("flowcopctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def listing(self, ctl_exe):
        flows = (json.loads(line) for line in self.ctl(ctl_exe, "-L", "-o", "json").splitlines())
        return {f["sport"] if f["src"] == CLIENT_IP else f["dport"]: f for f in flows if f["proto"] == "tcp"}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree("/var/run/dpdk/" + self.prefix, True)
        return self.proc.returncode


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise RuntimeError("timed out after %s s waiting for %s" % (timeout, what))
        time.sleep(0.2)


def read_line(p, timeout):
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline().strip() if ready else ""


def mac_of(net, ns, iface):
    return net.nsexec(ns, "cat", "/sys/class/net/%s/address" % iface).stdout.strip()


def events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    exe, ctl_exe, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    why = prerequisites()
    if why:
        harness.skip_all(why)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t_start = time.monotonic()
    tap = harness.Tap()
    net = Net()
    procs, runs = [], []
    state = os.path.join(tmp, "flows.state")
    try:
        net.create()
        server = net.popen(net.ns[1], PY, PEERS, "serve", SERVER_IP, str(PORT), str(SIZE), str(RATE),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(server)
        if read_line(server, 10) != "ready":
            raise RuntimeError("server did not start")
        first = Run(exe, net, tmp, "first", "0", state, os.path.join(tmp, "first.jsonl"))
        runs.append(first)
        out = os.path.join(tmp, "download.bin")
        client = net.popen(net.ns[0], PY, PEERS, "hold", SERVER_IP, str(PORT), *map(str, IDLE + (SHORT,)),
                           "--get", str(GET), out, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        procs.append(client)
        if read_line(client, 30) != "ready":
            raise RuntimeError("client did not connect: " + client.stderr.read()[:500])
        ports = IDLE + (SHORT, GET)
        wait_for(lambda: all(p in first.listing(ctl_exe) for p in ports), 20, "the five connections listed")
        first.ctl(ctl_exe, "-U", "-s", CLIENT_IP, "--sport", str(SHORT), "-t", "2")
        time.sleep(1.0)  # the download is running
        before = first.listing(ctl_exe)
        rc = first.stop()
        tap.eq(rc, 0, "the first flowcop stops cleanly on SIGTERM")
        tap.ok(re.search(r"state: saved \d+ flows", first.text()) is not None, "it saved the flows",
               first.text()[-800:])
        time.sleep(2.5)  # the short connection's 2 s run out while flowcop is down

        ev2 = os.path.join(tmp, "second.jsonl")
        second = Run(exe, net, tmp, "second", "0-1", state, ev2)
        runs.append(second)
        m = Scrape(second.url)
        tap.ok(m.total("flowcop_state_restored_flows") >= len(ports), "the second flowcop (two lcores) restored "
               "every connection", second.text()[-800:])
        for p in IDLE:
            client.stdin.write("echo %d\n" % p)
            client.stdin.flush()
        answers = [read_line(client, 15) for _ in IDLE]
        tap.eq(sorted(answers), sorted("ok %d" % p for p in IDLE),
               "each idle connection still echoes through the restarted flowcop")
        # An out-of-window segment from the client's side on the first idle connection.
        net.nsexec(net.ns[0], PY, PEERS, "inject", net.inner[0], mac_of(net, net.ns[0], net.inner[0]),
                   mac_of(net, net.ns[1], net.inner[1]), CLIENT_IP, str(IDLE[0]), SERVER_IP, str(PORT))
        got = read_line(client, 40)
        after = second.listing(ctl_exe)
        m = Scrape(second.url)
        rc = second.stop()
        tap.eq(rc, 0, "the second flowcop stops cleanly")

        want = hashlib.sha256(random.Random(32).randbytes(SIZE)).hexdigest()
        tap.eq(got.split()[:2], ["got", want], "the download running across the restart arrives intact")
        evs = events(ev2)
        # The download ends (and its peers may close it with an RST) before the last listing: its last
        # event of the second run stands for its listing line.
        get_id = before.get(GET, {}).get("flow_id")
        last = [e for e in evs if e.get("flow_id") == get_id and e.get("sport") == GET]
        if GET not in after and last:
            after[GET] = last[-1]
        for p in IDLE + (GET,):
            b, a = before.get(p), after.get(p)
            name = "connection from port %d" % p
            # The idle ones stay ESTABLISHED; the download closes once it is done.
            tap.ok(a is not None and b is not None and a["flow_id"] == b["flow_id"] and
                   (a["state"] == b["state"] or p == GET) and abs(a["first_seen"] - b["first_seen"]) < DRIFT_S,
                   name + ": listed again with its flow id, first-seen time and state", (b, a))
            tap.ok(a is not None and b is not None and a["packets_orig"] > b["packets_orig"] and
                   a["packets_reply"] > b["packets_reply"] and a["bytes_reply"] > b["bytes_reply"],
                   name + ": its counters went on counting", (b, a))
        tap.ok(SHORT not in after, "the connection whose timeout ran out while down is no longer listed")
        short_id = before.get(SHORT, {}).get("flow_id")
        ends = [e for e in evs if e.get("event") == "destroy" and e.get("flow_id") == short_id]
        tap.ok(len(ends) == 1 and ends[0].get("reason") == "inactivity",
               "it ended at start as inactivity, under its old id", ends)
        restored = {(CLIENT_IP, p) for p in IDLE + (GET,)}
        again = [e for e in evs if e.get("event") == "new" and (e.get("src"), e.get("sport")) in restored]
        tap.eq(again, [], "no second new event for a restored connection")
        oow = m.total("flowcop_tcp_out_of_window_total")
        invalid = [e for e in evs if e.get("event") == "update" and e.get("flow_id") == before[IDLE[0]]["flow_id"]
                   and "invalid" in json.dumps(e)]
        tap.ok(oow >= 1 and invalid, "the window came back: the injected segment is out of window on the restored "
               "flow", {"out_of_window": oow, "events": invalid[:2]})
    except Exception as ex:  # setup or a tool failed: a failed test point, then clean up
        tap.ok(False, "the namespaces, peers and both flowcops ran", repr(ex))
    finally:
        for r in runs:
            r.stop()
        for p in procs:
            if p.stdin:
                try:
                    p.stdin.close()
                except OSError:
                    pass
            stop(p)
        net.remove()
        left = sh("ip", "netns", "list", check=False).stdout
        tap.ok(not any(ns in left for ns in net.ns), "the test's namespaces are gone", left)
    elapsed = time.monotonic() - t_start
    tap.ok(elapsed < 90, "the whole test took %.1f s (< 90 s)" % elapsed)
    tap.done()


if __name__ == "__main__":
    main()
