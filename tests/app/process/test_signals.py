# SPDX-License-Identifier: BSD-3-Clause
"""Signals (issue 13): SIGHUP reopens the events file and flowcop keeps running (logrotate's
convention); every other signal whose default action ends a process stops flowcop in order: flows end
as "shutdown", events are flushed, the summary is printed, exit 0.

usage: test_signals.py build/app/flowcop

The rotation runs under live traffic (flowgen paced to wall time, flows starting and ending all the
time): the old file renamed, SIGHUP, then more traffic. The two files together must hold every
event the summary counts written, each once, and every flow's "new" and "destroy" must pair up
across them.
"""
import ctypes
import gzip
import json
import re
import os
import shutil
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest import harness  # noqa: E402
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.process import DEMO_PCAP, REPO, Flowcop, temp_dir  # noqa: E402

EXE = sys.argv[1]
TMP = temp_dir(prefix="flowcop-signals-")
# ~500 flows a second start and end (1 s lifetimes, 1 s timeouts), paced to wall time.
FLOWGEN = "flows=500,lifetime=1,idle_pct=30,rst_pct=20,pps=5000,realtime=1,seed=5"
OPTS = ["--metrics-addr", "none", "--tick-ms", "10", "--check-interval-ms", "10",
        "--tcp-timeout-established", "1", "--flowgen", FLOWGEN]


def lines(path):
    with open(path) as f:
        return [line for line in f.read().splitlines()]


def stop_and_summary(fc, sig):
    fc.proc.send_signal(sig)
    rc = fc.wait_exit(30)
    fc._reader.join(5)
    s = harness.parse_summary(fc.stderr)
    check(rc == 0, f"exit 0 after {signal.Signals(sig).name}, got {rc}:\n{fc.stderr[-2000:]}")
    check(s is not None and "events_written" in s, f"the summary is printed:\n{fc.stderr[-2000:]}")
    return s


def test_sighup_rotates_the_events_file():
    path = os.path.join(TMP, "events.jsonl")
    with Flowcop(EXE, DEMO_PCAP, OPTS + ["--events", path], "hup", wait_metrics=False) as fc:
        wait_until(lambda: os.path.exists(path) and len(lines(path)) > 500, 30, "events in the first file")
        os.rename(path, path + ".1")
        fc.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "reopened" in fc.stderr, 10, "flowcop's 'reopened' line")
        wait_until(lambda: os.path.exists(path) and len(lines(path)) > 500, 30, "events in the new file")
        check(fc.alive(), "flowcop still runs after SIGHUP")
        # A second rotation works as the first.
        os.rename(path, path + ".2")
        fc.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: os.path.exists(path) and len(lines(path)) > 100, 30, "events in the third file")
        s = stop_and_summary(fc, signal.SIGTERM)
    files = [path + ".1", path + ".2", path]
    per_file = [lines(p) for p in files]
    every = [l for ls in per_file for l in ls]
    check(all(per_file), f"each file got events: {[len(ls) for ls in per_file]}")
    check(s["events_dropped"] == 0 and s["events_errors"] == 0, f"no event dropped: {s}")
    check(len(every) == s["events_written"],
          f"the files hold {len(every)} lines, the summary counts {s['events_written']} written")
    check(len(set(every)) == len(every), "no line is written twice")
    events = [json.loads(l) for l in every]
    pairs, problems = harness.pair_flows(events)
    check(not problems, "every flow's new and destroy pair up across the files: " + "; ".join(problems[:5]))
    check(s["created"] == len([e for e in events if e["event"] == "new"]), "created == 'new' lines")
    check(s["reasons"].get("shutdown", 0) > 0, "flows open at the stop end as shutdown")


_libc = ctypes.CDLL(None)
_libc.time.restype = ctypes.c_long  # time_t


def logrotate_clock():
    """The clock logrotate names a dateext rotation by (dateformat -%Y%m%d-%s): time(2), read once as it starts
    (logrotate.c's nowSecs). On Linux that is the kernel's coarse clock, moved on once a tick, so it can still
    show the last second a few ms after time.time() has passed into the next (up to 7 ms measured here)."""
    return _libc.time(None)


def rotated_names(d):
    """events.jsonl-DATE-EPOCH[.gz] in d, by the rotation's epoch second."""
    return sorted((n for n in os.listdir(d) if re.fullmatch(r"events\.jsonl-\d{8}-\d+(\.gz)?", n)),
                  key=lambda n: int(n.split("-")[2].split(".")[0]))


