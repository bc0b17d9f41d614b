# SPDX-License-Identifier: BSD-3-Clause
"""/metrics after a deterministic replay is the saved scrape, family for family.

usage: test_metrics_golden.py build/app/flowcop [--update]

flowcop replays tests/golden/metrics_synthetic/input.pcap (the synthetic capture of
flowcoptest/pcapgen.py, committed so the input never drifts) with --clock packet and --events, waits
until every packet is counted and the counters stop moving, and scrapes /metrics once. The scrape,
normalised, must equal tests/golden/metrics_synthetic/scrape.prom apart from the order of families:
every name, HELP and TYPE line, label set and value, in each family's own sample order.

Normalised, because it varies from run to run without flowcop's counting changing:
  - prometheus-cpp's own exposer_* families (bytes served, scrape count, latencies);
  - the wall-time cop pass histogram's buckets and sum (its _count, the number of passes, is kept);
  - flowcop_flow_table_memory_bytes (what rte_malloc's heap statistics report for this EAL layout);
  - the --events path in flowcop_config_info (a temporary directory);
  - the process_* values (this process's CPU time, memory, descriptors, start time) and
    flowcop_build_info's labels (the commit changes with every commit; tests/app/process checks them).
--update rewrites scrape.prom from this binary (after a deliberate change: review the diff).
"""
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import fetch, parse  # noqa: E402
from flowcoptest.process import Flowcop, REPO  # noqa: E402

EXE = sys.argv[1]
UPDATE = "--update" in sys.argv[2:]
CASE = os.path.join(REPO, "tests", "golden", "metrics_synthetic")
PCAP = os.path.join(CASE, "input.pcap")
GOLDEN = os.path.join(CASE, "scrape.prom")

_WALL_TIME = "flowcop_inactivity_cop_pass_duration_seconds"


def normalise(text):
    """The scrape as {family: [lines]}: HELP, TYPE, then samples in served order, with what varies
    between runs replaced (see the module docstring)."""
    families, current = {}, None
    for line in text.splitlines():
        m = re.match(r"# (?:HELP|TYPE) (\S+)", line)
        name = m.group(1) if m else re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        if m:
            current = name
        if current is None or current.startswith("exposer_"):
            continue
        if m:
            pass  # HELP and TYPE lines are compared as served
        elif name.startswith(_WALL_TIME + "_bucket") or name == _WALL_TIME + "_sum":
            line = re.sub(r" \S+$", " <wall time>", line)
        elif name == "flowcop_flow_table_memory_bytes":
            line = re.sub(r" \S+$", " <bytes>", line)
        elif name.startswith("process_"):
            line = re.sub(r" \S+$", " <this process>", line)
        elif name == "flowcop_build_info":
            line = re.sub(r'commit="[^"]*"', 'commit="<commit>"', line)
            line = re.sub(r'version="[^"]*"', 'version="<version>"', line)
            line = re.sub(r'dpdk="[^"]*"', 'dpdk="<dpdk>"', line)
        elif name == "flowcop_config_info":
            line = re.sub(r'events="[^"]*"', 'events="<tmp>/events.jsonl"', line)
        families.setdefault(current, []).append(line)
    return families


def render(families):
    return "".join("\n".join(lines) + "\n" for _, lines in sorted(families.items()))


def settled_scrape(fc, packets):
    """The scrape once every packet is counted and two scrapes 0.3 s apart agree."""
    last = [None]

    def stable():
        text = fetch(fc.url)
        samples = parse(text)[2]
        rx = sum(v for n, _, v in samples if n == "flowcop_port_rx_packets_total")
        key = render(normalise(text))
        done = rx == packets and key == last[0]
        last[0] = key
        return text if done else None

    return wait_until(stable, 30, f"{packets} packets counted and the counters settled", interval=0.3)


def test_the_scrape_of_a_deterministic_replay_is_the_saved_one():
    from flowcoptest import pcaplib
    packets = len(pcaplib.read_pcap(PCAP)[1])
    tmp = tempfile.mkdtemp(prefix="flowcop-golden-")
    try:
        args = ["--clock", "packet", "--flows-per-lcore", "65536", "--metrics-addr", "127.0.0.1:0",
                "--events", os.path.join(tmp, "events.jsonl")]
        with Flowcop(EXE, PCAP, args, "golden") as fc:
            got = render(normalise(settled_scrape(fc, packets)))
            check(fc.stop() == 0, "flowcop did not exit 0")
    finally:
        shutil.rmtree(tmp, True)
    if UPDATE:
        with open(GOLDEN, "w") as f:
            f.write(got)
        print(f"# wrote {GOLDEN}")
        return
    with open(GOLDEN) as f:
        want = f.read()
    if got != want:
        import difflib
        diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "scrape.prom", "this run",
                                              lineterm="", n=1))
        check(False, "the scrape differs from tests/golden/metrics_synthetic/scrape.prom "
                     "(rerun with --update after a deliberate change):\n" + diff)


if __name__ == "__main__":
    run_tests([test_the_scrape_of_a_deterministic_replay_is_the_saved_one])
