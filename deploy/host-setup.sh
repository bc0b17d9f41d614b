#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Prepares a NIC-bound host for flowcop, or undoes that. Run as root.
#
#   host-setup.sh [--dry-run] --nic DEV[,DEV...] --lcores LIST [--hugepages SIZE] [--pagesize SIZE]
#                 [--huge-dir DIR] [--user USER] [--state-dir DIR]
#   host-setup.sh [--dry-run] --undo [--state-dir DIR]
#   host-setup.sh --list | --help
#
# Setup checks the IOMMU (vfio-pci needs one), that each NIC exists, is a network device, is not
# carrying this host's own routes and shares its IOMMU group with nothing the kernel still drives,
# that the lcores exist and sit on each NIC's NUMA node; then reserves hugepages on the lcores'
# nodes with dpdk-hugepages.py, mounts a hugetlbfs owned by the service user, and binds the NICs
# to vfio-pci with dpdk-devbind.py. Each change is recorded (original driver, original page count,
# the mount) in the state file before it is made, so --undo restores exactly that. Idempotent: a
# second run finds everything in place and changes nothing; the first recorded original is kept.
# --dry-run reads the same files, prints every command it would run and changes nothing.
#
# Exit codes: 0 done (or nothing to do); 1 a check or command failed (every problem is printed
# with its fix); 2 bad arguments.
#
# Environment (tests point these at a fake tree and recording stubs; operators leave them alone):
# FLOWCOP_SYSFS (/sys), FLOWCOP_PROCFS (/proc), DPDK_DEVBIND (dpdk-devbind.py),
# DPDK_HUGEPAGES (dpdk-hugepages.py), MODPROBE (modprobe).
set -euo pipefail

SYS=${FLOWCOP_SYSFS:-/sys}
PROC=${FLOWCOP_PROCFS:-/proc}
DEVBIND=${DPDK_DEVBIND:-dpdk-devbind.py}
HUGEPAGES=${DPDK_HUGEPAGES:-dpdk-hugepages.py}
MODPROBE=${MODPROBE:-modprobe}
PROG=host-setup.sh
DRIVER=vfio-pci

dry_run=0 mode=setup nics_arg="" lcores_arg="" huge_size=2G page_arg="" huge_dir=/dev/hugepages-flowcop
user=flowcop state_dir=/var/lib/flowcop problems=0

usage() { sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//'; }
die_usage() { echo "$PROG: $*" >&2; echo "usage:" >&2; usage >&2; exit 2; }
say() { echo "$PROG: $*"; }
warn() { echo "$PROG: warning: $*" >&2; }
# A problem is printed with its fix and makes the run fail, after every check has run.
problem() { echo "$PROG: error: $*" >&2; problems=$((problems + 1)); }
# Every command that changes the host goes through run: printed always, executed unless dry-run.
# A failure is a problem (the tool's own message is above it) and returns 1 to stop that step.
run() {
    if [ "$dry_run" = 1 ]; then echo "would run: $*"; return 0; fi
    echo "running: $*"
    local rc=0
    "$@" || rc=$?
    [ "$rc" -eq 0 ] || problem "'$*' failed with exit $rc (its message is above)"
    return "$rc"
}

while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) dry_run=1 ;;
    --undo) mode=undo ;;
    --list) mode=list ;;
    -h | --help) usage; exit 0 ;;
    --nic | --lcores | --hugepages | --pagesize | --huge-dir | --user | --state-dir)
        [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
        case "$1" in
        --nic) nics_arg="${nics_arg:+$nics_arg,}$2" ;;
        --lcores) lcores_arg=$2 ;;
        --hugepages) huge_size=$2 ;;
        --pagesize) page_arg=$2 ;;
        --huge-dir) huge_dir=$2 ;;
        --user) user=$2 ;;
        --state-dir) state_dir=$2 ;;
        esac
        shift ;;
    *) die_usage "unknown argument '$1'" ;;
    esac
    shift
