# SPDX-License-Identifier: BSD-3-Clause
"""Open vSwitch's userspace conntrack with DPDK, as a peer in the packet-rate benchmark (issue 19).

One run: a private OVS (ovs_private.py: own database, run directory and network namespace) with
  other_config  dpdk-init=true, pmd-cpu-mask = the polling CPU only (one PMD thread: per-core),
                dpdk-extra = the EAL memory options packet_rate.py gives flowcop and testpmd
                (hugepages or --no-huge, -m, --no-pci, --file-prefix), everything else OVS's default
                (EMC on, SMC off, 10 s max-idle, conntrack timeouts: TCP established 24 h) unless
                --ovs-config KEY=VALUE adds settings;
  a netdev bridge br0 (fail-mode secure) with one port p0 of type dpdk whose dpdk-devargs are the
  very vdev the others read: net_pcap0,rx_pcap=CAPTURE,infinite_rx=1;
  the OpenFlow rules of a stateful firewall, every IP packet through conntrack:
    table 0   ip,ct_state=-trk          -> ct(table=1)
    table 1   ct_state=+trk+inv          -> drop
              ip,ct_state=+trk+new       -> ct(commit)   (then output back to p0 with --ovs-forward)
              ip,ct_state=+trk+est       -> drop         (output back to p0 with --ovs-forward)
  and the conntrack limit raised above the flow count (dpctl/ct-set-maxconns).
Without --ovs-forward the packet ends as it does in flowcop's monitor mode and testpmd rxonly (freed);
with it, it goes back out of p0, whose tx queue the pcap vdev drops, as testpmd io's do.

ovs-vswitchd cannot be told its mbuf pool's size, and infinite_rx must preload the whole capture into
it: ovs_mbuf_shim.cpp (compiled here with c++ into the work directory, LD_PRELOADed into
ovs-vswitchd only) gives OVS's pool the capture plus OVS's own minimum (16,384) mbufs, with the data
room the other programs get (--data-room).

Measured like the others (packet_rate.py): after one whole loop of the capture and --warm seconds,
the port's rx counter (ipackets, over DPDK telemetry: ovs-vswitchd's EAL has the same socket) and the
PMD thread's CPU time, --window seconds apart, the daemon at --nice for the window only. OVS's own
counters over the same window are kept beside them: pmd-stats-show (packets received, recirculations,
EMC and megaflow hits, processing cycles per packet) and the OpenFlow rules' packet counts. The run
has a problem (reported, never hidden) unless conntrack holds exactly N connections, every packet of
the window hit the +est rule (none +new, +inv or other) and the PMD received what the port delivered.

Standalone, one size, e.g. a check at small scale (the sweep: packet_rate.py, where ovs is a default tool):
    /usr/bin/python3 deploy/bench/ovs_peer.py --flows 10000 --window 2
Needs root and Debian's openvswitch-switch-dpdk (apt-get install openvswitch-switch-dpdk; its
postinst tries to start the system service, which this never uses) and a C++ compiler.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpdk_probe  # noqa: E402
import ovs_private  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OVS_MIN_MBUFS = 16384        # OVS's MIN_NB_MBUF: its rx ring, tx batches and per-lcore caches
OVS_SHARED_POOL = 262144     # OVS's shared pool for a 1500-byte MTU (MAX_NB_MBUF), which the shim never lowers
OVS_MBUF_OVERHEAD = 64 + 128 + 576 + 64  # header, rte_mbuf, dp_packet rest, trailer: 960 B measured with 192
CONN_HEAP_BYTES = 450        # OVS conntrack per connection on the heap: 335 measured at 10^6 (RssAnon), with margin
MAXCONNS_HEADROOM = 1.25
COOKIE = {"ct": 0x10, "non_ip": 0x11, "new": 0x12, "est": 0x13, "inv": 0x14, "other": 0x15}


def add_arguments(ap):
    """The OVS peer's options, for packet_rate.py's parser and this script's."""
    ap.add_argument("--ovs-vswitchd", default=ovs_private.VSWITCHD, help="the DPDK-enabled ovs-vswitchd")
    ap.add_argument("--ovs-forward", action="store_true",
                    help="OVS sends each packet back out of the pcap port (dropped by its tx queue, as testpmd "
                         "io's) instead of dropping it after conntrack (as flowcop monitor frees it)")
    ap.add_argument("--ovs-config", action="append", default=[], metavar="KEY=VALUE",
                    help="one more Open_vSwitch other_config setting for the OVS runs, e.g. smc-enable=true or "
                         "emc-insert-inv-prob=0 (repeatable; default: OVS's defaults)")


