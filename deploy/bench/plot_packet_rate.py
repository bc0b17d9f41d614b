# SPDX-License-Identifier: BSD-3-Clause
"""Plots packet_rate.py's results: Mpps against concurrent flows, flowcop vs testpmd rxonly and io, OVS, and
flowcop's build before (the baseline, when the sweep ran one).

Top: median Mpps per polling lcore, with the min-max of the repeats as error bars. Middle: flowcop's
rate as a share of testpmd rxonly (wall-clock Mpps, and per CPU-second of the polling thread, which
removes most of the shared machine's noise), with issue 19's targets. Bottom (when the results have OVS
runs): flowcop's rate per core over Open vSwitch's userspace conntrack's. Run alone to re-plot a results file:
    /usr/bin/python3 deploy/bench/plot_packet_rate.py RESULTS.json OUT.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"flowcop": ("flowcop monitor", "o", "C3"), "baseline": ("flowcop before (rte_hash)", "v", "C7"),
         "rxonly": ("testpmd rxonly", "s", "C0"),
         "io": ("testpmd io", "^", "C2"), "ovs": ("OVS-DPDK conntrack, ct(commit)", "D", "C4")}


def has_runs(rows, tool):
    return any(r.get(tool, {}).get("n") for r in rows)


def plot(res, out):
    rows = res["rows"]
    p = res["provenance"]
    x = [r["flows"] for r in rows]
    ovs = has_runs(rows, "ovs")
    ratios = [3, 2, 1.5] if ovs else [3, 2]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(8, 7.5 + 2 * ovs), sharex=True,
                             gridspec_kw={"height_ratios": ratios})
    top, bot = axes[0], axes[1]
    for tool, (label, marker, color) in STYLE.items():
        if not has_runs(rows, tool):
            continue
        med = [r[tool]["mpps"] for r in rows]
        err = [[m - r[tool]["min"] for m, r in zip(med, rows)], [r[tool]["max"] - m for m, r in zip(med, rows)]]
        top.errorbar(x, med, yerr=err, marker=marker, color=color, label=label, capsize=3)
        if tool == "ovs":  # a few Mpps against tens: the values, where the curve hugs the axis
            for xi, m in zip(x, med):
                top.annotate("%.2f" % m, (xi, m), textcoords="offset points", xytext=(4, 5), fontsize=7, color=color)
    top.set_xscale("log")
    top.set_ylabel("Mpps per polling lcore (median)")
    top.set_ylim(bottom=0)
    top.grid(True, which="both", alpha=0.3)
    top.legend(loc="upper right" if ovs else "lower left")  # OVS's curve runs along the bottom
    pages = "hugepages" if res.get("settings", {}).get("huge_dir") else "4 KiB pages"
    top.set_title("Established-flow packet rate, pcap infinite_rx, 60-byte frames, burst 32, EAL memory in "
                  + pages, fontsize=10)
    bot.plot(x, [100 * r["ratio_rxonly"] for r in rows], marker="o", color="C3", label="flowcop / rxonly (Mpps)")
    bot.plot(x, [100 * r["ratio_cpu_rxonly"] for r in rows], marker="o", color="C1", linestyle="--",
             label="flowcop / rxonly (per CPU-second)")
    bot.plot(x, [100 * r["ratio_io"] for r in rows], marker="^", color="C2", label="flowcop / io (Mpps)")
    bot.axhline(50, color="k", linestyle=":", label="targets: 50% of rxonly at 10^6, 55% at 10^4 (issue 19)")
    bot.axhline(55, color="k", linestyle=":")
    bot.set_ylim(0, 110)
    bot.set_ylabel("% of testpmd")
    bot.grid(True, which="both", alpha=0.3)
    bot.legend(loc="lower left", fontsize=8)
    if ovs:
        peer = axes[2]
        peer.plot(x, [r["ratio_ovs"] for r in rows], marker="D", color="C4", label="flowcop / OVS (Mpps)")
        peer.plot(x, [r["ratio_cpu_ovs"] for r in rows], marker="D", color="C5", linestyle="--",
                  label="flowcop / OVS (per CPU-second)")
        peer.axhline(1, color="k", linestyle=":")
        peer.set_ylim(bottom=0)
        peer.set_ylabel("flowcop / OVS per core")
        peer.grid(True, which="both", alpha=0.3)
        peer.legend(loc="lower left", fontsize=8)
    axes[-1].set_xlabel("concurrent flows (one flow table, one lcore)")
    first = p
    while first.get("resumed_from"):  # an interrupted sweep finished by --resume: say where it began
        first = first["resumed_from"]
    when = p["date_utc"] if first is p else "%s .. %s" % (first["date_utc"], p["date_utc"])
    load = "load %s -> %s" % (" ".join("%.1f" % v for v in first["load_at_start"]),
                              " ".join("%.1f" % v for v in p["load_at_end"]))
    fig.text(0.01, 0.005, "commit %s, %s build, %s, %s, %s CPUs, %s" % (
        first["commit"][:12], p["buildtype"], when, p["lscpu_model"].replace("Model name: ", ""),
        p["cpus"], load), fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_packet_rate.py RESULTS.json OUT.png")
    with open(sys.argv[1]) as f:
        print(plot(json.load(f), sys.argv[2]))
