#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs flowcop on the embedded sample capture: what `deploy/quickstart.sh run` does once it has
# built the binary, usable on its own with any built binary.
#
#   run-sample.sh FLOWCOP_BINARY [flowcop options]
#
# DPDK's pcap vdev replays tests/data/captures/suricata_ftp_data_ipv4_ipv6_80conns.pcap (no NIC,
# no hugepages, one lcore) in packet-clock mode; flowcop stops 2 s after the last packet. Its
# options default to --clock packet --stop-when-idle-ms 2000 --flows-per-lcore 65536
# --metrics-addr 127.0.0.1:9781 --events build/quickstart-events.jsonl; an option given here
# replaces its default (e.g. --events - for stdout, --metrics-addr 127.0.0.1:9800). When another
# process holds 127.0.0.1:9781 and no --metrics-addr is given, flowcop takes any free port
# (127.0.0.1:0) and prints it ("flowcop: metrics at ..."; not under --quiet), instead of
# failing. Exit status: flowcop's; 2 for bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 FLOWCOP_BINARY [flowcop options]   (the binary: build/app/flowcop)" >&2
    exit 2
fi
exe=$1; shift

given() { # given OPTION ARGS...: whether ARGS set OPTION (--opt VALUE or --opt=VALUE)
    local opt=$1 a; shift
    for a in "$@"; do
        case "$a" in "$opt" | "$opt"=*) return 0 ;; esac
    done
    return 1
}

# Whether a TCP listener could bind 127.0.0.1:PORT now (what flowcop's exporter will do).
port_free() {
    python3 -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}

# The defaults go first: a later occurrence of a flowcop option replaces an earlier one.
defaults=(--clock packet --stop-when-idle-ms 2000 --flows-per-lcore 65536)
if ! given --events "$@"; then
    mkdir -p "$here/build"
    defaults+=(--events "$here/build/quickstart-events.jsonl")
fi
if ! given --metrics-addr "$@"; then
    if port_free 9781; then
        defaults+=(--metrics-addr 127.0.0.1:9781)
    else
        shown="which flowcop prints"
        given --quiet "$@" && shown="which flowcop does not print under --quiet: ss -ltnp | grep flowcop shows it"
        echo "run-sample.sh: 127.0.0.1:9781 is in use by another process; metrics go to a free port, $shown (give --metrics-addr HOST:PORT to choose one)" >&2
        defaults+=(--metrics-addr 127.0.0.1:0)
    fi
fi

sample="$here/tests/data/captures/suricata_ftp_data_ipv4_ipv6_80conns.pcap"
# EAL: no hugepages, no PCI scan, one lcore, the capture as a port.
exec "$exe" --no-huge -m 512 --no-pci -l 0 --file-prefix=flowcop-quickstart \
    --log-level=lib.eal:error --log-level=lib.telemetry:error --vdev="net_pcap0,rx_pcap=$sample" -- \
    "${defaults[@]+"${defaults[@]}"}" "$@"
