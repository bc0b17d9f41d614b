# SPDX-License-Identifier: BSD-3-Clause
"""Plots the expiry-cost benchmark: cop pass time and visits against open flows (issue 6 part 2).

Runs `BUILD/tests/bench/bench_expiry [table-expire]` (or reads a saved copy of its output with
--log), takes its table (1000 flows due per pass among 10^4 .. 10^7 open, the real FlowTable, and
the full-sweep baseline over as many flows) and draws two panels: pass time (median wall and CPU,
and the sweep) on log-log axes, and visits per pass against flows due. The PNG goes to
tests/plots/expiry_pass_cost.png unless --out says otherwise.
    /usr/bin/python3 deploy/bench/plot_expiry.py --build build-bench
Needs matplotlib (Debian: apt-get install python3-matplotlib; run with /usr/bin/python3).
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(\d+)\.\.(\d+)\s+(\d+)\.\.(\d+)\s+"
                 r"([\d.]+)x\s+([\d.]+)x\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$")


def parse(text):
    """The benchmark's rows and its provenance line."""
    rows, prov = [], ""
    for line in text.splitlines():
        if line.startswith("commit "):
            prov = line.strip()
        m = ROW.match(line)
        if m:
            g = m.groups()
            rows.append({"open": int(g[0]), "wall_ns": float(g[1]), "cpu_ns": float(g[3]),
                         "visits_min": int(g[5]), "visits_max": int(g[6]), "fired_min": int(g[7]),
                         "sweep_ns": float(g[13])})
    return rows, prov


def plot(rows, prov, out, due=1000):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = [r["open"] for r in rows]
    fig, (top, bot) = plt.subplots(2, 1, figsize=(8, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    top.plot(x, [r["wall_ns"] / 1e3 for r in rows], marker="o", color="C3", label="flowcop cop pass (wall, median)")
    top.plot(x, [r["cpu_ns"] / 1e3 for r in rows], marker=".", color="C1", linestyle="--",
             label="flowcop cop pass (thread CPU, median)")
    top.plot(x, [r["sweep_ns"] / 1e3 for r in rows], marker="s", color="C0", label="full sweep of every flow")
    top.set_xscale("log")
    top.set_yscale("log")
    top.set_ylabel("one pass, microseconds")
    top.grid(True, which="both", alpha=0.3)
    top.legend(loc="upper left")
    top.set_title("Expiry pass with %d flows due, scattered, cold caches (FlowTable, 4096 x 1 s wheel)" % due,
                  fontsize=10)
    bot.plot(x, [r["visits_max"] for r in rows], marker="o", color="C3", label="visits per pass (max)")
    bot.plot(x, [r["visits_min"] for r in rows], marker="v", color="C1", linestyle="--", label="visits per pass (min)")
    bot.axhline(due, color="k", linestyle=":", label="flows due per pass")
    bot.plot(x, x, color="C0", marker="s", label="flows a sweep reads")
    bot.set_yscale("log")
    bot.set_ylabel("records examined")
    bot.set_xlabel("open flows (one flow table, one lcore)")
    bot.grid(True, which="both", alpha=0.3)
    bot.legend(loc="upper left", fontsize=8)
    fig.text(0.01, 0.005, prov, fontsize=6)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-rel"), help="meson build dir (release)")
    ap.add_argument("--log", help="parse this saved benchmark output instead of running it")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "plots", "expiry_pass_cost.png"))
    a = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("matplotlib is missing: apt-get install python3-matplotlib, then run with /usr/bin/python3")
    if a.log:
        with open(a.log) as f:
            text = f.read()
    else:
        exe = os.path.join(os.path.abspath(a.build), "tests", "bench", "bench_expiry")
        text = subprocess.run([exe, "[table-expire]"], check=True, capture_output=True, text=True).stdout
        print(text)
    rows, prov = parse(text)
    if len(rows) < 2:
        sys.exit("no table-expire rows found in the benchmark output")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    print("plot: " + plot(rows, prov, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
