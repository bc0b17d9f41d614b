# SPDX-License-Identifier: BSD-3-Clause
"""What the hostile-traffic, fault and exposure tests share on top of flowcoptest.harness.

finish() runs every end-of-run invariant (harness.check_invariants, which includes
check_event_accounting and check_deadlines). Veth is a veth pair in the root network namespace
with IPv6 (and so every kernel-originated frame) disabled: flowcop reads one end through
net_af_packet, and inject() writes crafted frames into the other with an AF_PACKET socket, so a
test can pace phases and scrape between them, which a pcap replay (read at full speed) cannot.
"""

import json
import os
import signal
import socket
import subprocess
import threading
import time
from urllib.parse import urlsplit


from flowcoptest import harness  # noqa: E402,F401


def finish(tap, res, label):
    """All end-of-run invariants of a run that must exit 0 (check_invariants runs them all)."""
    harness.check_invariants(tap, res, label)


def verdict_names(repo_root):
    """Every Verdict name, and the malformed ones, read from lib/packet/verdict.h (the source of
    truth: a class added there and not covered here fails the coverage check)."""
    with open(os.path.join(repo_root, "lib", "packet", "verdict.h")) as f:
        text = f.read()
    body = text[text.index("enum class Verdict"):]
    body = "\n".join(line.split("//")[0] for line in body[body.index("{") + 1:body.index("};")].splitlines())
    names = [n.strip() for n in body.split(",") if n.strip() and n.strip() != "count"]
    return names, names[names.index("truncated_l2"):]


def have_root_net():
    return os.geteuid() == 0 and subprocess.run(["ip", "-V"], capture_output=True).returncode == 0