done
state_file=$state_dir/host-setup.state

# ---------------------------------------------------------------- helpers

# "0-3,8" -> "0 1 2 3 8"; returns 1 on a malformed list.
expand_list() {
    local part a b out=()
    [[ $1 =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || return 1
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        a=${part%-*} b=${part#*-}
        [ $((10#$a)) -le $((10#$b)) ] || return 1
        for ((i = 10#$a; i <= 10#$b; i++)); do out+=("$i"); done
    done
    echo "${out[@]}"
}
# "0 1 2 3 8" -> "0-3,8"
compress_list() {
    local out="" start="" prev="" n
    for n in $(printf '%s\n' "$@" | sort -n | uniq); do
        if [ -n "$prev" ] && [ "$n" -eq $((prev + 1)) ]; then prev=$n; continue; fi
        [ -n "$start" ] && out+="${out:+,}$start$([ "$prev" != "$start" ] && echo "-$prev")"
        start=$n prev=$n
    done
    [ -n "$start" ] && out+="${out:+,}$start$([ "$prev" != "$start" ] && echo "-$prev")"
    echo "$out"
}
# "2M" / "1G" / "2048K" -> kB; returns 1 if malformed.
size_kb() {
    local n u
    [[ ${1^^} =~ ^([0-9]+)([KMG])B?$ ]] || return 1
    n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
    case $u in K) echo "$n" ;; M) echo $((n * 1024)) ;; G) echo $((n * 1024 * 1024)) ;; esac
}
pci_dir() { echo "$SYS/bus/pci/devices/$1"; }
driver_of() { local l; l=$(readlink "$(pci_dir "$1")/driver" 2>/dev/null) && basename "$l" || echo none; }
# The kernel interface of a device: under net/ directly, or one level down (virtio-pci's virtioN/net/).
iface_of() {
    local n
    for n in "$(pci_dir "$1")"/net/* "$(pci_dir "$1")"/*/net/*; do [ -e "$n" ] && { basename "$n"; return; }; done
    return 0
}
numa_of() { cat "$(pci_dir "$1")/numa_node" 2>/dev/null || echo -1; }
is_network() { [[ $(cat "$(pci_dir "$1")/class" 2>/dev/null) == 0x02* ]]; }
net_devices() {
    local d
    for d in "$SYS"/bus/pci/devices/*; do [ -e "$d" ] && is_network "$(basename "$d")" && basename "$d"; done
    return 0
}
# An interface that carries an IPv4 or IPv6 route is this host's network: never take it.
is_active() {
    [ -n "$1" ] || return 1
    awk -v i="$1" 'NR > 1 && $1 == i { f = 1 } END { exit !f }' "$PROC/net/route" 2>/dev/null && return 0
    awk -v i="$1" '$NF == i { f = 1 } END { exit !f }' "$PROC/net/ipv6_route" 2>/dev/null
}
describe() {
    local a=$1 ifc
    ifc=$(iface_of "$a")
    echo "$a $(cat "$(pci_dir "$a")/vendor" 2>/dev/null):$(cat "$(pci_dir "$a")/device" 2>/dev/null)" \
        "driver=$(driver_of "$a") if=${ifc:-none} numa_node=$(numa_of "$a")$(is_active "$ifc" && echo " ACTIVE (carries this host's routes: will not bind)")"
}
known_devices() {
    local list; list=$(net_devices)
    if [ -z "$list" ]; then
        echo "this host has no network PCI device (flowcop needs a NIC bound to vfio-pci; without one," \
            "run it on --vdev=net_pcap0,rx_pcap=FILE, net_af_packet or --flowgen)"
    else
        echo "network PCI devices on this host:"; for a in $list; do echo "  $(describe "$a")"; done
    fi
}
# PCI address (DDDD:BB:SS.F or BB:SS.F) or interface name -> $resolved_addr (full address), or ""
# and a problem. Sets a global rather than printing: a subshell would lose the problem count.
resolve_nic() {
    local d=$1 l
    resolved_addr=""
    if [[ $d =~ ^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]]; then d=0000:$d; fi
    if [[ $d =~ ^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]]; then
        d=${d,,}
        [ -e "$(pci_dir "$d")" ] && { resolved_addr=$d; return; }
        problem "no PCI device $d; $(known_devices)"; return
    fi
    # An interface: the last PCI address on its device path (virtio nests a virtioN device below it).
    if [ -e "$SYS/class/net/$d" ] && l=$(readlink -f "$SYS/class/net/$d"); then
        resolved_addr=$(tr / '\n' <<<"$l" | grep -E '^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$' | tail -n1 || true)
        [ -n "$resolved_addr" ] && return
        problem "interface $d is not a PCI device (virtual or USB: DPDK reaches it only through --vdev=net_af_packet0,iface=$d)"
        return
    fi
    problem "'$d' is neither a PCI address (0000:3b:00.0 or 3b:00.0) nor a network interface of this host; $(known_devices)"
}
online_cpus() { expand_list "$(cat "$SYS/devices/system/cpu/online")"; }
cpu_node() {
    local n
    for n in "$SYS"/devices/system/cpu/cpu"$1"/node*; do [ -e "$n" ] && { echo "${n##*node}"; return; }; done
    echo 0 # no node link: a non-NUMA kernel, everything is node 0
}
node_cpus() { cat "$SYS/devices/system/node/node$1/cpulist" 2>/dev/null || echo "?"; }
is_numa() { [ -d "$SYS/devices/system/node/node0" ]; }
huge_path() { # node pagesize_kb -> the nr_hugepages file
    if [ "$1" = - ]; then echo "$SYS/kernel/mm/hugepages/hugepages-$2kB/nr_hugepages"
    else echo "$SYS/devices/system/node/node$1/hugepages/hugepages-$2kB/nr_hugepages"; fi
}
mounted_at() { awk -v d="$1" '$2 == d && $3 == "hugetlbfs" { print $4; f = 1 } END { exit !f }' "$PROC/mounts"; }
# State lines: "bind ADDR ORIGINAL_DRIVER", "hugepages NODE|- PAGESIZE_KB ORIGINAL_COUNT",
# "mount DIR". Only the first record of a thing is kept: it is the host as it was before flowcop.
# record KEY [VALUE]: KEY names the thing ("bind ADDR"), VALUE is what it was.
record() {
    [ "$dry_run" = 1 ] && return 0
    [ -f "$state_file" ] && grep -qE "^$1( |\$)" "$state_file" && return 0
    mkdir -p "$state_dir"
    echo "$1${2:+ $2}" >>"$state_file"
}

# ---------------------------------------------------------------- modes

do_list() {
    known_devices
    if [ -n "$(ls -A "$SYS/kernel/iommu_groups" 2>/dev/null)" ]; then echo "IOMMU: on"
    else echo "IOMMU: off (no groups in $SYS/kernel/iommu_groups)"; fi
    exit 0
}

check_iommu() {
    [ -n "$(ls -A "$SYS/kernel/iommu_groups" 2>/dev/null)" ] && { say "IOMMU: on"; return; }
    local cmdline vendor fix
    cmdline=$(cat "$PROC/cmdline" 2>/dev/null || true)
    vendor=$(awk -F': ' '/^vendor_id/ { print $2; exit }' "$PROC/cpuinfo" 2>/dev/null || true)
    case $vendor in
    AuthenticAMD) fix="amd_iommu=on iommu=pt" ;;
    *) fix="intel_iommu=on iommu=pt" ;;
    esac
    if [[ " $cmdline " == *" intel_iommu=on"* || " $cmdline " == *" amd_iommu=on"* ]]; then
        problem "IOMMU requested on the kernel command line but $SYS/kernel/iommu_groups is empty: enable" \
            "VT-d (Intel) or AMD-Vi/IOMMU in the firmware setup, then reboot"
    else
        problem "no IOMMU ($SYS/kernel/iommu_groups is empty and the kernel command line has no" \
            "intel_iommu=on/amd_iommu=on): vfio-pci cannot give DPDK the NIC. Fix: add '$fix' to" \
            "GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, enable VT-d/AMD-Vi in the firmware, reboot"
    fi
}

# vfio hands out whole IOMMU groups: every other endpoint in the group must be unbound or vfio's.
check_group() {
    local a=$1 g other drv
    g=$(readlink "$(pci_dir "$a")/iommu_group" 2>/dev/null) || return 0
    for other in "$SYS/kernel/iommu_groups/$(basename "$g")/devices"/*; do
        other=$(basename "$other")
        [ "$other" = "$a" ] && continue
        [[ " $nics " == *" $other "* ]] && continue
        [[ $(cat "$(pci_dir "$other")/class" 2>/dev/null) == 0x0604* ]] && continue # PCI bridge
        drv=$(driver_of "$other")
        if [ "$drv" != none ] && [ "$drv" != "$DRIVER" ]; then
            problem "$a shares IOMMU group $(basename "$g") with $other (driver $drv): vfio needs the whole" \
                "group. Fix: bind $other too (--nic $a --nic $other) or put the card in a slot with its own group" \
                "(ACS); see ls $SYS/kernel/iommu_groups/$(basename "$g")/devices"
        fi
    done
}

check_numa() { # NIC node vs the lcores' nodes; a mismatch costs a cross-node hop per packet
    local a=$1 node c off=()
    node=$(numa_of "$a")
    if [ "$node" -lt 0 ]; then
        is_numa && [ -d "$SYS/devices/system/node/node1" ] &&
            warn "$a reports no NUMA node (numa_node=-1): check the firmware's ACPI SRAT; cannot check placement"
        return 0
    fi
    for c in $lcores; do [ "$(cpu_node "$c")" = "$node" ] || off+=("$c"); done
    [ ${#off[@]} -eq 0 ] && { say "NUMA: $a and lcores $(compress_list $lcores) are on node $node"; return; }
    warn "$a is on NUMA node $node but lcores $(compress_list "${off[@]}") are not: each of their packets" \
        "and flow records crosses the interconnect. Fix: choose lcores from node $node (CPUs" \
        "$(node_cpus "$node")) in FLOWCOP_EAL_OPTS (-l), or move the NIC to a slot on the lcores' node"
}

setup_hugepages() {
    local want_kb pages node path cur nodes=() opts owner
    want_kb=$(size_kb "$huge_size")
    if [ ! -d "$SYS/kernel/mm/hugepages/hugepages-${page_kb}kB" ]; then
        problem "hugepage size ${page_kb} kB is not supported by this kernel (have:" \
            "$(ls "$SYS/kernel/mm/hugepages" 2>/dev/null | tr '\n' ' '))"; return
    fi
    [ $((want_kb % page_kb)) -eq 0 ] || { problem "--hugepages $huge_size is not a multiple of the ${page_kb} kB page size"; return; }
    pages=$((want_kb / page_kb))
    if is_numa; then for c in $lcores; do nodes+=("$(cpu_node "$c")"); done
    else nodes=(-); fi
    for node in $(printf '%s\n' "${nodes[@]}" | sort -u); do
        path=$(huge_path "$node" "$page_kb")
        cur=$(cat "$path" 2>/dev/null || echo 0)
        if [ "$cur" -ge "$pages" ]; then
            say "hugepages: node $node already has $cur pages of ${page_kb} kB (want $pages)"; continue
        fi
        record "hugepages $node $page_kb" "$cur"
        if [ "$node" = - ]; then run "$HUGEPAGES" -p "${page_kb}K" --reserve "$((pages * page_kb))K" || true
        else run "$HUGEPAGES" -p "${page_kb}K" --reserve "$((pages * page_kb))K" --node "$node" || true; fi
        if [ "$dry_run" = 0 ] && [ "$(cat "$path")" -lt "$pages" ]; then
            problem "node $node has $(cat "$path") of $pages hugepages: memory is fragmented; reserve them at boot" \
                "(kernel command line: hugepagesz=$((page_kb / 1024))M hugepages=$pages) and reboot"
        fi
    done
    [ "$problems" -eq 0 ] || return 0
    if opts=$(mounted_at "$huge_dir"); then
        say "hugetlbfs already mounted at $huge_dir ($opts)"
    else
        owner=()
        if [ "$user" != root ]; then
            if id "$user" >/dev/null 2>&1; then owner=(-U "$(id -u "$user")" -G "$(id -g "$user")")
            else problem "user '$user' does not exist: deploy/systemd/install.sh creates it (or pass --user root)"; return; fi
        fi
        record "mount $huge_dir"
        run mkdir -p "$huge_dir" || return 0
        run "$HUGEPAGES" -p "${page_kb}K" --mount -d "$huge_dir" "${owner[@]}" || return 0
        # dpdk-hugepages.py does not report a failed mount: look.
        [ "$dry_run" = 1 ] || mounted_at "$huge_dir" >/dev/null || problem "mounting hugetlbfs at $huge_dir failed (see above)"
    fi
}

bind_nics() {
    local a drv
    [ -n "$nics" ] || return 0
    if [ ! -d "$SYS/bus/pci/drivers/$DRIVER" ]; then
        run "$MODPROBE" "$DRIVER" || return 0
        [ "$dry_run" = 1 ] || [ -d "$SYS/bus/pci/drivers/$DRIVER" ] || { problem "$MODPROBE $DRIVER did not load the driver"; return; }
    fi
    for a in $nics; do
        drv=$(driver_of "$a")
        if [ "$drv" = "$DRIVER" ]; then say "$a already bound to $DRIVER"; continue; fi
        record "bind $a" "$drv"
        run "$DEVBIND" --bind="$DRIVER" "$a" || continue
        [ "$dry_run" = 1 ] || [ "$(driver_of "$a")" = "$DRIVER" ] || problem "$a is still on $(driver_of "$a") after binding"
    done
}

do_setup() {
    [ -n "$nics_arg" ] || die_usage "--nic is required (a PCI address like 0000:3b:00.0 or an interface name)"
    [ -n "$lcores_arg" ] || die_usage "--lcores is required (the EAL -l list flowcop will run on, e.g. 2-5)"
    lcores=$(expand_list "$lcores_arg") || die_usage "--lcores '$lcores_arg' is not a CPU list like 2-5 or 2,4,6"
    size_kb "$huge_size" >/dev/null || die_usage "--hugepages '$huge_size' is not a size like 512M or 2G"
    if [ "$dry_run" = 0 ] && [ "$(id -u)" -ne 0 ]; then
        echo "$PROG: must run as root (it writes $SYS and binds drivers); --dry-run shows what it would do" >&2; exit 1
    fi
    if [ -n "$page_arg" ]; then page_kb=$(size_kb "$page_arg") || die_usage "--pagesize '$page_arg' is not a size like 2M or 1G"
    else page_kb=$(awk '/^Hugepagesize:/ { print $2 }' "$PROC/meminfo" 2>/dev/null || true); fi
    [ -n "$page_kb" ] || die_usage "cannot read the default hugepage size from $PROC/meminfo: pass --pagesize"
    local online c a ifc resolved=()
    online=" $(online_cpus) "
    for c in $lcores; do
        [[ $online == *" $c "* ]] || problem "lcore $c is not an online CPU of this host (online: $(cat "$SYS/devices/system/cpu/online"))"
    done
    IFS=, read -ra asked <<<"$nics_arg"
    for a in "${asked[@]}"; do
        resolve_nic "$a"; a=$resolved_addr; [ -n "$a" ] || continue
        if ! is_network "$a"; then problem "$a is not a network device (PCI class $(cat "$(pci_dir "$a")/class"))"; continue; fi
        ifc=$(iface_of "$a")
        if is_active "$ifc"; then
            problem "refusing $a: its interface $ifc carries this host's routes (binding it to $DRIVER would cut" \
                "the host off that network). Fix: choose a NIC that is not in use, or move the routes off $ifc"
            continue
        fi
        resolved+=("$a")
    done
    nics=$(printf '%s\n' "${resolved[@]}" | sort -u | tr '\n' ' ')
    nics=${nics% }
    [ -n "$nics" ] || problem "no NIC left to bind: this host has no NIC flowcop can take (see above)"
    check_iommu
    for a in $nics; do check_group "$a"; check_numa "$a"; done
    # A real run changes nothing while a check fails; a dry run goes on to show the whole plan.
    if [ "$problems" -gt 0 ] && [ "$dry_run" = 0 ]; then
        echo "$PROG: $problems problem(s) above; nothing was changed" >&2; exit 1
    fi
    setup_hugepages
    if [ "$problems" -eq 0 ] || [ "$dry_run" = 1 ]; then bind_nics; fi
    if [ "$problems" -gt 0 ]; then
        if [ "$dry_run" = 1 ]; then echo "$PROG: dry run: $problems problem(s) above must be fixed first; nothing was changed" >&2
        else echo "$PROG: $problems problem(s) above" >&2; fi
        exit 1
    fi
    local allow=""
    for a in $nics; do allow+="-a $a "; done
    say "$([ "$dry_run" = 1 ] && echo "dry run done, nothing changed" || echo "host ready; state in $state_file")"
    say "EAL options for /etc/flowcop/flowcop.env: FLOWCOP_EAL_OPTS=\"-l $(compress_list $lcores) ${allow}--huge-dir $huge_dir --iova-mode=va --file-prefix=flowcop\""
}

do_undo() {
    if [ ! -s "$state_file" ]; then say "nothing to undo ($state_file does not exist)"; exit 0; fi
    if [ "$dry_run" = 0 ] && [ "$(id -u)" -ne 0 ]; then echo "$PROG: --undo must run as root" >&2; exit 1; fi
    local kind a b c cur
    while read -r kind a b c; do
        case $kind in
        bind)
            cur=$(driver_of "$a")
            if [ "$cur" != "$DRIVER" ]; then say "$a is on $cur, not $DRIVER: left as is"; continue; fi
            if [ "$b" = none ]; then run "$DEVBIND" -u "$a" || true; else run "$DEVBIND" -b "$b" "$a" || true; fi ;;
        esac
    done <"$state_file"
    while read -r kind a b c; do
        [ "$kind" = mount ] || continue
        if mounted_at "$a" >/dev/null; then run "$HUGEPAGES" -u -d "$a" || true; else say "$a is not mounted"; fi
    done <"$state_file"
    while read -r kind a b c; do
        [ "$kind" = hugepages ] || continue
        cur=$(cat "$(huge_path "$a" "$b")" 2>/dev/null || echo 0)
        [ "$cur" = "$c" ] && { say "hugepages: node $a already at its original $c pages"; continue; }
        if [ "$a" = - ]; then run "$HUGEPAGES" -p "${b}K" --reserve "$((c * b))K" || true
        else run "$HUGEPAGES" -p "${b}K" --reserve "$((c * b))K" --node "$a" || true; fi
    done <"$state_file"
    if [ "$dry_run" = 1 ]; then say "dry run done, nothing changed"; return; fi
    if [ "$problems" -gt 0 ]; then
        echo "$PROG: $problems problem(s) above; $state_file kept so --undo can be run again" >&2; exit 1
    fi
    rm -f "$state_file"
    say "undone; $state_file removed"
}

case $mode in
list) do_list ;;
undo) do_undo ;;
setup) do_setup ;;
esac
