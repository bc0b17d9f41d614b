# SPDX-License-Identifier: BSD-3-Clause
"""A fake host for deploy/host-setup.sh: a sysfs and procfs tree plus recording tool stubs.

FakeHost(tmp) lays out sys/ and proc/ as the script reads them (PCI devices with class, driver,
NUMA node, interface and IOMMU group; CPUs and NUMA nodes; hugepage counters; mounts; routes) and
writes three stubs the script calls through DPDK_DEVBIND, DPDK_HUGEPAGES and MODPROBE. Each stub
appends its argv to a log and applies the effect to the fake tree only:

- dpdk-hugepages: the real /usr/bin/dpdk-hugepages.py (its argument parsing, size arithmetic and
  checks) with every /sys and /proc path remapped into the tree and `mount`/`umount` applied to
  the fake proc/mounts. STUB_HUGE_LIMIT=N caps what a reservation gets (a fragmented host).
- dpdk-devbind: the real dpdk-devbind.py's parse_args() (so a command line the real tool would
  reject fails here), then the bind/unbind applied to the tree: the driver link moves and the
  kernel interface disappears under vfio-pci and comes back under a kernel driver.
- modprobe vfio-pci: creates the driver directory.

Nothing here touches the real /sys: the stubs refuse to run without FAKE_ROOT.
"""
import hashlib
import os
import stat

REAL_HUGEPAGES = "/usr/bin/dpdk-hugepages.py"
REAL_DEVBIND = "/usr/bin/dpdk-devbind.py"

HUGEPAGES_STUB = r'''#!/usr/bin/python3
import glob as _glob, importlib.util, os, re, sys
root = os.environ["FAKE_ROOT"]
with open(os.environ["STUB_LOG"], "a") as f:
    f.write("dpdk-hugepages " + " ".join(sys.argv[1:]) + "\n")
def remap(p):
    p = str(p)
    return root + p if p.startswith(("/sys/", "/proc/", "/dev/")) else p
spec = importlib.util.spec_from_file_location("hp", REAL)
hp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hp)
limit = os.environ.get("STUB_HUGE_LIMIT")
_open = open
def fake_open(p, mode="r", *a, **k):
    p2 = remap(p)
    if "w" in mode and p2.endswith("nr_hugepages") and limit is not None:
        class W:
            def __enter__(s): return s
            def __exit__(s, *e): pass
            def write(s, v):
                with _open(p2, "w") as f:
                    f.write(str(min(int(v), int(limit))) + "\n")
        return W()
    return _open(p2, mode, *a, **k)
def fake_system(cmd):
    mounts = root + "/proc/mounts"
    words = cmd.split()
    if words[0] == "mount":
        opts = [words[i + 1] for i, w in enumerate(words) if w == "-o"]
        d = words[-1]
        if not os.path.isdir(root + d if d.startswith("/dev/") else d):
            print("mount: " + d + ": mount point does not exist.", file=sys.stderr)
            return 32
        with _open(mounts, "a") as f:
            f.write("nodev %s hugetlbfs rw,relatime,%s 0 0\n" % (d, ",".join(opts)))
    elif words[0] == "umount":
        lines = [l for l in _open(mounts) if l.split()[1] != words[-1]]
        with _open(mounts, "w") as f:
            f.writelines(lines)
    else:
        raise SystemExit("stub: unexpected command " + cmd)
    return 0
class Os:
    def __getattr__(s, n): return getattr(os, n)
    class path:
        exists = staticmethod(lambda p: os.path.exists(remap(p)))
        dirname = staticmethod(os.path.dirname)
    listdir = staticmethod(lambda p: os.listdir(remap(p)))
    system = staticmethod(fake_system)
class Glob:
    glob = staticmethod(lambda p: [q[len(root):] for q in _glob.glob(remap(p))])
hp.open = fake_open
hp.os = Os()
hp.glob = Glob()
hp.main()
'''

