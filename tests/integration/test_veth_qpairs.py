#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""flowcop inline on 2 lcores between two real Linux TCP stacks, over af_packet ports with qpairs=2:
the kernel, not flowcop, spreads each port's packets over two queues (issue 20).

Usage: test_veth_qpairs.py FLOWCOP_EXE TMPDIR

The namespaces and veths are test_inline_veth.py's. Each of flowcop's two ports is DPDK's af_packet
PMD with qpairs=2: two sockets in one kernel fanout group (PACKET_FANOUT_HASH), so the kernel picks
the queue of every frame by its flow hash. Packets of a local TCP socket carry that socket's own
random hash, so a connection's two directions usually land on queues polled by different lcores;
frames injected by tcpreplay get the flow dissector's hash, symmetric, so both directions land on
one queue of the port they enter. af_packet has no RSS flowcop can program, so flowcop must run the
handoff plan (app/service/plan/port_plan.h): poll all four queues, two per lcore, and pass each packet
to the lcore that owns its flow.

Two kinds of traffic cross flowcop, one after the other: CONNS curl downloads of a 1 MiB file
(real TCP between the namespaces), then a capture crafted here (CRAFTED connections, both
directions, addresses outside the namespaces' subnet) replayed by tcpreplay into the client's veth.

Checked: the plan is handoff (no_rss) and every queue of both ports has a poller; both lcores
own flows and packets were handed off; every download arrives intact (sha256); every connection,
real or replayed, is exactly one flow, created once and tracked on one lcore, with its packets in
both directions counted there: for real TCP equal to what arrived on the far side (AF_PACKET
sniffers in each namespace), for the replay equal to the capture; the run invariants. Skips when
not root or when ip, ethtool, curl, tcpreplay or the af_packet PMD are missing. Every wait is
bounded; namespaces, veths and processes are removed on every exit path.
"""

import hashlib
import json
import os
import random
import select
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))

from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, SYN  # noqa: E402
import test_inline_veth as veth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONNS = 8
FIRST_PORT = 40200
CRAFTED = 24
TW_S = 1
T0_US = 1_700_000_000 * 1_000_000


def crafted_connection(i):
    """(client endpoint, frames in time order, packets client->server, packets server->client)."""
    c, s = "10.77.%d.%d" % (i // 200, i % 200 + 1), "10.78.0.1"
    cp, sp = 30000 + i, 443
    frames, up, down = [], 0, 0
    t = T0_US + i * 5_000

    def send(to_server, flags, payload=b""):
        nonlocal up, down
        if to_server:
            frames.append((t + len(frames) * 100, pcaplib.tcp_frame(c, s, cp, sp, flags, payload=payload)))
            up += 1
        else:
            frames.append((t + len(frames) * 100, pcaplib.tcp_frame(s, c, sp, cp, flags, payload=payload)))
            down += 1

    send(True, SYN)
    send(False, SYN | ACK)
    send(True, ACK)
    for k in range(1 + i % 3):
        send(True, PSH | ACK, b"q%d" % k * 20)
        send(False, PSH | ACK, b"r" * (200 + 50 * k))
    send(True, FIN | ACK)
    send(False, FIN | ACK)
    send(True, ACK)
    return (c, cp), frames, up, down


def prerequisites():
    why = veth.prerequisites()
    if why:
        return why
    if shutil.which("tcpreplay") is None:
        return "tcpreplay is not installed"
    return None


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    why = prerequisites()
    if why:
        harness.skip_all(why)
    os.makedirs(tmp, exist_ok=True)
    t_start = time.monotonic()
    tap = harness.Tap()
    net = veth.Net()
    procs = []
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    body = random.Random(20261202).randbytes(1 << 20)
    with open(os.path.join(www, "file.bin"), "wb") as f:
        f.write(body)
    want_sum = hashlib.sha256(body).hexdigest()
    crafted, replay = {}, []
    for i in range(CRAFTED):
        client, frames, up, down = crafted_connection(i)
        crafted[client] = (up, down)
        replay += frames
    replay.sort(key=lambda r: r[0])
    replay_pcap = os.path.join(tmp, "replay.pcap")
    pcaplib.write_pcap(replay_pcap, replay)
    results = {}
    try:
        net.create()
        sniffers = []
        for ns, inner in zip(net.ns, net.inner):
            out = os.path.join(tmp, "sniff_%s.json" % ns)
            p = net.popen(ns, veth.PY, os.path.join(HERE, "netns_tools.py"), "sniff", inner, out,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            sniffers.append((p, out))
        for p, _ in sniffers:
            ready, _, _ = select.select([p.stdout], [], [], 10)
            line = p.stdout.readline() if ready else ""
            if line.strip() != "ready":
                veth.stop(p)
                raise RuntimeError("sniffer did not start: " + (p.stderr.read() or "")[:500])
        server = net.popen(net.ns[1], veth.PY, "-m", "http.server", str(veth.HTTP_PORT), "--bind", veth.SERVER_IP,
                           "--directory", www, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(server)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = net.nsexec(net.ns[1], "ss", "-Hltn", "sport = :%d" % veth.HTTP_PORT, check=False)
            if str(veth.HTTP_PORT) in r.stdout:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("http.server did not start listening")

        done = threading.Event()

        def traffic():
            try:
                url = "http://%s:%d/file.bin" % (veth.SERVER_IP, veth.HTTP_PORT)
                for i in range(CONNS):
                    port = FIRST_PORT + i
                    out = os.path.join(tmp, "got_%d" % port)
                    r = net.nsexec(net.ns[0], "curl", "-sS", "--max-time", "15", "--local-port", str(port),
                                   "-o", out, url, check=False, timeout=20)
                    with open(out, "rb") if os.path.exists(out) else open(os.devnull, "rb") as f:
                        got = hashlib.sha256(f.read()).hexdigest()
                    results[port] = (r.returncode, r.stderr.strip(), got == want_sum)
                r = net.nsexec(net.ns[0], "tcpreplay", "-q", "--pps", "2000", "-i", net.inner[0], replay_pcap,
                               check=False, timeout=20)
                results["tcpreplay"] = (r.returncode, (r.stderr or r.stdout).strip()[-500:])
            except Exception as ex:  # reported by the checks below
                results["error"] = repr(ex)
            finally:
                done.set()

        def on_started(res):
            threading.Thread(target=traffic, daemon=True).start()
            return lambda m: done.is_set() and harness.metric(m, "flowcop_flows_active") == 0 and \
                harness.metric(m, "flowcop_flows_created_total") >= CONNS + CRAFTED

        ring = "qpairs=2,framecnt=4096,blocksz=4096,framesz=2048"
        vdevs = ["net_af_packet0,iface=%s,%s" % (net.root[0], ring), "net_af_packet1,iface=%s,%s" % (net.root[1], ring)]
        opts = ["--mode", "inline", "--clock", "tsc", "--tick-ms", "100", "--check-interval-ms", "100",
                "--tcp-timeout-time-wait", str(TW_S)]
        res = harness.run(exe, vdevs, opts, lcores="0,1", tmpdir=tmp, on_started=on_started, timeout=60)
        done.wait(max(0.0, 40 - (time.monotonic() - t_start)))
        for p, _ in sniffers:
            veth.stop(p)
        counts = []
        for _, out in sniffers:
            try:
                with open(out) as f:
                    counts.append(json.load(f))
            except (OSError, ValueError):
                counts.append({})
        check(tap, res, results, counts, crafted)
    except Exception as ex:  # setup or a tool failed: a failed test point, then clean up
        tap.ok(False, "the namespaces, veths, sniffers and server were set up and flowcop ran", repr(ex))
    finally:
        for p in procs:
            veth.stop(p)
        net.remove()
        left = harness_ns_list()
        tap.ok(not any(ns in left for ns in net.ns), "the test's namespaces are gone", left)
    elapsed = time.monotonic() - t_start
    tap.ok(elapsed < 80, "the whole qpairs test took %.1f s (< 80 s)" % elapsed)
    tap.done()


def harness_ns_list():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout


def check(tap, res, results, counts, crafted):
    err = res.stderr
    plan = [line for line in err.splitlines() if line.startswith("flowcop: ownership plan ")]
    tap.ok(len(plan) == 1 and plan[0].startswith("flowcop: ownership plan handoff (no_rss): port 0 (net_af_packet0)"),
           "af_packet with qpairs=2 on 2 lcores runs the handoff plan (no RSS)", err[-3000:])
    polled = sorted(line.strip() for line in err.splitlines() if " polls port " in line)
    tap.eq(polled, sorted(["flowcop:   lcore %d polls port %d (net_af_packet%d) queue %d" % (q, p, p, q)
                           for p in (0, 1) for q in (0, 1)]),
           "all four queues are polled: queue q of each port by lcore q")
    tap.ok("error" not in results, "the traffic driver ran", results.get("error"))
    for i in range(CONNS):
        port = FIRST_PORT + i
        rc, e, intact = results.get(port, (None, "no result", False))
        tap.ok(rc == 0 and intact, "curl from port %d fetched 1 MiB through flowcop intact (sha256)" % port, e)
    tap.ok(results.get("tcpreplay", (None,))[0] == 0, "tcpreplay injected the crafted capture",
           results.get("tcpreplay"))
    harness.check_invariants(tap, res, "qpairs")
    m = res.metrics or []
    sent = harness.metric(m, "flowcop_handoff_sent_total")
    received = harness.metric(m, "flowcop_handoff_received_total")
    dropped = harness.metric(m, "flowcop_handoff_dropped_total")
    print("# handed off %d packets (%d received by their owner, %d dropped) of %s received"
          % (sent, received, dropped, res.summary and res.summary.get("received")))
    tap.ok(sent > 0 and sent == received + dropped, "packets were handed off between the lcores, and every one "
           "handed off was received by its owner or counted as dropped", (sent, received, dropped))
    tap.eq(harness.metric(m, "flowcop_ownership_plan_info", plan="handoff", reason="no_rss"), 1,
           "flowcop_ownership_plan_info says handoff, no_rss")
    s = res.summary
    if s:
        tap.ok(s["forwarded"] + s["tx_dropped"] + dropped == s["received"] and s["tx_dropped"] == 0,
               "inline: every received packet was forwarded exactly once", (s, dropped))
    tap.eq(sorted({e["lcore"] for e in res.events}), [0, 1], "both lcores own flows")

    by_conn = {}
    for e in res.events:
        by_conn.setdefault(harness.conn_key(e), []).append(e)
    twice = {k: sorted({e["lcore"] for e in v}) for k, v in by_conn.items()
             if len(v) != 2 or len({e["lcore"] for e in v}) != 1}
    tap.eq(twice, {}, "every connection is one flow, created once and destroyed once, on one lcore")
    pairs, _ = harness.pair_flows(res.events)
    flows = {harness.conn_key(d): d for _, d in pairs}

    sa, sb = counts
    for i in range(CONNS):
        port = FIRST_PORT + i
        key = ((), min((veth.CLIENT_IP, port), (veth.SERVER_IP, veth.HTTP_PORT)),
               max((veth.CLIENT_IP, port), (veth.SERVER_IP, veth.HTTP_PORT)))
        d = flows.get(key)
        name = "real TCP from port %d" % port
        if not tap.ok(d is not None, name + ": tracked", sorted(flows)[:5]):
            continue
        c2s = "%s %d %s %d" % (veth.CLIENT_IP, port, veth.SERVER_IP, veth.HTTP_PORT)
        s2c = "%s %d %s %d" % (veth.SERVER_IP, veth.HTTP_PORT, veth.CLIENT_IP, port)
        got_b, got_a = sb.get(c2s + " in", [0, 0]), sa.get(s2c + " in", [0, 0])
        fc = ([d["packets_orig"], d["bytes_orig"]], [d["packets_reply"], d["bytes_reply"]])
        tap.ok((d["src"], d["sport"]) == (veth.CLIENT_IP, port) and fc == (got_b, got_a) and got_a[0] > 700,
               name + ": client-originated, both directions counted on lcore %d == what arrived on the far side"
               % d["lcore"], {"flowcop": fc, "arrived": (got_b, got_a)})
    for (c, cp), (up, down) in sorted(crafted.items()):
        key = ((), min((c, cp), ("10.78.0.1", 443)), max((c, cp), ("10.78.0.1", 443)))
        d = flows.get(key)
        name = "replayed %s port %d" % (c, cp)
        if not tap.ok(d is not None, name + ": tracked"):
            continue
        tap.eq(sorted([d["packets_orig"], d["packets_reply"]]), sorted([up, down]),
               name + ": both directions counted on lcore %d == the capture" % d["lcore"])


if __name__ == "__main__":
    main()
