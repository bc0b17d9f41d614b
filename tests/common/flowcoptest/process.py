# SPDX-License-Identifier: BSD-3-Clause
"""One long-running flowcop process, for the metrics and telemetry tests (stdlib only).

Flowcop(...) starts build/app/flowcop on a pcap vdev without hugepages, with a file prefix of its
own (so its telemetry socket and runtime files never collide with another run), reads the exporter
URL from stderr and stops the process in every exit path (context manager + atexit). Every wait is
bounded in time. Runs that go to completion use harness.run() instead.
"""
import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading

from .checks import Fail, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
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
    """One flowcop process. args: flowcop options after '--' (the vdev comes from pcap; pcap=None for
    none, e.g. with --flowgen in args). memory_mb: EAL's -m (no hugepages), enough for 10^5 flows per lcore."""

    def __init__(self, exe, pcap, args, name, lcores="0", wait_metrics=True, memory_mb=512):
        self.prefix = f"fct-{name}-{os.getpid()}"
        _runtime_dirs.append(f"/var/run/dpdk/{self.prefix}")
        self.cmd = [exe, "--no-huge", "-m", str(memory_mb), "--no-pci", "-l", lcores, f"--file-prefix={self.prefix}",
                    "--log-level=lib.eal:error", "--log-level=lib.telemetry:error"] + \
                   ([f"--vdev=net_pcap0,rx_pcap={pcap}"] if pcap else []) + ["--"] + list(args)
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

    @property
    def ctl_socket_path(self):
        """The control socket flowcopctl talks to (app/service/control/ctl_server.h)."""
        return f"/var/run/dpdk/{self.prefix}/flowcop_ctl.sock"

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