DEVBIND_STUB = r'''#!/usr/bin/python3
import importlib.util, json, os, sys
root = os.environ["FAKE_ROOT"]
with open(os.environ["STUB_LOG"], "a") as f:
    f.write("dpdk-devbind " + " ".join(sys.argv[1:]) + "\n")
spec = importlib.util.spec_from_file_location("db", REAL)
db = importlib.util.module_from_spec(spec)
spec.loader.exec_module(db)
db.parse_args()                      # the real tool's command line rules
drv = db.b_flag
ifaces = json.load(open(root + "/ifaces.json"))
for dev in db.args:
    d = root + "/sys/bus/pci/devices/" + dev
    if not os.path.isdir(d):
        sys.exit("Error: unknown device: " + dev)
    link = d + "/driver"
    if os.path.islink(link):
        os.unlink(link)
    net = d + "/net"
    if os.path.isdir(net):
        for n in os.listdir(net):
            os.rmdir(os.path.join(net, n))
            os.unlink(root + "/sys/class/net/" + n)
        os.rmdir(net)
    if drv in ("none", "None"):
        continue
    ddir = root + "/sys/bus/pci/drivers/" + drv
    if not os.path.isdir(ddir):
        sys.exit("Error: Driver '%s' is not loaded." % drv)
    os.symlink("../../drivers/" + drv, link)
    if drv != "vfio-pci" and dev in ifaces:   # a kernel driver brings the interface back
        os.makedirs(net + "/" + ifaces[dev])
        os.symlink("../../bus/pci/devices/%s/net/%s" % (dev, ifaces[dev]), root + "/sys/class/net/" + ifaces[dev])
'''

MODPROBE_STUB = r'''#!/usr/bin/python3
import os, sys
root = os.environ["FAKE_ROOT"]
with open(os.environ["STUB_LOG"], "a") as f:
    f.write("modprobe " + " ".join(sys.argv[1:]) + "\n")
os.makedirs(root + "/sys/bus/pci/drivers/" + sys.argv[1], exist_ok=True)
'''

# Devices of the default fake host: address -> (class, driver, numa node, interface, iommu group).
DEFAULT_DEVICES = {
    "0000:3b:00.0": ("0x020000", "i40e", 1, "ens1f0", 30),
    "0000:3b:00.1": ("0x020000", "i40e", 1, "ens1f1", 31),
    "0000:00:03.0": ("0x020000", "virtio-pci", 0, "eth0", 3),       # the host's own network
    "0000:5e:00.0": ("0x020000", "ixgbe", 0, "ens2f0", 40),
    "0000:5e:00.1": ("0x020000", "ixgbe", 0, "ens2f1", 40),        # same group as 5e:00.0
    "0000:00:02.0": ("0x010802", "nvme", 0, None, 2),               # a disk
}


