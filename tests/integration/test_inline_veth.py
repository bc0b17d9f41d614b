#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""flowcop inline between two real Linux TCP stacks.

Usage: test_inline_veth.py FLOWCOP_EXE TMPDIR

Two network namespaces (names unique to this run) each hold one end of a veth pair; the other
two ends stay in the root namespace and are flowcop's ports (net_af_packet0/1, --mode inline,
--clock tsc), so every frame between the namespaces crosses flowcop. Offloads are off on all
four ends (the kernel would otherwise hand af_packet frames larger than the MTU). A Python
http.server runs in one namespace; from the other, curl makes several connections (one a 4 MiB
download) and one connection stays idle past --tcp-timeout-established 3 before it sends its
request. Nothing is sent anywhere but between these two namespaces.

Checked: every transfer arrives intact (sha256) and the idle connection still works after its
flow expired; flowcop forwarded everything it received (no TX drops; each port's tx == the
other's rx); every connection's flow ended 'closed' once --tcp-timeout-time-wait 2 ran out after
its last packet, the idle one ended 'inactivity' 3 s after its handshake and its later traffic
was picked up as a new flow; per flow, packets and bytes per direction == what an AF_PACKET
sniffer in each namespace counted; and the run invariants. Every wait is bounded; namespaces,
veths and processes are removed on every exit path. Skips when not root or when ip, ethtool,
curl or the af_packet PMD are missing.
"""

import hashlib
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import threading
import time


from flowcoptest import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
SERVER_IP, CLIENT_IP, HTTP_PORT = "10.213.7.2", "10.213.7.1", 8080
BIG_PORT, SMALL_PORTS, IDLE_PORT = 40100, (40101, 40102, 40103), 40110
EST_S, TW_S, TICK_MS = 3, 2, 100
IDLE_S = 4.5
# Expiry may come up to one tick plus one cop interval after the deadline, plus scheduling slack.
LATE_S = 2 * TICK_MS / 1000 + 0.6


def sh(*args, check=True, timeout=10):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=timeout)


def us_of(t):
    return int(round(float(t) * 1_000_000))


class Net:
    """Two namespaces and two veth pairs; remove() undoes whatever was created."""

    def __init__(self):
        tag = "%x%03x" % (os.getpid() & 0xFFFF, random.randrange(4096))
        self.ns = ["fcA" + tag, "fcB" + tag]
        self.root = ["fa" + tag, "fb" + tag]      # flowcop's ports
        self.inner = ["fa" + tag + "i", "fb" + tag + "i"]
        self.made_ns, self.made_links = [], []

    def create(self):
        for ns, root, inner, ip in zip(self.ns, self.root, self.inner, (CLIENT_IP, SERVER_IP)):
            sh("ip", "netns", "add", ns)
            self.made_ns.append(ns)
            sh("ip", "link", "add", root, "type", "veth", "peer", "name", inner)
            self.made_links.append(root)
            sh("ip", "link", "set", inner, "netns", ns)
            # The root-side ends carry no addresses, and no IPv6 either, so the root stack sends
            # nothing through flowcop.
            sh("sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % root)
            sh("ip", "link", "set", root, "up")
            self.nsexec(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            self.nsexec(ns, "ip", "link", "set", "lo", "up")
            self.nsexec(ns, "ip", "addr", "add", ip + "/24", "dev", inner)
            self.nsexec(ns, "ip", "link", "set", inner, "up")
            sh("ethtool", "-K", root, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")
            self.nsexec(ns, "ethtool", "-K", inner, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")

    def nsexec(self, ns, *args, check=True, timeout=10):
        return sh("ip", "netns", "exec", ns, *args, check=check, timeout=timeout)

    def popen(self, ns, *args, **kw):
        return subprocess.Popen(["ip", "netns", "exec", ns] + list(args), **kw)

    def remove(self):
        for link in self.made_links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=10)
        for ns in self.made_ns:
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True, timeout=10)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def stop(p, sig=signal.SIGTERM, wait=5):
    if p is None or p.poll() is not None:
        return
    p.send_signal(sig)
    try:
        p.wait(wait)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def prerequisites():
    if os.geteuid() != 0:
        return "not root (network namespaces and veth pairs need CAP_NET_ADMIN)"
    for tool in ("ip", "ethtool", "curl"):
        if shutil.which(tool) is None:
            return "%s is not installed" % tool
    r = subprocess.run(["ip", "netns", "list"], capture_output=True)
    if r.returncode != 0:
        return "ip netns is not usable here"
    return None


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    why = prerequisites()
    if why:
        harness.skip_all(why)
    os.makedirs(tmp, exist_ok=True)
    t_start = time.monotonic()
    tap = harness.Tap()
    net = Net()
    procs = []
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    rnd = random.Random(20240601)
    files = {"big.bin": rnd.randbytes(4 << 20), "small.txt": b"flowcop inline test\n" * 50}
    for n, data in files.items():
        with open(os.path.join(www, n), "wb") as f:
            f.write(data)
    sums = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
    results = {}
    try:
        net.create()
        sniffers = []
        for ns, inner in zip(net.ns, net.inner):
            out = os.path.join(tmp, "sniff_%s.json" % ns)
            p = net.popen(ns, PY, os.path.join(HERE, "netns_tools.py"), "sniff", inner, out,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            sniffers.append((p, out))
        for p, _ in sniffers:
            # "ready" once bound; EOF if it died. Bounded: a sniffer that hangs fails the test.
            ready, _, _ = select.select([p.stdout], [], [], 10)
            line = p.stdout.readline() if ready else ""
            if line.strip() != "ready":
                stop(p)
                raise RuntimeError("sniffer did not start: " + (p.stderr.read() or "")[:500])
        server = net.popen(net.ns[1], PY, "-m", "http.server", str(HTTP_PORT), "--bind", SERVER_IP,
                           "--directory", www, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(server)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = net.nsexec(net.ns[1], "ss", "-Hltn", "sport = :%d" % HTTP_PORT, check=False)
            if str(HTTP_PORT) in r.stdout:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("http.server did not start listening")

        done = threading.Event()

        def traffic():
            try:
                idle = net.popen(net.ns[0], PY, os.path.join(HERE, "netns_tools.py"), "idle", SERVER_IP,
                                 str(HTTP_PORT), str(IDLE_PORT), str(IDLE_S), "/small.txt",
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                procs.append(idle)
                url = "http://%s:%d/" % (SERVER_IP, HTTP_PORT)
                for port, name in [(BIG_PORT, "big.bin")] + [(p, "small.txt") for p in SMALL_PORTS]:
                    out = os.path.join(tmp, "got_%d" % port)
                    r = net.nsexec(net.ns[0], "curl", "-sS", "--max-time", "20", "--local-port", str(port),
                                   "-o", out, url + name, check=False, timeout=25)
                    with open(out, "rb") if os.path.exists(out) else open(os.devnull, "rb") as f:
                        got = hashlib.sha256(f.read()).hexdigest()
                    results[port] = (r.returncode, r.stderr.strip(), got == sums[name], name)
                o, e = idle.communicate(timeout=20)
                results[IDLE_PORT] = (idle.returncode, e.strip(), o.strip())
            except Exception as ex:  # reported by the checks below (missing results)
                results["error"] = repr(ex)
            finally:
                done.set()

        def on_started(res):
            threading.Thread(target=traffic, daemon=True).start()
            # Stop once the traffic is over and every flow has ended (TIME_WAIT ran out).
            return lambda m: done.is_set() and harness.metric(m, "flowcop_flows_active") == 0 and \
                harness.metric(m, "flowcop_flows_created_total") > 0

        # 4096-frame kernel rings (the PMD's default is 512): on a loaded 2-core machine flowcop's lcore can
        # be descheduled for milliseconds while a 4 MiB download is in flight, and frames the kernel drops
        # for a full ring never reach flowcop (the 22.11 af_packet PMD does not report those drops).
        ring = "framecnt=4096,blocksz=4096,framesz=2048"
        vdevs = ["net_af_packet0,iface=%s,%s" % (net.root[0], ring), "net_af_packet1,iface=%s,%s" % (net.root[1], ring)]
        opts = ["--mode", "inline", "--clock", "tsc", "--tick-ms", str(TICK_MS), "--check-interval-ms", str(TICK_MS),
                "--tcp-timeout-established", str(EST_S), "--tcp-timeout-time-wait", str(TW_S)]
        res = harness.run(exe, vdevs, opts, tmpdir=tmp, on_started=on_started, timeout=45)
        done.wait(max(0.0, 30 - (time.monotonic() - t_start)))
        for p, _ in sniffers:
            stop(p)
        counts = []
        for _, out in sniffers:
            try:
                with open(out) as f:
                    counts.append(json.load(f))
            except (OSError, ValueError):
                counts.append({})
        check(tap, res, results, counts)
    except Exception as ex:  # setup or a tool failed: a failed test point, then clean up
        tap.ok(False, "the namespaces, veths, sniffers and server were set up and flowcop ran", repr(ex))
    finally:
        for p in procs:
            stop(p)
        net.remove()
        left = sh("ip", "netns", "list", check=False).stdout
        tap.ok(not any(ns in left for ns in net.ns), "the test's namespaces are gone", left)
    elapsed = time.monotonic() - t_start
    tap.ok(elapsed < 60, "the whole inline test took %.1f s (< 60 s)" % elapsed)
    tap.done()


def check(tap, res, results, counts):
    tap.ok("error" not in results, "the traffic driver ran", results.get("error"))
    for port in (BIG_PORT,) + SMALL_PORTS:
        rc, err, intact, name = results.get(port, (None, "no result", False, "?"))
        tap.ok(rc == 0 and intact, "curl from port %d fetched %s through flowcop intact (sha256)" % (port, name), err)
    rc, err, out = results.get(IDLE_PORT, (None, "no result", "{}"))
    body = json.loads(out or "{}") if rc == 0 else {}
    tap.ok(rc == 0 and body.get("status", "").endswith("200 OK") and
           body.get("sha256") == hashlib.sha256(b"flowcop inline test\n" * 50).hexdigest(),
           "the connection left idle for %.1f s still works after its flow expired" % IDLE_S, (rc, err, out))
    harness.check_invariants(tap, res, "inline")
    s = res.summary
    if s is None:
        return
    tap.ok(s["forwarded"] == s["received"] and s["tx_dropped"] == 0,
           "inline: every received packet was forwarded, none dropped", s)
    p = s["ports"]
    tap.ok(len(p) == 2 and p[0]["rx"] == p[1]["tx"] and p[1]["rx"] == p[0]["tx"] and p[0]["rx"] > 0,
           "inline: each port sent what the other received", p)
    sa, sb = counts
    by_port = {}
    pairs, _ = harness.pair_flows(res.events)
    for n, d in pairs:
        client = d["sport"] if d["src"] == CLIENT_IP else d["dport"]
        by_port.setdefault(client, []).append(d)
    for lst in by_port.values():
        lst.sort(key=lambda d: d["first_seen"])
    tap.eq(sorted(by_port), sorted((BIG_PORT, IDLE_PORT) + SMALL_PORTS),
           "inline: flows exist for exactly the test's connections")
    for port in (BIG_PORT,) + SMALL_PORTS + (IDLE_PORT,):
        lives = by_port.get(port, [])
        name = "inline: connection from port %d" % port
        if port == IDLE_PORT:
            ok = len(lives) == 2
            tap.ok(ok, name + ": two flows, before and after the idle time", lives)
            if not ok:
                continue
            a, b = lives
            late = (us_of(a["time"]) - us_of(a["last_seen"])) / 1e6 - EST_S
            tap.ok(a["reason"] == "inactivity" and a["state"] == "ESTABLISHED" and 0 <= late <= LATE_S and
                   (a["src"], a["sport"]) == (CLIENT_IP, port),
                   name + ": the handshake's flow expires by inactivity %d s after its last packet (+%.3f s)"
                   % (EST_S, late), a)
            late = (us_of(b["time"]) - us_of(b["last_seen"])) / 1e6 - TW_S
            tap.ok(b["reason"] == "closed" and 0 <= late <= LATE_S,
                   name + ": the request's flow (picked up mid-stream) ends closed %d s after its last packet (+%.3f s)"
                   % (TW_S, late), b)
        else:
            ok = len(lives) == 1
            tap.ok(ok, name + ": one flow", lives)
            if not ok:
                continue
            d = lives[0]
            late = (us_of(d["time"]) - us_of(d["last_seen"])) / 1e6 - TW_S
            tap.ok(d["reason"] == "closed" and d["state"] == "TIME_WAIT" and 0 <= late <= LATE_S and
                   (d["src"], d["sport"]) == (CLIENT_IP, port),
                   name + ": client-originated, ends closed %d s after its last packet (+%.3f s)" % (TW_S, late), d)
        c2s = "%s %d %s %d" % (CLIENT_IP, port, SERVER_IP, HTTP_PORT)
        s2c = "%s %d %s %d" % (SERVER_IP, HTTP_PORT, CLIENT_IP, port)
        sent_a, sent_b = sa.get(c2s + " out", [0, 0]), sb.get(s2c + " out", [0, 0])
        got_b, got_a = sb.get(c2s + " in", [0, 0]), sa.get(s2c + " in", [0, 0])
        orig = [sum(d["packets_orig"] for d in lives), sum(d["bytes_orig"] for d in lives)]
        reply = [sum(d["packets_reply"] for d in lives), sum(d["bytes_reply"] for d in lives)]
        # flowcop's own accounting is exact whatever the kernel did: what it counted per direction is what it
        # forwarded, so it must equal what arrived on the far side.
        tap.ok(sent_a[0] > 0 and (orig, reply) == (got_b, got_a),
               name + ": packets and bytes per direction == what arrived on the other side",
               {"flowcop": (orig, reply), "arrived": (got_b, got_a)})
        if (sent_a, sent_b) == (got_b, got_a):
            tap.ok(True, name + ": every frame the client and the server sent arrived on the other side")
        else:
            # Lost between a sender's veth and flowcop's af_packet socket (kernel ring full while flowcop was
            # not scheduled): outside flowcop, invisible to it, and repaired by TCP's retransmissions.
            tap.skip(name + ": every frame the client and the server sent arrived on the other side",
                     "the kernel dropped %d frames before flowcop's RX (sent %s, arrived %s)"
                     % (sent_a[0] - got_b[0] + sent_b[0] - got_a[0], (sent_a, sent_b), (got_b, got_a)))


if __name__ == "__main__":
    main()