def logrotate_config(events_dir, pid, state_dir):
    """The shipped deploy/logrotate/flowcop, aimed at this run: its directory, and SIGHUP to this pid in
    place of `systemctl reload` (no systemd here); `su` dropped and `create` left to the running user (the
    test owns the directory; tests/deploy/test_logrotate.py runs both as root with a real user)."""
    with open(os.path.join(REPO, "deploy", "logrotate", "flowcop")) as f:
        text = f.read()
    check("/var/log/flowcop/*.jsonl {" in text and "systemctl reload flowcop.service" in text
          and "create 0640 flowcop flowcop" in text,
          "the shipped config rotates /var/log/flowcop/*.jsonl, creates the new file and reloads the unit")
    text = text.replace("/var/log/flowcop/", events_dir + "/")
    text = text.replace("systemctl reload flowcop.service", f"kill -HUP {pid}")
    text = text.replace("create 0640 flowcop flowcop", "create 0640")
    text = "\n".join(l for l in text.splitlines() if not l.strip().startswith("su "))
    conf = os.path.join(state_dir, "flowcop.logrotate")
    with open(conf, "w") as f:
        f.write(text + "\n")
    return conf


def test_the_shipped_logrotate_config_rotates_under_a_running_flowcop():
    # deploy/install-deps.sh installs logrotate: without it the shipped config is untested, a failure.
    check(shutil.which("logrotate") is not None, "logrotate is installed (deploy/install-deps.sh)")
    d = os.path.join(TMP, "logrotate")
    os.makedirs(d)
    path = os.path.join(d, "events.jsonl")
    with Flowcop(EXE, DEMO_PCAP, OPTS + ["--events", path], "logrotate", wait_metrics=False) as fc:
        wait_until(lambda: os.path.exists(path) and len(lines(path)) > 300, 30, "events in the first file")
        conf = logrotate_config(d, fc.proc.pid, d)
        for n in (1, 2):
            if n == 2:
                # The second rotation's name must not be the first's, so logrotate must start in a later second
                # on its own clock: waiting for time.time()'s next second let it start in the old one (the
                # coarse clock not yet moved on) and find the name taken, "already exists".
                first = rotated_names(d)
                check(len(first) == 1 and not first[0].endswith(".gz"), f"one rotated file, uncompressed: {first}")
                epoch = int(first[0].split("-")[2])
                wait_until(lambda: logrotate_clock() > epoch, 5, f"time(2) past the first rotation's second {epoch}")
            p = subprocess.run(["logrotate", "--force", "--state", os.path.join(d, "state"), conf],
                               capture_output=True, text=True, timeout=60)
            check(p.returncode == 0, f"logrotate {n}: exit {p.returncode}: {p.stderr} (files: {sorted(os.listdir(d))})")
            wait_until(lambda: fc.stderr.count("reopened") == n, 10, f"flowcop's reopen number {n}")
            wait_until(lambda: os.path.exists(path) and len(lines(path)) > 300, 30, "events in the new file")
        s = stop_and_summary(fc, signal.SIGTERM)
    # After two rotations (dateext): events.jsonl-DATE-EPOCH1.gz (compressed at the second),
    # events.jsonl-DATE-EPOCH2, events.jsonl.
    rotated = rotated_names(d)
    check(len(rotated) == 2 and rotated[0].endswith(".gz") and not rotated[1].endswith(".gz"),
          f"two rotated files, the older compressed: {sorted(os.listdir(d))}")
    with gzip.open(os.path.join(d, rotated[0]), "rt") as f:
        every = f.read().splitlines()
    every += lines(os.path.join(d, rotated[1])) + lines(path)
    check(len(every) == s["events_written"] and s["events_dropped"] == 0,
          f"the rotated files hold {len(every)} lines, the summary counts {s['events_written']} written")
    check(len(set(every)) == len(every), "no line is written twice")
    pairs, problems = harness.pair_flows([json.loads(l) for l in every])
    check(not problems, "every flow's new and destroy pair up across the files: " + "; ".join(problems[:5]))


def stops_in_order(sig):
    path = os.path.join(TMP, f"events-{sig}.jsonl")
    with Flowcop(EXE, DEMO_PCAP, OPTS + ["--events", path], f"sig{int(sig)}", wait_metrics=False) as fc:
        wait_until(lambda: os.path.exists(path) and len(lines(path)) > 100, 30, "events")
        s = stop_and_summary(fc, sig)
    got = lines(path)
    check(len(got) == s["events_written"] and s["events_dropped"] == 0,
          f"{signal.Signals(sig).name}: every event flushed ({len(got)} lines, summary {s})")
    check(s["created"] == s["ended"] and s["active"] == 0, f"every flow ended: {s}")
    # --events-ring's default, 65536, is the slots allocated, 136 B each since IPFIX (131072 before issue 13).
    m = re.search(r"^flowcop: event ring: (\d+) slots per lcore \((\d+) events, ([\d.]+) MiB\)$",
                  fc.stderr, re.M)
    check(m and m.group(1) == "65536" and m.group(2) == "65535" and float(m.group(3)) <= 65536 * 136 / 2**20 + 0.1,
          f"the events ring line: {m.group(0) if m else fc.stderr[:1500]}")


def test_other_signals_stop_in_order():
    for sig in (signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM):  # SIGINT and SIGTERM: above and elsewhere
        stops_in_order(sig)


run_tests([test_sighup_rotates_the_events_file, test_the_shipped_logrotate_config_rotates_under_a_running_flowcop,
           test_other_signals_stop_in_order])
