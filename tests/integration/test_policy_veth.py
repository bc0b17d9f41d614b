#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""flowcop inline with --policy between two real Linux TCP stacks (issue 31).

Usage: test_policy_veth.py FLOWCOP_EXE TMPDIR

The namespaces and veths of test_inline_veth.py (its Net class), flowcop inline on af_packet with a
policy that accepts established and related traffic, drops invalid, admits new connections to the
HTTP port only, and drops everything else (ARP passes as untracked). Checked, with real peers:
- a download on the allowed port arrives intact (sha256), before and after the reloads;
- a connection to a denied port fails (its SYNs are dropped), no flow is created for it (no new
  event), and the default rule counted exactly the SYNs the client sent there (an AF_PACKET sniffer in
  the client's namespace counts them);
- an ICMP fragmentation-needed quoting an open connection passes as related; a spoofed RST far outside the
  window, sent from the server's namespace through a raw socket, is dropped as invalid (an AF_PACKET
  socket in the client's namespace never sees it, and the invalid rule counted exactly it), while an RST
  at the exact next sequence number passes and resets the client's connection;
- 10,000 SYNs to denied ports (raw socket, paced) create no flow; the default rule counted them all;
- SIGHUP with a broken file keeps the running policy (the denied port stays denied, downloads work)
  and counts a failed reload; SIGHUP with the file back (a comment changed) counts a successful one
  and the rules' counters carry over;
- flowcopctl -P lists the rules with their counters; flowcopctl --policy-reload with a broken file fails
  with file:line:column and keeps the policy; /flowcop/policy/reload takes the good one;
- the run's invariants, inline: received = forwarded + dropped by policy (+ other drops).
On each layout of the matrix that reads a port (one lcore; two, the handoff plan). Every wait is bounded; namespaces, veths and processes are removed on every exit path. Skips when not
root or when ip, ethtool, curl or the af_packet PMD are missing.
"""

import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from flowcoptest import harness, layouts
from flowcoptest.telemetry import telemetry
from test_inline_veth import CLIENT_IP, SERVER_IP, Net, prerequisites, stop

HERE = os.path.dirname(os.path.abspath(__file__))
CTL = os.path.join(HERE, "..", "..", "app", "flowcopctl", "flowcopctl")
PY = "/usr/bin/python3"
HTTP_PORT, DENIED_PORT = 8080, 9090
DL_PORTS = (40300, 40301, 40302)
DENIED_SPORT = 40310
WATCH_PORT = 40320
FLOOD = 10000

POLICY = """# issue 31's veth test
ct state established,related accept comment "return"
ct state invalid drop comment "invalid"
ct state untracked accept comment "arp"
ct state new tcp dport %d accept comment "web"
policy drop
""" % HTTP_PORT
BROKEN = POLICY.replace("tcp dport %d" % HTTP_PORT, "tcp dport http")


def connect_fails(net, ns):
    """A connect from DENIED_SPORT to the denied port, 2.5 s at most: 'timeout' when its SYNs vanish."""
    code = ("import socket,sys\ns=socket.socket()\ns.bind(('%s',%d))\ns.settimeout(2.5)\n"
            "try:\n s.connect(('%s',%d)); print('connected')\n"
            "except socket.timeout: print('timeout')\n"
            "except OSError as e: print('error', e)\n") % (CLIENT_IP, DENIED_SPORT, SERVER_IP, DENIED_PORT)
    return net.nsexec(ns, PY, "-c", code, check=False, timeout=10).stdout.strip()


class Prefixed:
    """The Tap, each point's name prefixed with the layout it ran on."""

    def __init__(self, tap, prefix):
        self.tap, self.prefix = tap, prefix

    def ok(self, cond, name, diag=None, **kw):
        return self.tap.ok(cond, self.prefix + name, diag, **kw)

    def eq(self, got, want, name):
        return self.tap.eq(got, want, self.prefix + name)

    def skip(self, name, why):
        return self.tap.skip(self.prefix + name, why)


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    why = prerequisites()
    if why:
        harness.skip_all(why)
    tap = harness.Tap()
    # The layout matrix's layouts that read a port (af_packet here): one lcore, and two (the handoff plan).
    for lay in [l for l in layouts.selected() if l.port == "pcap"]:
        scenario(Prefixed(tap, "%s: " % lay.name), exe, os.path.join(tmp, lay.name), lay.lcores)
    tap.done()


def scenario(tap, exe, tmp, lcores):
    os.makedirs(tmp, exist_ok=True)
    t_start = time.monotonic()
    net = Net()
    procs = []
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    data = os.urandom(1 << 20)
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(data)
    want = hashlib.sha256(data).hexdigest()
    policy = os.path.join(tmp, "policy.nft")
    with open(policy, "w") as f:
        f.write(POLICY)
    results = {}
    try:
        net.create()
        sniff_out = os.path.join(tmp, "sniff_client.json")
        sniffer = net.popen(net.ns[0], PY, os.path.join(HERE, "netns_tools.py"), "sniff", net.inner[0], sniff_out,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(sniffer)
        ready, _, _ = select.select([sniffer.stdout], [], [], 10)
        if (sniffer.stdout.readline() if ready else "").strip() != "ready":
            raise RuntimeError("sniffer did not start")
        server = net.popen(net.ns[1], PY, "-m", "http.server", str(HTTP_PORT), "--bind", SERVER_IP,
                           "--directory", www, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(server)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if str(HTTP_PORT) in net.nsexec(net.ns[1], "ss", "-Hltn", "sport = :%d" % HTTP_PORT, check=False).stdout:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("http.server did not start listening")
        done = threading.Event()
        state = {}

        def download(port):
            out = os.path.join(tmp, "got_%d" % port)
            r = net.nsexec(net.ns[0], "curl", "-sS", "--max-time", "15", "--local-port", str(port), "-o", out,
                           "http://%s:%d/big.bin" % (SERVER_IP, HTTP_PORT), check=False, timeout=20)
            ok = os.path.exists(out) and hashlib.sha256(open(out, "rb").read()).hexdigest() == want
            return r.returncode == 0 and ok

        def reloads(result):
            return harness.metric(harness.scrape(state["url"]), "flowcop_policy_reloads_total",
                                  result=result)

        def wait_reload(result, n):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if reloads(result) >= n:
                    return True
                time.sleep(0.1)
            return False

        def peers(url):
            """An open connection; an ICMP frag-needed about it, a spoofed out-of-window RST and an in-window
            one from the server's side, watched from the client's namespace."""
            tool = os.path.join(HERE, "policy_peers.py")
            w = net.popen(net.ns[0], PY, tool, "watch", net.inner[0], SERVER_IP, str(HTTP_PORT), str(WATCH_PORT),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(w)
            ready, _, _ = select.select([w.stdout], [], [], 10)
            seqs = json.loads(w.stdout.readline() if ready else "{}")
            if seqs.get("rcv_nxt") is None:
                raise RuntimeError("the watched connection did not open: " + w.stderr.read()[:300])
            before = harness.scrape(url)
            inject = ["ip", "netns", "exec", net.ns[1], PY, tool]
            subprocess.run(inject + ["fragneeded", SERVER_IP, CLIENT_IP, CLIENT_IP, str(WATCH_PORT), SERVER_IP,
                                     str(HTTP_PORT), str(seqs["snd_nxt"]), "1200"], check=True, timeout=10)
            subprocess.run(inject + ["rst", SERVER_IP, str(HTTP_PORT), CLIENT_IP, str(WATCH_PORT),
                                     str((seqs["rcv_nxt"] + 0x40000000) & 0xFFFFFFFF)], check=True, timeout=10)
            time.sleep(0.5)
            mid = harness.scrape(url)
            subprocess.run(inject + ["rst", SERVER_IP, str(HTTP_PORT), CLIENT_IP, str(WATCH_PORT),
                                     str(seqs["rcv_nxt"])], check=True, timeout=10)
            time.sleep(0.5)
            w.stdin.write("\n")
            w.stdin.flush()
            ready, _, _ = select.select([w.stdout], [], [], 10)
            seen = json.loads(w.stdout.readline() if ready else "{}")
            results["peers"] = dict(seen, rcv_nxt=seqs["rcv_nxt"])
            results["invalid_dropped"] = (harness.metric(mid, "flowcop_policy_packets_total", rule="1 invalid") -
                                          harness.metric(before, "flowcop_policy_packets_total", rule="1 invalid"))
            results["related_accepted"] = (
                harness.metric(mid, "flowcop_policy_verdicts_total", state="related", action="accept") -
                harness.metric(before, "flowcop_policy_verdicts_total", state="related", action="accept"))

        def flood(url):
            """10,000 SYNs to denied ports: none may create a flow."""
            before = harness.scrape(url)
            subprocess.run(["ip", "netns", "exec", net.ns[0], PY, os.path.join(HERE, "policy_peers.py"), "synflood",
                            CLIENT_IP, SERVER_IP, "20000", str(FLOOD)], check=True, timeout=30)
            deadline = time.monotonic() + 10
            last = -1
            while time.monotonic() < deadline:  # until flowcop has read what reached it (two equal scrapes)
                time.sleep(0.3)
                after = harness.scrape(url)
                rx = harness.metric(after, "flowcop_port_rx_packets_total")
                if rx == last:
                    break
                last = rx
            d = {k: harness.metric(after, k, **l) - harness.metric(before, k, **l) for k, l in (
                ("flowcop_port_rx_packets_total", {}), ("flowcop_port_rx_missed_total", {}),
                ("flowcop_flows_created_total", {}), ("flowcop_policy_packets_total", {"rule": "4 policy"}),
                ("flowcop_policy_verdicts_total", {"state": "untracked"}))}
            results["flood"] = (d, harness.metric(after, "flowcop_flows_active"))
            results["default_before_flood"] = harness.metric(before, "flowcop_policy_packets_total", rule="4 policy")

        def control(pid):
            """flowcopctl -P and --policy-reload, and /flowcop/policy/reload, against this run's flowcop."""
            prefix = "fcit%d_" % os.getpid()
            found = [d for d in os.listdir(harness.runtime_dir("x").rsplit("/", 1)[0]) if d.startswith(prefix)]
            if len(found) != 1:
                raise RuntimeError("cannot tell this run's file prefix: %r" % found)
            ctl = [PY, CTL, "--file-prefix=" + found[0]]
            r = subprocess.run(ctl + ["-P", "-o", "json"], capture_output=True, text=True, timeout=20)
            results["ctl_list"] = (r.returncode, [json.loads(l) for l in r.stdout.splitlines() if l.strip()])
            with open(policy, "w") as f:
                f.write(BROKEN)
            r = subprocess.run(ctl + ["--policy-reload"], capture_output=True, text=True, timeout=20)
            results["ctl_broken"] = (r.returncode, r.stderr.strip())
            with open(policy, "w") as f:
                f.write(POLICY)
            tel = os.path.join(harness.runtime_dir(found[0]), "dpdk_telemetry.v2")
            results["tel_reload"] = telemetry(tel, "/flowcop/policy/reload")
            results["tel_list"] = telemetry(tel, "/flowcop/policy")

        def traffic():
            try:
                results["download"] = download(DL_PORTS[0])
                results["denied"] = connect_fails(net, net.ns[0])
                peers(state["url"])
                flood(state["url"])
                # A broken file on SIGHUP: the running policy stays.
                with open(policy, "w") as f:
                    f.write(BROKEN)
                os.kill(state["pid"], signal.SIGHUP)
                results["failed_reload_counted"] = wait_reload("failed", 1)
                results["download_after_broken"] = download(DL_PORTS[1])
                # The file back, one comment changed: a successful reload; the counts carry over.
                before = harness.scrape(state["url"])
                with open(policy, "w") as f:
                    f.write(POLICY.replace('"web"', '"http"'))
                os.kill(state["pid"], signal.SIGHUP)
                results["ok_reload_counted"] = wait_reload("ok", 1)
                after = harness.scrape(state["url"])
                results["carried"] = (harness.metric(before, "flowcop_policy_packets_total", rule="0 return"),
                                      harness.metric(after, "flowcop_policy_packets_total", rule="0 return"))
                results["download_after_reload"] = download(DL_PORTS[2])
                control(state["pid"])
            except Exception as ex:  # reported by the checks below
                results["error"] = repr(ex)
            finally:
                done.set()

        def on_started(res):
            state["pid"], state["url"] = res.pid, res.metrics_url
            threading.Thread(target=traffic, daemon=True).start()
            return lambda m: done.is_set() and harness.metric(m, "flowcop_flows_active") == 0

        ring = "framecnt=4096,blocksz=4096,framesz=2048"
        vdevs = ["net_af_packet0,iface=%s,%s" % (net.root[0], ring), "net_af_packet1,iface=%s,%s" % (net.root[1], ring)]
        opts = ["--mode", "inline", "--clock", "tsc", "--tick-ms", "100", "--check-interval-ms", "100",
                "--tcp-timeout-time-wait", "1", "--policy", policy]
        res = harness.run(exe, vdevs, opts, lcores=lcores, tmpdir=tmp, on_started=on_started, timeout=50)
        done.wait(max(0.0, 40 - (time.monotonic() - t_start)))
        stop(sniffer)
        try:
            with open(sniff_out) as f:
                counts = json.load(f)
        except (OSError, ValueError):
            counts = {}
        check(tap, res, results, counts)
    except Exception as ex:
        tap.ok(False, "the namespaces, veths, sniffer and server were set up and flowcop ran", repr(ex))
    finally:
        for p in procs:
            stop(p)
        net.remove()
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        tap.ok(not any(ns in left for ns in net.ns), "the test's namespaces are gone", left)
    tap.ok(time.monotonic() - t_start < 70, "the whole policy scenario took < 70 s")


def check(tap, res, results, counts):
    tap.ok("error" not in results, "the traffic driver ran", results.get("error"))
    tap.ok(results.get("download"), "a download on the allowed port arrives intact (sha256)")
    tap.eq(results.get("denied"), "timeout", "a connect to the denied port fails: its SYNs are dropped")
    tap.ok(results.get("failed_reload_counted"), "SIGHUP with a broken file counts a failed reload")
    tap.ok(results.get("download_after_broken"), "after the broken reload the old policy still admits downloads")
    tap.ok(results.get("ok_reload_counted"), "SIGHUP with a good file counts a successful reload")
    before, after = results.get("carried", (0, -1))
    tap.ok(before > 0 and after >= before, "the unchanged rule's counter carried over the reload", (before, after))
    tap.ok(results.get("download_after_reload"), "after the good reload downloads still arrive intact")
    seen = results.get("peers", {})
    tap.eq(seen.get("icmp"), [[3, 4]], "an ICMP fragmentation-needed about an open connection passes (related)")
    tap.eq(results.get("related_accepted"), 1, "flowcop judged that error related and accepted it")
    tap.eq(results.get("invalid_dropped"), 1, "the spoofed out-of-window RST was judged invalid and dropped")
    tap.eq(seen.get("rsts"), [seen.get("rcv_nxt")],
           "the client's namespace saw only the in-window RST, never the out-of-window one")
    tap.ok(seen.get("reset") is True, "the in-window RST ended the client's connection (ECONNRESET)", seen)
    resets = [e for e in res.destroys() if WATCH_PORT in (e.get("sport"), e.get("dport"))]
    tap.ok(len(resets) == 1 and resets[0]["reason"] == "reset", "flowcop ended that flow 'reset'", resets)
    rc, rows = results.get("ctl_list", (None, []))
    rules = [r for r in rows if "rule" in r]
    tap.ok(rc == 0 and [r["rule"] for r in rules] == [0, 1, 2, 3, 4] and rules[3]["comment"] == "http" and
           rules[4]["text"] == "policy drop" and rules[4]["packets"] >= results.get("default_before_flood", 1) and
           rules[0]["packets"] > 0,
           "flowcopctl -P lists the rules (the reloaded comment included) with their counters", rows)
    rc, err = results.get("ctl_broken", (None, ""))
    tap.ok(rc == 1 and "policy reload failed" in err and "policy.nft:5:" in err,
           "flowcopctl --policy-reload with a broken file fails with file:line:column, the policy stays", (rc, err))
    tel = results.get("tel_reload") or {}
    tap.ok(tel.get("reloaded") == 1,
           "/flowcop/policy/reload reloads the good file", tel)
    lst = results.get("tel_list") or {}
    tap.ok(lst.get("reloads") == 2 and lst.get("reload_failures") == 2 and len(lst.get("packets", [])) == 5,
           "/flowcop/policy counts 2 good and 2 failed reloads and lists 5 rules", lst)
    d, active = results.get("flood", ({}, -1))
    judged = d.get("flowcop_policy_packets_total", -1)
    tap.ok(d.get("flowcop_flows_created_total") == 0 and active == 0 and judged > 0 and
           judged == d.get("flowcop_port_rx_packets_total", 0) - d.get("flowcop_policy_verdicts_total", 0),
           "%d SYNs to denied ports: every one flowcop read was judged by the default rule (ARP aside), no flow "
           "created, the table empty" % FLOOD, (d, active))
    if judged + d.get("flowcop_port_rx_missed_total", 0) == FLOOD:
        tap.ok(True, "every SYN of the flood reached flowcop or is counted missed by its port")
    else:
        tap.skip("every SYN of the flood reached flowcop or is counted missed by its port",
                 "the kernel lost %d between the sender and the af_packet ring, uncounted"
                 % (FLOOD - judged - d.get("flowcop_port_rx_missed_total", 0)))
    news = [e for e in res.news() if DENIED_PORT in (e.get("sport"), e.get("dport"))]
    tap.eq(news, [], "no flow was created for the denied port (no new event)")
    syns = counts.get("%s %d %s %d out" % (CLIENT_IP, DENIED_SPORT, SERVER_IP, DENIED_PORT), [0, 0])[0]
    dropped = results.get("default_before_flood", -1)  # the denied connect came before the flood
    tap.ok(syns > 0 and dropped == syns,
           "the default rule counted exactly the SYNs the client sent to the denied port", (dropped, syns))
    harness.check_invariants(tap, res, "inline")
    s = res.summary
    if s is not None:
        flood = d.get("flowcop_policy_packets_total", 0)
        tap.ok(s["policy_dropped"] == syns + flood + 1 and s["policy_new_dropped"] == syns + flood and
               s["policy_refused_dropped"] == 1 and
               s["forwarded"] + s["policy_dropped"] + s["tx_dropped"] == s["received"],
               "inline: received = forwarded + dropped by policy (+ tx drops); the policy dropped the SYNs (no flow) "
               "and the flood (no flow) and the spoofed RST (not on its flow), nothing else", s)


if __name__ == "__main__":
    main()
