#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's commands. Each installs dependencies (deploy/install-deps.sh),
# configures and builds into build/ (binary: build/app/flowcop), then:
#   run    runs flowcop on the embedded sample capture (no NIC, no hugepages):
#          DPDK's pcap vdev replays it in packet-clock mode, flowcop prints the
#          live status line, the summary, and where metrics were served; flow
#          events go to build/quickstart-events.jsonl. Extra arguments are
#          passed to flowcop (e.g. --quiet, --events -).
#   test   runs the whole default test suite (meson test), warnings as errors.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

usage() { echo "usage: $0 run [flowcop options] | test [meson test options]" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1; shift

"$here/deploy/install-deps.sh"

setup() {
    local dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@"
    else
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
}

case "$cmd" in
run)
    setup build -Dwerror=true
    sample="$here/tests/data/captures/suricata_ftp_data_ipv4_ipv6_80conns.pcap"
    # EAL: no hugepages, no PCI scan, one lcore, the capture as a port.
    exec "$here/build/app/flowcop" --no-huge -m 512 --no-pci -l 0 --file-prefix=flowcop-quickstart \
        --log-level=lib.eal:error --log-level=lib.telemetry:error --vdev="net_pcap0,rx_pcap=$sample" -- \
        --clock packet --stop-when-idle-ms 2000 --flows-per-lcore 65536 \
        --metrics-addr 127.0.0.1:9781 --events "$here/build/quickstart-events.jsonl" "$@"
    ;;
test)
    setup build -Dwerror=true
    meson test -C build --print-errorlogs "$@"
    ;;
*) usage ;;
esac
