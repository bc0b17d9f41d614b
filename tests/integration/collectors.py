# SPDX-License-Identifier: BSD-3-Clause
"""Real IPFIX collectors for the tests, configured as deploy/collectors/ ships them: nfdump's nfcapd
(with the options of deploy/collectors/nfdump-flowcop.conf) and pmacct's nfacctd (with
deploy/collectors/nfacctd-flowcop.conf), each started on loopback on a free port in a temporary
directory, stopped by its PID, and read back (nfdump's CSV output, pmacct's CSV files).

Every wait is bounded. nfcapd writes its file when it stops (SIGTERM), so records are read after
stop(). A UDP port taken by nobody (closed_udp_port) stands for a collector that is down.
"""

import glob
import ipaddress
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time


DEPLOY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "deploy")
NFDUMP_CONF = os.path.join(DEPLOY, "collectors", "nfdump-flowcop.conf")
NFACCTD_CONF = os.path.join(DEPLOY, "collectors", "nfacctd-flowcop.conf")
DEPLOYMENT_MD = os.path.join(DEPLOY, "deployment.md")
# Where deployment.md's queries read each collector's files.
DOC_NFDUMP_DIR = "/var/cache/nfdump/flowcop"
DOC_PMACCT_DIR = "/var/lib/pmacct/flowcop"


def documented_queries(program, directory):
    """The command lines of deployment.md's code blocks that run `program` on `directory`, in page order."""
    out, in_block = [], False
    with open(DEPLOYMENT_MD) as f:
        for line in f:
            if line.startswith("```"):
                in_block = not in_block
            elif in_block and line.startswith(program + " ") and directory in line:
                out.append(line.strip())
    return out


def run_query(line, directory, real_dir):
    """A documented query run by bash on real_dir instead of `directory`: (exit code, stdout, stderr)."""
    p = subprocess.run(["bash", "-c", line.replace(directory, real_dir)], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def shipped_nfcapd_options():
    """The nfcapd options of deploy/collectors/nfdump-flowcop.conf (its options='...' line), as a list."""
    with open(NFDUMP_CONF) as f:
        m = re.search(r"^options='([^']*)'$", f.read(), re.M)
    if not m:
        raise ValueError(NFDUMP_CONF + ": no options='...' line")
    return shlex.split(m.group(1))


def with_option(opts, flag, value):
    """opts with flag's value replaced (the flag must be there: what the test replaces, it runs)."""
    i = opts.index(flag)
    return opts[:i + 1] + [value] + opts[i + 2:]


def shipped_nfacctd_config(overrides):
    """deploy/collectors/nfacctd-flowcop.conf's text with the keys in overrides (each must be in the
    file) set to their values, or left out where the value is None; comments kept."""
    out, seen = [], set()
    with open(NFACCTD_CONF) as f:
        for line in f:
            key = line.split(":", 1)[0].strip()
            if not line.startswith("!") and key in overrides:
                seen.add(key)
                if overrides[key] is None:
                    continue
                line = "%s: %s\n" % (key, overrides[key])
            out.append(line)
    missing = set(overrides) - seen
    if missing:
        raise ValueError(NFACCTD_CONF + ": no " + ", ".join(sorted(missing)))
    return "".join(out)


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
    """nfcapd with deploy/collectors/nfdump-flowcop.conf's options but -w DIR -b HOST -p PORT (a free
    one) and any (flag, value) overrides; host "::1" listens on IPv6. The directory is created first, as deployment.md says."""

    def __init__(self, workdir, host="127.0.0.1", overrides=()):
        self.host = host
        self.v6 = ":" in host
        self.dir = os.path.join(workdir, "nfcapd_" + ("v6" if self.v6 else "v4"))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.port = free_udp_port(host)
        opts = shipped_nfcapd_options()
        for flag, value in (("-w", self.dir), ("-b", host), ("-p", str(self.port))) + tuple(overrides):
            opts = with_option(opts, flag, value)
        cmd = ["nfcapd"] + opts
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


# An event's counters and the nfdump CSV columns that carry each (`nfdump -o csv`).
COUNTS = (("packets_orig", "ipkt"), ("bytes_orig", "ibyt"), ("packets_reply", "opkt"), ("bytes_reply", "obyt"))


def key_of_event(e):
    """A flow's (src, sport, dst, dport) from a JSON event, as key_of_record() gives it from nfdump."""
    return (norm_addr(e["src"]), e["sport"], norm_addr(e["dst"]), e["dport"])


def key_of_record(r):
    return (norm_addr(r["sa"]), int(r["sp"]), norm_addr(r["da"]), int(r["dp"]))


def sum_records(recs):
    """nfdump's records summed per flow: ({key: [packets, bytes, reply packets, reply bytes]}, {key: records})."""
    got, count = {}, {}
    for r in recs:
        k = key_of_record(r)
        g = got.setdefault(k, [0, 0, 0, 0])
        for i, (_, c) in enumerate(COUNTS):
            g[i] += int(r[c])
        count[k] = count.get(k, 0) + 1
    return got, count


class Nfacctd(_Collector):
    """pmacct's nfacctd with deploy/collectors/nfacctd-flowcop.conf, but in the foreground, on
    127.0.0.1 and a free port, its CSV files in a directory of its own and written every second
    (appended to, as a second's aggregates would otherwise replace the last). It aggregates by
    5-tuple; pmacct reads the forward counts only: RFC 5103's reverse elements are not aggregated."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "nfacctd")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.port = free_udp_port()
        shipped_out = re.search(r"^print_output_file\[flowcop\]: (\S+)$", open(NFACCTD_CONF).read(), re.M)
        self.out = os.path.join(self.dir, os.path.basename(shipped_out.group(1)))  # the shipped file names
        conf = os.path.join(self.dir, "nfacctd.conf")
        with open(conf, "w") as f:
            f.write(shipped_nfacctd_config({
                "daemonize": "false", "pidfile": os.path.join(self.dir, "nfacctd.pid"), "syslog": None,  # log: stderr
                "nfacctd_ip": "127.0.0.1", "nfacctd_port": str(self.port),
                "print_output_file[flowcop]": self.out, "print_refresh_time[flowcop]": "1"}))
            f.write("print_output_file_append[flowcop]: true\n")
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
            for path in glob.glob(os.path.join(self.dir, "*.csv")):
                with open(path) as f:
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
