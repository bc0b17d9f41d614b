# SPDX-License-Identifier: BSD-3-Clause
"""Reads a running DPDK process from outside: port counters, a thread's CPU time, CPU steal.

Used by packet_rate.py to measure flowcop and dpdk-testpmd the same way: both are DPDK primary
processes with the telemetry socket, so the packets counted are the pcap port's own rte_eth_stats
(what flowcop_port_rx_packets_total and testpmd's RX-packets report), read at instants this script
chooses, not at start-up or exit.
"""

import json
import os
import socket
import time


def telemetry_path(file_prefix):
    return "/var/run/dpdk/%s/dpdk_telemetry.v2" % file_prefix


class Telemetry:
    """One connection to a DPDK process's telemetry v2 socket (SOCK_SEQPACKET, JSON replies)."""

    def __init__(self, file_prefix, timeout_s=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout_s)
        self.sock.connect(telemetry_path(file_prefix))
        greeting = json.loads(self.sock.recv(1 << 16).decode())
        self.max_output = int(greeting.get("max_output_len", 16384))

    def query(self, command):
        self.sock.send(command.encode())
        return json.loads(self.sock.recv(self.max_output + 1024).decode())

    def rx_packets(self, port=0):
        """The port's ipackets (rte_eth_stats; 0 while the port does not exist yet), and the
        monotonic time right after the reply."""
        reply = self.query("/ethdev/stats,%d" % port)
        stats = reply.get("/ethdev/stats")  # null until the application has set the port up
        return (int(stats["ipackets"]) if isinstance(stats, dict) else 0), time.monotonic()

    def close(self):
        self.sock.close()


def connect_when_ready(file_prefix, proc, deadline, timeout_s=5.0):
    """Waits until the process's telemetry socket accepts; None if the process exits first.
    timeout_s bounds each reply (longer under valgrind)."""
    path = telemetry_path(file_prefix)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        if os.path.exists(path):
            try:
                return Telemetry(file_prefix, timeout_s)
            except (OSError, ValueError):  # refused, not there yet, backlog full (EAGAIN), timed out
                pass
        time.sleep(0.2)
    return None


def thread_cpu_ns(pid, tid):
    """Time the thread has spent on a CPU (schedstat's sum_exec_runtime), in ns."""
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[0])


def find_thread(pid, name_part):
    """The tid of the first thread of pid whose comm contains name_part, or None."""
    for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % pid)):
        try:
            with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
                if name_part in f.read():
                    return tid
        except FileNotFoundError:
            continue
    return None


def busiest_thread(pid):
    """The tid of pid's thread with the most CPU time (the polling lcore, when names do not say)."""
    best, best_ns = None, -1
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            ns = thread_cpu_ns(pid, int(t))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if ns > best_ns:
            best, best_ns = int(t), ns
    return best


def cpu_times(cpu):
    """(steal, total) jiffies of one CPU from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu%d " % cpu):
                v = [int(x) for x in line.split()[1:]]
                return v[7], sum(v[:8])
    raise RuntimeError("cpu%d not in /proc/stat" % cpu)


def set_priority(pid, nice):
    """Sets every thread of pid, and its session's scheduler autogroup, to `nice` (root only).

    With kernel.sched_autogroup_enabled=1 CPU time is shared fairly between sessions first, and a
    thread's nice only ranks it within its session: a started program that called setsid() has its
    own autogroup, whose nice (/proc/PID/autogroup) ranks it against other sessions' builds."""
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            os.setpriority(os.PRIO_PROCESS, int(t), nice)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        with open("/proc/%d/autogroup" % pid, "w") as f:
            f.write(str(nice))
    except OSError:
        pass  # no autogroups: the thread nice alone applies


def load_average():
    with open("/proc/loadavg") as f:
        return tuple(float(x) for x in f.read().split()[:3])


def meminfo(field):
    """A /proc/meminfo field: bytes for the kB ones, a count for HugePages_*; 0 if absent."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                parts = line.split()
                return int(parts[1]) * (1024 if parts[-1] == "kB" else 1)
    return 0


def mem_available_bytes():
    return meminfo("MemAvailable")


def free_hugepage_bytes():
    """Free pages of the default hugepage size (what EAL -m takes from a hugetlbfs mount)."""
    return meminfo("HugePages_Free") * meminfo("Hugepagesize")
