# SPDX-License-Identifier: BSD-3-Clause
"""Running the real flowcop binary for the metrics and telemetry tests (stdlib only).

Flowcop(...) starts build/app/flowcop on a pcap vdev without hugepages, with a
file prefix of its own (so its telemetry socket and runtime files never collide
with another run), reads the exporter URL from stderr and stops the process in
every exit path (context manager + atexit). Every wait is bounded in time.
"""
import atexit
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEMO_PCAP = os.path.join(REPO, "tests", "data", "captures", "suricata_ftp_data_ipv4_ipv6_80conns.pcap")

_live = []


_runtime_dirs = []


def _cleanup():
    for p in list(_live):
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    # EAL leaves its runtime directory (config, fbarrays) behind: one per run would pile up.
    for d in _runtime_dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # meson's timeout: still run atexit


class Fail(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def wait_until(pred, timeout, what, interval=0.1):
    """Polls pred() until it returns a true value (returned) or `timeout` seconds pass (Fail)."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except (OSError, ValueError, KeyError) as e:  # not up yet, or a reply not there yet
            last_exc = e
        if time.monotonic() >= deadline:
            raise Fail(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


def temp_dir(prefix):
    """A temporary directory removed when the test process exits."""
    import tempfile
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Flowcop:
    """One flowcop process. args: flowcop options after '--' (the vdev comes from pcap)."""

    def __init__(self, exe, pcap, args, name, lcores="0", wait_metrics=True):
        self.prefix = f"fct-{name}-{os.getpid()}"
        _runtime_dirs.append(f"/var/run/dpdk/{self.prefix}")
        self.cmd = [exe, "--no-huge", "-m", "512", "--no-pci", "-l", lcores, f"--file-prefix={self.prefix}",
                    "--log-level=lib.eal:error", "--log-level=lib.telemetry:error",
                    f"--vdev=net_pcap0,rx_pcap={pcap}", "--"] + list(args)
        self.stderr = ""
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace")
        _live.append(self.proc)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = None
        if wait_metrics:
            m = wait_until(lambda: self._url_or_exit(), 30, "the 'metrics at' line")
            self.url = m

    def _read(self):
        for line in self.proc.stderr:
            with self._lock:
                self.stderr += line

    def _url_or_exit(self):
        with self._lock:
            m = re.search(r"metrics at (http://\S+/metrics)", self.stderr)
        if m:
            return m.group(1)
        if self.proc.poll() is not None:
            raise Fail(f"flowcop exited with {self.proc.returncode} before serving metrics:\n{self.stderr}")
        return None

    @property
    def socket_path(self):
        return f"/var/run/dpdk/{self.prefix}/dpdk_telemetry.v2"

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM, then the exit code (killed after `timeout` s: that is a failure)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                raise Fail(f"flowcop did not stop within {timeout} s of SIGINT")
        self._reader.join(timeout=5)
        return self.proc.returncode

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail(f"flowcop still running after {timeout} s")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if exc[0] is not None:
            print("---- flowcop stderr ----\n" + self.stderr, file=sys.stderr)
        return False


# ---------------------------------------------------------------- exposition

def scrape(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        check(r.status == 200, f"GET {url}: HTTP {r.status}")
        return r.read().decode("utf-8")


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def _unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def parse(text):
    """Exposition text -> (types {family: type}, helps {family: help}, samples [(name, labels, value)])."""
    types, helps, samples = {}, {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, t = line.split(" ", 3)
            types[name] = t
        elif line.startswith("# HELP "):
            parts = line.split(" ", 3)
            helps[parts[2]] = parts[3] if len(parts) > 3 else ""
        elif line and not line.startswith("#"):
            m = _SAMPLE.match(line)
            check(m, f"unparsable sample line: {line!r}")
            labels = {}
            if m.group(3):
                pos = 0
                body = m.group(3)
                while pos < len(body):
                    lm = _LABEL.match(body, pos)
                    check(lm, f"unparsable labels in {line!r}")
                    labels[lm.group(1)] = _unescape(lm.group(2))
                    pos = lm.end()
            v = m.group(4)
            value = math.inf if v == "+Inf" else (math.nan if v.lower() == "nan" else float(v))
            samples.append((m.group(1), labels, value))
    return types, helps, samples


class Scrape:
    def __init__(self, url):
        self.text = scrape(url)
        self.types, self.helps, self.samples = parse(self.text)

    def series(self, name, **match):
        return [(l, v) for n, l, v in self.samples if n == name and all(l.get(k) == x for k, x in match.items())]

    def value(self, name, **match):
        s = self.series(name, **match)
        check(len(s) == 1, f"expected one {name}{match} sample, found {len(s)}")
        return s[0][1]

    def total(self, name, **match):
        return sum(v for _, v in self.series(name, **match))


# ---------------------------------------------------------------- telemetry

def telemetry_connect(path, timeout=5):
    """A connected telemetry socket with `timeout` set. DPDK listens with a backlog of one, and a
    unix connect() on a socket with a timeout fails with EAGAIN (not EINPROGRESS) while the backlog
    is full, so clients arriving together retry until `timeout` runs out."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
        except BaseException:
            s.close()
            raise


def telemetry_raw(path, request, timeout=5):
    """Sends one request (bytes) on a fresh connection; returns the raw reply bytes."""
    s = telemetry_connect(path, timeout)
    try:
        hello = json.loads(s.recv(1024))
        check("max_output_len" in hello, f"unexpected telemetry greeting {hello}")
        s.send(request)
        return s.recv(1 << 17)
    finally:
        s.close()


def telemetry(path, request, timeout=5):
    """One request -> the value under its command key (the reply must be valid JSON)."""
    raw = request.encode() if isinstance(request, str) else request
    reply = telemetry_raw(path, raw, timeout)
    try:
        doc = json.loads(reply)
    except ValueError as e:
        raise Fail(f"reply to {raw[:80]!r} is not JSON ({e}): {reply[:300]!r}")
    check(isinstance(doc, dict) and len(doc) == 1, f"reply to {raw[:80]!r} is not one command object: {doc}")
    return next(iter(doc.values()))


def run_tests(tests):
    """Runs test functions in order, TAP-free: prints one line each, exits 1 on the first failure."""
    for t in tests:
        start = time.monotonic()
        try:
            t()
        except Exception as e:  # noqa: BLE001 - report any failure with its test's name
            print(f"FAIL {t.__name__}: {type(e).__name__}: {e}", flush=True)
            raise SystemExit(1)
        print(f"ok   {t.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
