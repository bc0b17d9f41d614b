# SPDX-License-Identifier: BSD-3-Clause
"""Real IPFIX collectors for the tests: nfdump's nfcapd, started on loopback on a free port in a
temporary directory, stopped by its PID, and read back with nfdump's CSV output.

Every wait is bounded. nfcapd writes its file when it stops (SIGTERM), so records are read after
stop(). A UDP port taken by nobody (closed_udp_port) stands for a collector that is down.
"""

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time


def have_nfdump():
    return shutil.which("nfcapd") is not None and shutil.which("nfdump") is not None


def free_udp_port(host="127.0.0.1"):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def closed_udp_port():
    """A loopback port that nothing listens on (bound once, then released): sends to it get ICMP
    port unreachable, as a collector that is down does."""
    return free_udp_port()


def _udp_listening(port, v6):
    path = "/proc/net/udp6" if v6 else "/proc/net/udp"
    want = ":%04X" % port
    try:
        with open(path) as f:
            return any(line.split()[1].endswith(want) for line in f.readlines()[1:])
    except OSError:
        return False


class _Collector:
    """What both collectors share: a process (self.proc) logging to self.log."""

    def stop(self):
        """SIGTERM by PID (nfcapd flushes and renames its file on the way out), SIGKILL after 15 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


class Nfcapd(_Collector):
    """nfcapd -b HOST -p PORT -w DIR; host "::1" listens on IPv6."""

    def __init__(self, workdir, host="127.0.0.1"):
        self.host = host
        self.v6 = ":" in host
        self.dir = os.path.join(workdir, "nfcapd_" + ("v6" if self.v6 else "v4"))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.port = free_udp_port(host)
        cmd = ["nfcapd", "-b", host, "-p", str(self.port), "-w", self.dir, "-t", "3600", "-B", "4194304"]
        if self.v6:
            cmd.append("-6")
        self.log = open(os.path.join(workdir, "nfcapd_%s.log" % ("v6" if self.v6 else "v4")), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not _udp_listening(self.port, self.v6) and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        self.ready = _udp_listening(self.port, self.v6)

    def address(self):
        return ("[%s]:%d" if self.v6 else "%s:%d") % (self.host, self.port)

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def records(self):
        """Every flow record nfcapd stored, as dicts keyed by nfdump's CSV header names."""
        out = subprocess.run(["nfdump", "-N", "-R", self.dir, "-o", "csv"], capture_output=True, text=True,
                             timeout=60)
        if out.returncode != 0:
            raise RuntimeError("nfdump failed: " + out.stderr)
        lines = [l for l in out.stdout.splitlines() if l.strip()]
        header = None
        recs = []
        for line in lines:
            cols = line.split(",")
            if cols[0] == "ts":
                header = cols
                continue
            if header is None or len(cols) < len(header) or not cols[0][:1].isdigit():
                continue  # summary lines
            recs.append(dict(zip(header, cols)))
        return recs


def norm_addr(a):
    return str(ipaddress.ip_address(a.strip()))


class Nfacctd(_Collector):
    """pmacct's nfacctd on 127.0.0.1, aggregating by 5-tuple into a CSV file it appends to every
    second. pmacct reads the forward counts only: RFC 5103's reverse elements are not aggregated."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "nfacctd")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.port = free_udp_port()
        self.out = os.path.join(self.dir, "flows.csv")
        conf = os.path.join(self.dir, "nfacctd.conf")
        with open(conf, "w") as f:
            f.write("daemonize: false\nnfacctd_ip: 127.0.0.1\nnfacctd_port: %d\nplugins: print[p]\n"
                    "aggregate[p]: src_host, dst_host, src_port, dst_port, proto\nprint_output[p]: csv\n"
                    "print_output_file[p]: %s\nprint_output_file_append[p]: true\nprint_refresh_time[p]: 1\n"
                    % (self.port, self.out))
        self.log = open(os.path.join(self.dir, "nfacctd.log"), "w")
        self.proc = subprocess.Popen(["nfacctd", "-f", conf], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not _udp_listening(self.port, False) and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        self.ready = _udp_listening(self.port, False)

    def address(self):
        return "127.0.0.1:%d" % self.port

    def records(self, want, timeout=15):
        """(src, sport, dst, dport) -> [packets, bytes] summed over the file's intervals, once `want`
        flows are in it or `timeout` passed (its plugin writes every second)."""
        deadline = time.monotonic() + timeout
        while True:
            got = {}
            if os.path.exists(self.out):
                with open(self.out) as f:
                    for line in f:
                        c = line.strip().split(",")
                        if len(c) < 7 or c[0] == "SRC_IP":
                            continue
                        k = (norm_addr(c[0]), int(c[2]), norm_addr(c[1]), int(c[3]))
                        v = got.setdefault(k, [0, 0])
                        v[0] += int(c[5])
                        v[1] += int(c[6])
            if len(got) >= want or time.monotonic() > deadline:
                return got
            time.sleep(0.5)


def have_nfacctd():
    return shutil.which("nfacctd") is not None
