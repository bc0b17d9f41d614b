#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what flowcop needs to build, test and run on Debian 12, as root.
# Idempotent: when every package is already installed it touches nothing;
# otherwise it runs one `apt-get update` and one `apt-get install`.
set -euo pipefail

# Build: compiler, meson/ninja, DPDK 22.11, Catch2 2.13, prometheus-cpp 1.0, libsystemd (sd_notify).
build_pkgs=(g++ meson ninja-build pkg-config dpdk-dev libdpdk-dev libpcap-dev catch2 prometheus-cpp-dev
    libsystemd-dev)
# Run and test: dpdk (testpmd, dpdk-telemetry.py, dpdk-hugepages.py, dpdk-devbind.py),
# real peers for end-to-end tests (iproute2, ethtool, curl, python3), Prometheus (server + promtool),
# python3-yaml (tests/deploy reads the Prometheus and Grafana YAML), Linux's conntrack as the oracle
# of the window-tracking test (tcpreplay, nftables, conntrack: tests/tcpstate/test_netfilter_diff.py),
# nfdump and pmacct (nfcapd and nfacctd, the IPFIX collectors tests/integration/test_ipfix_collectors.py
# starts on loopback), logrotate (the shipped deploy/logrotate/flowcop, tests/app/process/test_signals.py).
run_pkgs=(dpdk python3 iproute2 ethtool curl procps prometheus python3-yaml tcpreplay nftables conntrack nfdump pmacct
    logrotate)

pkgs=("${build_pkgs[@]}" "${run_pkgs[@]}")
if [ "${1:-}" = "--list" ]; then printf '%s\n' "${pkgs[@]}"; exit 0; fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: must run as root (it calls apt-get)" >&2
    exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps.sh: all ${#pkgs[@]} packages already installed"
    exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