def check_installed(vswitchd):
    missing = ovs_private.missing_programs(vswitchd)
    if missing:
        raise SystemExit("the OVS peer needs %s: apt-get install %s (missing: %s)"
                         % (ovs_private.PACKAGES, ovs_private.PACKAGES, ", ".join(missing)))
    if shutil.which("c++") is None:
        raise SystemExit("the OVS peer compiles ovs_mbuf_shim.cpp: apt-get install g++")


def build_shim(workdir):
    """Compiles ovs_mbuf_shim.cpp into workdir (again only when the source is newer); its path."""
    src = os.path.join(HERE, "ovs_mbuf_shim.cpp")
    out = os.path.join(workdir, "libovs_mbuf_shim.so")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["c++", "-std=c++17", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", out, src, "-ldl"],
                       check=True)
    return out


def pool_mbufs(packets):
    return max(OVS_SHARED_POOL, packets + OVS_MIN_MBUFS)


def memory_mb(packets, data_room):
    """EAL memory (-m) for OVS's pool of pool_mbufs(packets), the capture's ring and EAL's own needs."""
    mbufs = pool_mbufs(packets)
    obj = OVS_MBUF_OVERHEAD + ((data_room + 63) // 64) * 64
    ring = 8 * (1 << packets.bit_length())  # the pcap vdev's ring of preloaded mbufs
    return int(math.ceil((1.03 * mbufs * obj + ring + 512 * 2**20) / 2**20))


def heap_bytes(flows):
    """ovs-vswitchd's memory outside EAL for N connections (conntrack lives on the heap)."""
    return flows * CONN_HEAP_BYTES + 512 * 2**20


def eal_args(a, packets, prefix):
    huge_dir = getattr(a, "huge_dir", None)
    # ovs-vswitchd appends --in-memory unless it sees --legacy-mem (checked in its log's "EAL ARGS"):
    # with hugepages EAL then maps them without files in huge_dir; --no-huge refuses --in-memory, so
    # there --legacy-mem keeps it out.
    pages = ["--huge-dir", huge_dir, "--huge-unlink"] if huge_dir else ["--no-huge", "--legacy-mem"]
    return pages + ["-m", str(memory_mb(packets, a.data_room)), "--no-pci", "--file-prefix=" + prefix]


def flow_rules(forward):
    out = "in_port" if forward else "drop"
    rules = [
        "table=0,priority=100,cookie=%#x,ip,ct_state=-trk,actions=ct(table=1)" % COOKIE["ct"],
        "table=0,priority=0,cookie=%#x,actions=drop" % COOKIE["non_ip"],
        "table=1,priority=110,cookie=%#x,ct_state=+trk+inv,actions=drop" % COOKIE["inv"],
        "table=1,priority=100,cookie=%#x,ip,ct_state=+trk+new,actions=ct(commit)%s"
        % (COOKIE["new"], "," + out if forward else ""),
        "table=1,priority=100,cookie=%#x,ip,ct_state=+trk+est,actions=%s" % (COOKIE["est"], out),
        "table=1,priority=0,cookie=%#x,actions=drop" % COOKIE["other"],
    ]
    return "\n".join(rules) + "\n"


def rule_packets(dump):
    """{cookie: n_packets} from ovs-ofctl dump-flows."""
    counts = {}
    for m in re.finditer(r"cookie=0x([0-9a-f]+),.*?n_packets=(\d+)", dump):
        counts[int(m.group(1), 16)] = counts.get(int(m.group(1), 16), 0) + int(m.group(2))
    return counts


def pmd_stats(text, cpu):
    """The counters of the PMD thread on `cpu` from dpif-netdev/pmd-stats-show, as {name: int}."""
    section = re.search(r"pmd thread numa_id \d+ core_id %d:\n(.*?)(?:\n\S|\Z)" % cpu, text, re.S)
    if section is None:
        raise RuntimeError("no PMD thread on core %d in pmd-stats-show:\n%s" % (cpu, text))
    stats = {}
    for line in section.group(1).splitlines():
        m = re.match(r"\s*([a-z .]+):\s*(\d+)(?:\s|$)", line)
        if m:
            stats[m.group(1).strip()] = int(m.group(2))
    return stats


def pmd_snapshot(ovs, cpu):
    """(the PMD's counters, the middle of the ovs-appctl call that read them, the call's duration)."""
    before = time.monotonic()
    stats = pmd_stats(ovs.appctl("dpif-netdev/pmd-stats-show"), cpu)
    after = time.monotonic()
    return stats, (before + after) / 2, after - before


def mempool(text):
    """The port's pool as OVS created it: {"mbufs", "bytes_per_mbuf"} (header, mbuf, dp_packet, data room)."""
    size = re.search(r"^\s*size=(\d+)", text, re.M)
    obj = re.search(r"total_obj_size=(\d+)", text)
    if size is None or obj is None:
        raise RuntimeError("no pool size in netdev-dpdk/get-mempool-info:\n%s" % text[:2000])
    return {"mbufs": int(size.group(1)), "bytes_per_mbuf": int(obj.group(1))}


def conntrack_total(text):
    m = re.search(r"Total:\s*(\d+)", text)
    if m is None:
        raise RuntimeError("no Total in dpctl/ct-stats-show:\n%s" % text)
    return int(m.group(1))


def process_memory(pid):
    """VmRSS, VmHWM and RssAnon of a process, in bytes (hugetlbfs pages are in none of them)."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon"):
                out[name] = int(value.split()[0]) * 1024
    return out


def configure(ovs, a, pcap, packets, flows, prefix, shim):
    """Database, daemon, bridge, rules and port; returns what was configured (for the results)."""
    extra = " ".join(eal_args(a, packets, prefix))
    ovs.start_db()
    for kv in a.ovs_config:
        if "=" not in kv or kv.split("=")[0] in ("dpdk-init", "pmd-cpu-mask", "dpdk-extra"):
            raise ValueError("--ovs-config %s: want KEY=VALUE, KEY not one the benchmark sets itself" % kv)
    ovs.vsctl("set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
              "other_config:pmd-cpu-mask=%#x" % (1 << a.cpu), "other_config:dpdk-extra=" + extra,
              *["other_config:" + kv for kv in a.ovs_config], wait=False)
    ovs.start_vswitchd({"LD_PRELOAD": shim, "FLOWCOP_OVS_MBUFS": str(pool_mbufs(packets)),
                        "FLOWCOP_OVS_DATA_ROOM": str(a.data_room)})
    br = ovs_private.BRIDGE
    ovs.vsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev", "fail-mode=secure")
    rules = flow_rules(a.ovs_forward)
    rules_path = ovs.log_prefix + "-flows.txt"
    with open(rules_path, "w") as f:
        f.write(rules)
    ovs.ofctl("add-flows", ovs.mgmt, rules_path)
    maxconns = max(int(flows * MAXCONNS_HEADROOM), 3000000)
    ovs.appctl("dpctl/ct-set-maxconns", str(maxconns))
    devargs = "net_pcap0,rx_pcap=%s,infinite_rx=1" % pcap
    # --no-wait: preloading a big capture takes longer than a vsctl round; the warm-up waits for packets.
    ovs.vsctl("add-port", br, "p0", "--", "set", "Interface", "p0", "type=dpdk", "options:dpdk-devargs=" + devargs,
              "ofport_request=1", wait=False)
    return {"dpdk_extra": extra, "pmd_cpu_mask": "%#x" % (1 << a.cpu), "main_cpu": ovs.main_cpu,
            "devargs": devargs, "rules": rules.splitlines(), "maxconns": maxconns,
            "pool_mbufs": pool_mbufs(packets), "data_room": a.data_room, "other_config": a.ovs_config,
            "version": ovs.appctl("version").strip().splitlines()[0]}


def port_error(ovs):
    try:
        return ovs.vsctl("get", "Interface", "p0", "error", wait=False, timeout=10).strip()
    except ovs_private.OvsError as e:
        return str(e)


def warm_up(ovs, a, tel, packets):
    """Waits for one whole loop of the capture and --warm more seconds (as packet_rate.py does)."""
    deadline = time.monotonic() + 120 + 11 * packets / 100000.0
    first = None
    while True:
        n, t = tel.rx_packets()
        if n > 0 and first is None:
            first = t
        if n >= packets and first is not None and t - first >= a.warm:
            return
        if time.monotonic() > deadline or ovs.vswitchd.poll() is not None:
            raise RuntimeError("ovs: warm-up did not finish (%d of %d packets; vswitchd exit %s; p0 error %s)"
                               % (n, packets, ovs.vswitchd.poll(), port_error(ovs)))
        time.sleep(0.1)


def ofp_counts(ovs):
    ovs.appctl("revalidator/wait")  # the rules' counters include every datapath packet so far
    return rule_packets(ovs.ofctl("dump-flows", ovs.mgmt))


def measure(ovs, a, prefix, packets, flows, result):
    pid = ovs.vswitchd_pid
    tel = dpdk_probe.connect_when_ready(prefix, ovs.vswitchd, time.monotonic() + 120)
    if tel is None:
        raise RuntimeError("ovs-vswitchd's telemetry socket did not appear (exit %s)" % ovs.vswitchd.poll())
    try:
        warm_up(ovs, a, tel, packets)
        tid = dpdk_probe.find_thread(pid, "pmd-c%02d" % a.cpu) or dpdk_probe.busiest_thread(pid)
        result["ovs_pool"] = mempool(ovs.appctl("netdev-dpdk/get-mempool-info", "p0"))
        ofp0 = ofp_counts(ovs)
        if a.nice:
            dpdk_probe.set_priority(pid, a.nice)
            time.sleep(0.2)
        s0, c0, (st0, tt0), load0 = tel.rx_packets(), dpdk_probe.thread_cpu_ns(pid, tid), \
            dpdk_probe.cpu_times(a.cpu), dpdk_probe.load_average()
        p0 = pmd_snapshot(ovs, a.cpu)
        time.sleep(a.window)
        s1, c1, (st1, tt1) = tel.rx_packets(), dpdk_probe.thread_cpu_ns(pid, tid), dpdk_probe.cpu_times(a.cpu)
        p1 = pmd_snapshot(ovs, a.cpu)
        if a.nice:
            dpdk_probe.set_priority(pid, 0)
        ofp1 = ofp_counts(ovs)
        conns = conntrack_total(ovs.appctl("dpctl/ct-stats-show"))
        rss = process_memory(pid)
    finally:
        tel.close()
    wall, pk = s1[1] - s0[1], s1[0] - s0[0]
    result.update(packets=pk, seconds=wall, mpps=pk / wall / 1e6, cpu_share=(c1 - c0) / 1e9 / wall,
                  mpps_per_cpu=pk / ((c1 - c0) / 1e9) / 1e6 if c1 > c0 else 0.0,
                  steal=(st1 - st0) / max(1, tt1 - tt0), load1=load0[0], rx_at_start=s0[0])
    d = {k: p1[0].get(k, 0) - p0[0].get(k, 0) for k in p1[0]}
    got = max(1, d.get("packets received", 0))
    pmd_seconds = p1[1] - p0[1]
    rules = {name: ofp1.get(c, 0) - ofp0.get(c, 0) for name, c in COOKIE.items()}
    result["ovs"] = {
        "pmd_mpps": d.get("packets received", 0) / pmd_seconds / 1e6,
        # when the PMD's counters were read is known to within half of each ovs-appctl round trip
        "pmd_rate_uncertainty": (p0[2] + p1[2]) / 2 / pmd_seconds,
        "cycles_per_packet": d.get("processing cycles", 0) / got,
        "passes_per_packet": 1 + d.get("packet recirculations", 0) / got,
        "emc_hit_share": d.get("emc hits", 0) / (got + d.get("packet recirculations", 0)),
        "megaflow_hit_share": d.get("megaflow hits", 0) / (got + d.get("packet recirculations", 0)),
        "pmd_counters": d, "rule_packets": rules, "connections": conns,
        "memory_mb": {k: v / 2**20 for k, v in rss.items()}}
    result["problems"] = problems(result, flows)


def problems(result, flows):
    """What says the run did not measure N established connections (empty: it did)."""
    o, out = result["ovs"], []
    if o["connections"] != flows:
        out.append("conntrack holds %d connections, not %d" % (o["connections"], flows))
    for name in ("new", "inv", "other", "non_ip"):
        if o["rule_packets"][name]:
            out.append("%d packets hit the %s rule during the window" % (o["rule_packets"][name], name))
    # The rules' counters are exact at both reads (revalidator/wait) and bracket the rx window.
    if o["rule_packets"]["est"] < result["packets"]:
        out.append("+est rule counted %d packets, the port delivered %d"
                   % (o["rule_packets"]["est"], result["packets"]))
    if abs(o["pmd_mpps"] - result["mpps"]) > (0.03 + o["pmd_rate_uncertainty"]) * result["mpps"]:
        out.append("PMD received %.3f Mpps, the port delivered %.3f" % (o["pmd_mpps"], result["mpps"]))
    return out


def run_one(a, pcap, packets, flows, rep, workdir, shim):
    """One OVS run on the capture; a result dict as packet_rate.run_one's (tool "ovs")."""
    prefix = "prb_ovs_%d_%d_%d" % (flows, rep, os.getpid())
    main_cpu = 1 - a.cpu if a.cpu in (0, 1) else 0
    log_prefix = os.path.join(workdir, "ovs-%d-%d" % (flows, rep))
    result = {"tool": "ovs", "flows": flows, "rep": rep, "log": log_prefix + "-ovs-vswitchd.log"}
    ovs = ovs_private.PrivateOvs(log_prefix, main_cpu, a.ovs_vswitchd)
    try:
        with ovs:
            result["ovs_config"] = configure(ovs, a, pcap, packets, flows, prefix, shim)
            result["cmd"] = "%s with dpdk-extra '%s', devargs %s" % (a.ovs_vswitchd, result["ovs_config"]["dpdk_extra"],
                                                                     result["ovs_config"]["devargs"])
            measure(ovs, a, prefix, packets, flows, result)
    except (OSError, RuntimeError, ValueError) as e:  # OvsError is a RuntimeError
        result["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
    # ovs-vswitchd's exit status (-15: ended by the SIGTERM of stop(), as it should be)
    result["exit"] = ovs.vswitchd.returncode if ovs.vswitchd else None
    return result


def main(argv):
    import flows_pcap
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=10000, help="concurrent flows in the capture (default 10000)")
    ap.add_argument("--passes", type=int, default=2, help="rounds over all flows per capture loop (default 2)")
    ap.add_argument("--window", type=float, default=4.0, help="measured seconds (default 4)")
    ap.add_argument("--warm", type=float, default=1.0, help="seconds after the first loop before measuring")
    ap.add_argument("--cpu", type=int, default=1, help="CPU of the PMD thread (default 1; OVS's others: 1 - CPU)")
    ap.add_argument("--data-room", type=int, default=192, help="mbuf data room, bytes (default 192)")
    ap.add_argument("--nice", type=int, default=-20, help="nice of ovs-vswitchd during the window only")
    ap.add_argument("--huge-dir", default=None, help="EAL memory from this hugetlbfs mount (default --no-huge)")
    ap.add_argument("--workdir", default="/tmp/flowcop-ovs-peer", help="capture, shim, logs (default %(default)s)")
    add_arguments(ap)
    a = ap.parse_args(argv)
    check_installed(a.ovs_vswitchd)
    os.makedirs(a.workdir, exist_ok=True)
    pcap = os.path.join(a.workdir, "flows-%d-passes-%d.pcap" % (a.flows, a.passes))
    if not os.path.exists(pcap):
        flows_pcap.write(pcap + ".tmp", a.flows, a.passes, 20240601)
        os.rename(pcap + ".tmp", pcap)
    r = run_one(a, pcap, a.flows * a.passes, a.flows, 0, a.workdir, build_shim(a.workdir))
    print(json.dumps(r, indent=1))
    return 1 if r.get("error") or r.get("problems") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