class Veth:
    """A veth pair A<->B; flowcop reads B, inject() writes into A."""

    def __init__(self, tag):
        self.a = "fch%sa" % tag
        self.b = "fch%sb" % tag

    def __enter__(self):
        subprocess.run(["ip", "link", "del", self.a], capture_output=True)
        subprocess.run(["ip", "link", "add", self.a, "type", "veth", "peer", "name", self.b], check=True,
                       capture_output=True)
        for d in (self.a, self.b):
            # No IPv6 means no router solicitation, MLD or DAD frame: the port sees only ours.
            with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % d, "w") as f:
                f.write("1")
            subprocess.run(["ip", "link", "set", d, "up"], check=True, capture_output=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self.sock.bind((self.a, 0))
        return self

    def __exit__(self, *exc):
        try:
            self.sock.close()
        finally:
            subprocess.run(["ip", "link", "del", self.a], capture_output=True)

    def inject(self, frames, pace_every=64, pause_s=0.0005):
        """Sends frames in order, pausing briefly every pace_every frames so the PMD's ring of
        received frames is drained before it could overflow. Returns the number sent."""
        n = 0
        for f in frames:
            while True:
                try:
                    self.sock.send(f)
                    break
                except (BlockingIOError, OSError) as e:
                    if getattr(e, "errno", None) not in (11, 105):  # EAGAIN, ENOBUFS
                        raise
                    time.sleep(0.001)
            n += 1
            if pace_every and n % pace_every == 0:
                time.sleep(pause_s)
        return n


def listening_sockets(pid):
    """[(family, 'addr', port)] of the TCP sockets the process listens on, from /proc/net/tcp{,6}
    matched to the process's socket inodes."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for fam, path in (("ipv4", "/proc/net/tcp"), ("ipv6", "/proc/net/tcp6")):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state != "0A" or inode not in inodes:  # 0A = TCP_LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            if fam == "ipv4":
                addr = socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr_hex)[::-1])
            else:
                raw = bytes.fromhex(addr_hex)
                addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            out.append((fam, addr, int(port_hex, 16)))
    return out


def run_to_exit(exe, vdevs, opts, eal_extra=(), memory_mb=512, timeout=30):
    """Runs flowcop expecting it to stop on its own (a start failure, or a replay with
    --stop-when-idle-ms). Returns (exit code, stderr, seconds); None for the code if it
    overstayed `timeout` and was killed."""
    cmd = [exe] + harness.eal_args(vdevs, memory_mb=memory_mb) + list(eal_extra) + ["--"] + list(opts)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = None, e.stderr if isinstance(e.stderr, str) else (e.stderr or b"").decode(errors="replace")
    finally:
        harness.remove_runtime_dir(cmd)
    return rc, err, time.monotonic() - t0


def url_host_port(url):
    """The host and port (an int) of an http://HOST:PORT/... URL, e.g. a flowcop's metrics URL."""
    parts = urlsplit(url)
    return parts.hostname, parts.port


def telemetry_path(pid):
    """The telemetry socket of a running flowcop, from its --file-prefix."""
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        args = f.read().decode().split("\0")
    prefix = next(a.split("=", 1)[1] for a in args if a.startswith("--file-prefix="))
    return os.path.join(harness.runtime_dir(prefix), "dpdk_telemetry.v2")


class Telemetry:
    """One connection to DPDK's telemetry socket (SOCK_SEQPACKET: one message per request and
    reply). DPDK listens with a backlog of one, so connect() retries EAGAIN until `timeout`."""

    def __init__(self, path, timeout=3.0):
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.sock.settimeout(timeout)
            try:
                self.sock.connect(path)
                break
            except (BlockingIOError, FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
        try:
            greeting = self.sock.recv(1024)
        except ConnectionResetError:
            greeting = b""
        # None: closed without a greeting (DPDK's connection limit).
        self.hello = json.loads(greeting) if greeting else None

    def __call__(self, request):
        """The reply's value under its command key, or the whole reply if it has another shape."""
        self.sock.send(request.encode() if isinstance(request, str) else request)
        doc = json.loads(self.sock.recv(1 << 17))
        return next(iter(doc.values())) if isinstance(doc, dict) and len(doc) == 1 else doc

    def close(self):
        self.sock.close()


class Running:
    """A flowcop the test drives itself (harness.run owns the whole run; this only starts it):
    `with Running(...) as fc:` starts it and waits for its startup lines (the config line and,
    if the exporter runs, its URL); leaving the block stops it with SIGINT and collects rc and
    stderr. Every wait is bounded; the process and its EAL runtime directory never outlive it."""

    def __init__(self, exe, vdevs, opts, cwd=None, eal_extra=(), timeout=20.0):
        opts = list(opts) + ([] if "--flows-per-lcore" in opts else ["--flows-per-lcore", "65536"])  # as harness.run
        self.cmd = [os.path.abspath(exe)] + harness.eal_args(vdevs) + list(eal_extra) + ["--"] + opts
        self.cwd, self.timeout = cwd, timeout
        self.lines, self.url, self.rc = [], None, None
        self.ready = threading.Event()

    def __enter__(self):
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  cwd=self.cwd)
        self.pid = self.p.pid
        wants_url = "--metrics-addr" not in self.cmd or self.cmd[self.cmd.index("--metrics-addr") + 1] != "none"

        def reader():
            for line in self.p.stderr:
                self.lines.append(line)
                if "metrics at " in line:
                    self.url = line.split("metrics at ", 1)[1].strip()
                if line.startswith("flowcop: config: ") and not wants_url:
                    self.ready.set()
                if self.url and any(x.startswith("flowcop: config: ") for x in self.lines):
                    self.ready.set()
            self.ready.set()

        self.th = threading.Thread(target=reader, daemon=True)
        self.th.start()
        self.ready.wait(self.timeout)
        return self

    @property
    def stderr(self):
        return "".join(self.lines)

    def alive(self):
        return self.p.poll() is None

    def __exit__(self, *exc):
        try:
            if self.p.poll() is None:
                self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(self.timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
            self.th.join(5)
            self.rc = self.p.returncode
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait(5)
            harness.remove_runtime_dir(self.cmd)
