# SPDX-License-Identifier: BSD-3-Clause
"""flowcop's own work per packet without I/O: instructions and simulated cache misses of Worker::handle().

This VM has no PMU (perf cannot count instructions), so, as profile_packet.py does for the whole path
through the pcap vdev, the count comes from valgrind's callgrind. The program is tests/bench/
bench_packet_path.cpp --mode callgrind: it builds flows_pcap.py's frames as mbufs once, warms every flow up
(both directions, then checks that every flow is steady), and then runs --bursts bursts (of flowcop's
kBurst frames) of the chosen stream (uniform: the pcap's two passes; zipf: popularity ~ 1/rank^s) twice,
each bracketed by callgrind client requests (collection is off outside them, --collect-atstart=no):
  dump .1  flowcop: Worker::handle() per burst (parse, the table step, the free of monitor mode), with the
           loop's refcount per packet and TSC read per burst;
  dump .2  free only: the same loop with rte_pktmbuf_free_bulk in place of handle() (rxonly-like).
Per packet: instructions (Ir), D1 and last-level misses (a simulated cache without prefetcher: an upper
bound of what the hardware pays, not a time) of both, their difference (flowcop's own work), and the
inclusive rows of flowcop's functions in dump .1 (profile_packet.py's rows). --branch-sim adds valgrind's
simulated mispredicted branches (conditional + indirect; a simple predictor: a pointer, not the hardware's).
    /usr/bin/python3 deploy/bench/profile_handle.py --build build --flows 10000,1000000
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_packet  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENTS = profile_packet.EVENTS
ROWS = [r for r in profile_packet.FLOWCOP_ROWS if "pcap" not in r[0] and "Worker::run" not in r[0]]


def totals(path):
    """{event: count} of one callgrind dump, from its events: and summary: lines."""
    events, summary = None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") or (summary is None and line.startswith("totals:")):
                summary = [int(v) for v in line.split()[1:]]
    if events is None or summary is None:
        raise RuntimeError("%s: no events or summary line" % path)
    return dict(zip(events, summary + [0] * (len(events) - len(summary))))


def profile(a, flows, popularity, workdir):
    out = os.path.join(workdir, "callgrind.%d.%s" % (flows, popularity))
    for f in glob.glob(out + "*"):
        os.remove(f)
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--cache-sim=yes",
           "--callgrind-out-file=" + out + ".%p"]
    if a.ll:
        cmd.append("--LL=" + a.ll)
    if a.branch_sim:
        cmd.append("--branch-sim=yes")
    cmd += [os.path.join(a.build, "tests", "bench", "bench_packet_path"), "--mode", "callgrind", "--flows",
            str(flows), "--popularity", popularity, "--zipf-s", str(a.zipf_s), "--bursts", str(a.bursts)]
    if a.timeout_floor:
        cmd += ["--timeout-floor", str(a.timeout_floor)]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = os.path.join(workdir, "bench-%d-%s.log" % (flows, popularity))
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    m = re.search(r"packets (\d+) in each of 2 dumps", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError("bench_packet_path under callgrind failed (exit %d); see %s" % (r.returncode, log))
    packets = int(m.group(1))
    dumps = {}
    for f in glob.glob(out + ".*"):
        suffix = f.rsplit(".", 1)[1]
        if suffix in ("1", "2"):
            dumps[suffix] = f
    if set(dumps) != {"1", "2"}:
        raise RuntimeError("expected dumps .1 and .2 of %s*, found %s" % (out, sorted(glob.glob(out + "*"))))
    return packets, dumps["1"], dumps["2"]


def per_packet(t, n):
    return {e: t.get(e, 0) / n for e in EVENTS}


def line(label, v):
    return "| %s | %.0f | %.2f | %.2f |" % (label, v["Ir"], v["D1mr"] + v["D1mw"], v["DLmr"] + v["DLmw"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--flows", default="10000,1000000", help="comma-separated flow counts")
    ap.add_argument("--popularity", default="uniform,zipf", help="comma-separated: uniform, zipf")
    ap.add_argument("--zipf-s", type=float, default=1.0)
    ap.add_argument("--bursts", type=int, default=20000, help="bursts of kBurst frames in each dump (default 20000)")
    ap.add_argument("--ll", default="", help="valgrind --LL=size,assoc,line (default: the host's, as valgrind sees it)")
    ap.add_argument("--branch-sim", action="store_true", help="also simulate branch prediction (valgrind --branch-sim)")
    ap.add_argument("--timeout-floor", type=int, default=0,
                    help="bench_packet_path --timeout-floor: under valgrind a pass over 10^7 flows takes longer than "
                         "the steady path's 10 s horizon (see its header); 0: flowcop's timeouts")
    ap.add_argument("--workdir", default=None, help="keep the dumps and logs here (default: a temporary directory)")
    a = ap.parse_args(argv)
    profile_packet.need_valgrind()
    a.build = os.path.abspath(a.build)
    workdir = a.workdir or tempfile.mkdtemp(prefix="profile_handle_")
    os.makedirs(workdir, exist_ok=True)
    for flows in [int(x) for x in a.flows.split(",")]:
        for pop in a.popularity.split(","):
            packets, fc_dump, fo_dump = profile(a, flows, pop, workdir)
            fc_t, fo_t = totals(fc_dump), totals(fo_dump)
            fc, fo = per_packet(fc_t, packets), per_packet(fo_t, packets)
            own = {e: fc[e] - fo[e] for e in EVENTS}
            print("\n%d flows, %s, %d packets a dump (%s)" % (flows, pop if pop == "uniform" else
                                                               "zipf s=%.2f" % a.zipf_s, packets, workdir))
            print("| per packet | Ir | D1 misses | LL misses |\n|---|---:|---:|---:|")
            print(line("flowcop: Worker::handle() loop", fc))
            print(line("free only (rxonly-like)", fo))
            print(line("**own work** (difference)", own))
            print("| ratio flowcop / free only (Ir) | %.2f | | |" % (fc["Ir"] / fo["Ir"] if fo["Ir"] else 0))
            if "Bcm" in fc_t:
                mis = [(t.get("Bcm", 0) + t.get("Bim", 0)) / packets for t in (fc_t, fo_t)]
                print("| mispredicted branches (simulated): flowcop / free only / own | %.2f / %.2f / %.2f | | |" %
                      (mis[0], mis[1], mis[0] - mis[1]))
            rows = profile_packet.annotate(fc_dump)
            for label, regex in ROWS:
                row = profile_packet.pick(rows, regex)
                if row:
                    print(line(label.replace("|", "/"), per_packet(row, packets)))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
