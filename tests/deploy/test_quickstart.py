# SPDX-License-Identifier: BSD-3-Clause
"""deploy/quickstart.sh run: the sample replay with another metrics port, a taken 9781, and overrides.

usage: test_quickstart.py build/app/flowcop REPO_ROOT

quickstart.sh installs dependencies and builds before it runs anything, which a test inside a
build must not do again; its `run` hands the built binary to deploy/run-sample.sh, which this test
runs with the build's binary exactly as quickstart.sh would (and checks that quickstart.sh does
hand it over). Each run replays the sample capture (80 flows, about 3 s with the 2 s idle stop):
- with 127.0.0.1:9781 held by another process: flowcop serves /metrics on a free port it prints,
  says why, and replays the capture to the end (exit 0; 160 TCP events, and the UDP and IGMP flows' events);
- with --metrics-addr 127.0.0.1:PORT: metrics there, not on 9781;
- with --events - (the example in quickstart.sh's header): the events on stdout, exit 0.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# meson's timeout sends SIGTERM: exit through the finally blocks that stop flowcop.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
from tap import check, run  # noqa: E402

from flowcoptest.exposition import fetch as scrape  # noqa: E402
from flowcoptest.harness import parse_summary  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
RUN_SAMPLE = os.path.join(REPO, "deploy", "run-sample.sh")
QUICKSTART = os.path.join(REPO, "deploy", "quickstart.sh")
FLOWS = 80  # the sample capture's TCP connections: one start and one end event each


def check_events(events, where):
    """One start and one end event per TCP connection; every other protocol's flow (UDP, IGMP: issue 15)
    also both starts and ends."""
    parsed = [json.loads(l) for l in events]
    tcp = [e for e in parsed if e.get("proto") == "tcp"]
    check(len(tcp) == 2 * FLOWS, f"{len(tcp)} TCP events {where}, want {2 * FLOWS}")
    kinds = [e.get("event") for e in parsed]
    check(kinds.count("new") == kinds.count("destroy") == len(parsed) // 2 and len(parsed) > len(tcp),
          f"{kinds.count('new')} new and {kinds.count('destroy')} destroy events of {len(parsed)} {where}")


def check_summary(err, events):
    """The summary explains the sample (issue 28): flows by protocol (what the README says it holds), packets
    and bytes on flows, and what was open at stop by state, each equal to what the events say."""
    s = parse_summary(err)
    check(s is not None and s.get("created_by_proto") == {"tcp": 80, "udp": 78, "icmp": 0, "other": 1},
          f"flows by protocol: {s and s.get('created_by_proto')}\n{err}")
    destroys = [json.loads(l) for l in events if '"event":"destroy"' in l]
    packets = sum(e["packets_orig"] + e["packets_reply"] for e in destroys)
    octets = sum(e["bytes_orig"] + e["bytes_reply"] for e in destroys)
    check(s.get("on_flows") == (packets, octets), f"on flows {s.get('on_flows')}, the destroys say {(packets, octets)}")
    by_state = {}
    for e in destroys:
        if e["reason"] == "shutdown":
            by_state[e["state"]] = by_state.get(e["state"], 0) + 1
    check(s.get("open_at_stop") == sum(by_state.values()) == s["reasons"]["shutdown"]
          and s.get("open_by_state") == by_state and by_state.get("TIME_WAIT") == 46,
          f"open at stop {s.get('open_at_stop')} {s.get('open_by_state')}, the shutdown destroys say {by_state}")
    readme = open(os.path.join(REPO, "README.md")).read()
    check("159\nflows" in readme or "159 flows" in readme.replace("\n", " "), "the README says the sample holds 159 flows")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sample:
    """run-sample.sh EXE ARGS in the background; stderr collected line by line."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(["bash", RUN_SAMPLE, EXE] + list(args), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines, self.out = [], ""
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._out = threading.Thread(target=self._read_out, daemon=True)
        self._err.start()
        self._out.start()

    def _read_err(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def _read_out(self):
        self.out = self.proc.stdout.read()

    def metrics_url(self, timeout=30):
        """The URL flowcop prints ("flowcop: metrics at URL"), once it has printed it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.match(r"flowcop: metrics at (\S+)", line)
                if m:
                    return m.group(1)
            if self.proc.poll() is not None and not self._err.is_alive():
                return None
            time.sleep(0.02)
        return None

    def wait(self, timeout=60):
        rc = self.proc.wait(timeout=timeout)
        self._err.join(5)
        self._out.join(5)
        return rc, "".join(self.lines)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def test_quickstart_run_hands_the_built_binary_to_run_sample():
    """quickstart.sh run builds, then runs deploy/run-sample.sh with build/app/flowcop and the caller's options"""
    text = open(QUICKSTART).read()
    check(re.search(r'exec "\$here/deploy/run-sample\.sh" "\$here/build/app/flowcop" "\$@"', text),
          "quickstart.sh run does not exec deploy/run-sample.sh with the built binary and the options")
    p = subprocess.run(["bash", RUN_SAMPLE], capture_output=True, text=True, timeout=10)
    check(p.returncode == 2 and "usage:" in p.stderr, f"no binary: exit {p.returncode}\n{p.stderr}")


def test_a_taken_9781_gives_a_free_port_not_a_failure():
    """with 127.0.0.1:9781 held by another process, metrics are served on a free port flowcop prints"""
    holder = socket.socket()
    try:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 9781))
        holder.listen()
    except OSError:
        holder.close()
        holder = None  # something else already holds it: taken either way
    tmp = tempfile.mkdtemp(prefix="flowcop-quickstart-")
    s = Sample("--events", os.path.join(tmp, "events.jsonl"))
    try:
        url = s.metrics_url()
        check(url and not url.startswith("http://127.0.0.1:9781/"), f"metrics at {url}\n{''.join(s.lines)}")
        body = scrape(url)
        check("flowcop_up" in body, f"{url} serves no flowcop metrics")
        rc, err = s.wait()
        check(rc == 0, f"exit {rc}\n{err}")
        check("127.0.0.1:9781 is in use by another process" in err, f"no word on why:\n{err}")
        events = open(os.path.join(tmp, "events.jsonl")).read().splitlines()
        check_events(events, "in the file")
    finally:
        s.stop()
        if holder:
            holder.close()
        shutil.rmtree(tmp, True)


def test_another_metrics_port_and_events_to_stdout():
    """--metrics-addr 127.0.0.1:PORT serves there; --events - puts the events on stdout; both replace quickstart's"""
    port = free_port()
    s = Sample("--metrics-addr", f"127.0.0.1:{port}", "--events", "-")
    try:
        url = s.metrics_url()
        check(url == f"http://127.0.0.1:{port}/metrics", f"metrics at {url}\n{''.join(s.lines)}")
        check("flowcop_up" in scrape(url), f"{url} serves no flowcop metrics")
        rc, err = s.wait()
        check(rc == 0, f"exit {rc}\n{err}")
        check("in use" not in err, f"a free 9781 was not the question here:\n{err}")
        events = [l for l in s.out.splitlines() if l.startswith("{")]
        check_events(events, "on stdout")
        check_summary(err, events)
    finally:
        s.stop()


if __name__ == "__main__":
    run([test_quickstart_run_hands_the_built_binary_to_run_sample, test_a_taken_9781_gives_a_free_port_not_a_failure,
         test_another_metrics_port_and_events_to_stdout])