class FakeHost:
    def __init__(self, tmp, devices=None, iommu=True, cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet",
                 vendor="GenuineIntel", nodes=2, cpus_per_node=8, routes=("eth0",), hugepages=None):
        self.root = os.path.join(tmp, "host")
        self.log = os.path.join(tmp, "stub.log")
        self.state_dir = os.path.join(tmp, "state")
        self.devices = DEFAULT_DEVICES if devices is None else devices
        r = self.root
        sysd, proc = r + "/sys", r + "/proc"
        for d in ("bus/pci/devices", "bus/pci/drivers", "class/net", "kernel/iommu_groups",
                  "devices/system/cpu", "kernel/mm/hugepages"):
            os.makedirs(f"{sysd}/{d}", exist_ok=True)
        os.makedirs(proc + "/net", exist_ok=True)
        os.makedirs(r + "/dev", exist_ok=True)
        ifaces = {}
        for addr, (cls, drv, node, ifc, group) in self.devices.items():
            d = f"{sysd}/bus/pci/devices/{addr}"
            os.makedirs(d)
            self._w(d + "/class", cls)
            self._w(d + "/vendor", "0x8086")
            self._w(d + "/device", "0x1572")
            self._w(d + "/numa_node", str(node))
            os.makedirs(f"{sysd}/bus/pci/drivers/{drv}", exist_ok=True)
            os.symlink(f"../../drivers/{drv}", d + "/driver")
            if ifc:
                ifaces[addr] = ifc
                os.makedirs(f"{d}/net/{ifc}")
                os.symlink(f"../../bus/pci/devices/{addr}/net/{ifc}", f"{sysd}/class/net/{ifc}")
            if iommu:
                g = f"{sysd}/kernel/iommu_groups/{group}/devices"
                os.makedirs(g, exist_ok=True)
                os.symlink(f"../../../bus/pci/devices/{addr}", f"{g}/{addr}")
                os.symlink(f"../../../kernel/iommu_groups/{group}", d + "/iommu_group")
        self._w(r + "/ifaces.json", __import__("json").dumps(ifaces))
        ncpu = nodes * cpus_per_node
        self._w(f"{sysd}/devices/system/cpu/online", f"0-{ncpu - 1}")
        sizes = ("2048", "1048576")
        for n in range(nodes):
            lo, hi = n * cpus_per_node, (n + 1) * cpus_per_node - 1
            self._w(f"{sysd}/devices/system/node/node{n}/cpulist", f"{lo}-{hi}")
            for c in range(lo, hi + 1):
                os.makedirs(f"{sysd}/devices/system/cpu/cpu{c}/node{n}")
            for s in sizes:
                count = (hugepages or {}).get((n, s), 0)
                self._w(f"{sysd}/devices/system/node/node{n}/hugepages/hugepages-{s}kB/nr_hugepages", str(count))
        for s in sizes:
            self._w(f"{sysd}/kernel/mm/hugepages/hugepages-{s}kB/nr_hugepages", "0")
        self._w(proc + "/cmdline", cmdline)
        self._w(proc + "/cpuinfo", f"processor\t: 0\nvendor_id\t: {vendor}\n")
        self._w(proc + "/meminfo", "MemTotal:       24000000 kB\nHugepagesize:       2048 kB\n")
        self._w(proc + "/mounts", "sysfs /sys sysfs rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n")
        hdr = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        self._w(proc + "/net/route", hdr + "".join(f"{i}\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                                                   for i in routes))
        self._w(proc + "/net/ipv6_route", "")
        self.stubs = {}
        for name, body, real in (("dpdk-hugepages", HUGEPAGES_STUB, REAL_HUGEPAGES),
                                 ("dpdk-devbind", DEVBIND_STUB, REAL_DEVBIND), ("modprobe", MODPROBE_STUB, None)):
            p = os.path.join(tmp, name + "-stub")
            self._w(p, body.replace("REAL)", repr(real) + ")") if real else body)
            os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
            self.stubs[name] = p
        open(self.log, "w").close()

    @staticmethod
    def _w(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text if text.endswith("\n") or not text else text + "\n")

    def env(self, **extra):
        e = dict(os.environ, FLOWCOP_SYSFS=self.root + "/sys", FLOWCOP_PROCFS=self.root + "/proc",
                 DPDK_DEVBIND=self.stubs["dpdk-devbind"], DPDK_HUGEPAGES=self.stubs["dpdk-hugepages"],
                 MODPROBE=self.stubs["modprobe"], FAKE_ROOT=self.root, STUB_LOG=self.log)
        e.update(extra)
        return e

    def calls(self):
        with open(self.log) as f:
            return [l.rstrip("\n") for l in f if l.strip()]

    def driver(self, addr):
        link = f"{self.root}/sys/bus/pci/devices/{addr}/driver"
        return os.path.basename(os.readlink(link)) if os.path.islink(link) else "none"

    def hugepages(self, node, size="2048"):
        with open(f"{self.root}/sys/devices/system/node/node{node}/hugepages/hugepages-{size}kB/nr_hugepages") as f:
            return int(f.read())

    def mounts(self):
        with open(self.root + "/proc/mounts") as f:
            return [l.split() for l in f if l.strip()]

    def digest(self):
        """A hash of every path, link target and file content in the tree: equal means unchanged."""
        h = hashlib.sha256()
        for dirpath, dirnames, filenames in sorted(os.walk(self.root)):
            dirnames.sort()
            for n in sorted(dirnames + filenames):
                p = os.path.join(dirpath, n)
                h.update(p[len(self.root):].encode())
                if os.path.islink(p):
                    h.update(b"->" + os.readlink(p).encode())
                elif os.path.isfile(p):
                    with open(p, "rb") as f:
                        h.update(f.read())
        return h.hexdigest()
