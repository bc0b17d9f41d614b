# SPDX-License-Identifier: BSD-3-Clause
"""A real Prometheus server (Debian's prometheus package) scrapes flowcop every second.

usage: test_metrics_prometheus.py build/app/flowcop

Prometheus listens on a free loopback port with a temporary configuration and
storage directory, and is killed in every exit path. The test queries its HTTP
API for the cop counters and checks them against a direct scrape, and checks
that the server found nothing to reject in flowcop's exposition.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest import pcapgen  # noqa: E402
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import Scrape  # noqa: E402
from flowcoptest.process import Flowcop, free_port  # noqa: E402

EXE = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="flowcop-prom-")
atexit.register(shutil.rmtree, TMP, True)
PCAP = os.path.join(TMP, "synthetic.pcap")
N_PACKETS = pcapgen.write(PCAP)
COP = ["flowcop_inactivity_cop_visited_total", "flowcop_inactivity_cop_fired_total",
       "flowcop_inactivity_cop_budget_exhausted_total", "flowcop_inactivity_cop_lock_acquire_failure_total",
       "flowcop_inactivity_cop_passes_total"]


class Prometheus:
    def __init__(self, target):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cfg = os.path.join(TMP, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: flowcop\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        self.log_path = os.path.join(TMP, "prometheus.log")
        self.log = open(self.log_path, "w")
        exe = shutil.which("prometheus")
        check(exe, "prometheus not found: run deploy/install-deps.sh")
        self.proc = subprocess.Popen(
            [exe, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(TMP, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        atexit.register(self.stop)
        wait_until(lambda: self._get("/-/ready") is not None, 60, "Prometheus to be ready")

    def _get(self, path):
        check(self.proc.poll() is None, f"prometheus exited with {self.proc.returncode}:\n{self.logs()}")
        with urllib.request.urlopen(self.base + path, timeout=5) as r:
            return r.read() if r.status == 200 else None

    def query(self, promql):
        """Instant query -> list of (labels, float value)."""
        doc = json.loads(self._get("/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
        check(doc["status"] == "success", f"query {promql!r}: {doc}")
        return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]

    def targets(self):
        return json.loads(self._get("/api/v1/targets"))["data"]["activeTargets"]

    def logs(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


def test_prometheus_scrapes_the_cop_counters():
    args = ["--clock", "tsc", "--track", "tcp", "--stop-when-idle-ms", "120000", "--flows-per-lcore", "65536",
            "--metrics-addr", "127.0.0.1:0"]
    with Flowcop(EXE, PCAP, args, "prom") as fc:
        target = fc.url[len("http://"):-len("/metrics")]
        prom = Prometheus(target)
        try:
            wait_until(lambda: prom.query('up{job="flowcop"} == 1'), 30, "Prometheus to scrape flowcop")
            (t,) = prom.targets()
            check(t["health"] == "up" and t["lastError"] == "", f"target {t}")

            for name in COP:
                series = wait_until(lambda: prom.query(name), 15, f"{name} in Prometheus")
                check(len(series) == 1, f"{name}: {series}")
                labels, value = series[0]
                check(labels.get("lcore") == "0" and labels.get("job") == "flowcop", f"{name} labels {labels}")
                direct = Scrape(fc.url).value(name, lcore="0")
                check(0 <= value <= direct, f"{name}: Prometheus has {value}, flowcop now {direct}")
            # The replay is over and its resets were reaped: these no longer move.
            check(prom.query("flowcop_inactivity_cop_fired_total")[0][1] == pcapgen.RESET, "fired")
            check(prom.query("flowcop_flows_created_total")[0][1] == pcapgen.EXPECTED["created_tcp"], "created")
            check(prom.query("sum(flowcop_port_rx_packets_total)")[0][1] == N_PACKETS, "rx packets")

            # Several scrapes over time: the cop runs once a second under --clock tsc.
            rate = wait_until(lambda: [v for _, v in prom.query("increase(flowcop_inactivity_cop_passes_total[5s])")
                                       if v > 0], 30, "cop passes to increase between scrapes")
            check(rate[0] <= 10, f"more than 2 passes a second while idle: {rate}")

            # Relations that hold within one scrape, evaluated by Prometheus itself.
            (d,) = prom.query("flowcop_inactivity_cop_pass_duration_seconds_count - flowcop_inactivity_cop_passes_total")
            check(d[1] == 0, f"pass-duration count - passes = {d[1]}")
            (inv,) = prom.query("sum(flowcop_flows_created_total) - sum(flowcop_flows_expired_total)"
                                " - sum(flowcop_flows_active)")
            check(inv[1] == 0, f"created - expired - active = {inv[1]}")
            q = prom.query('histogram_quantile(0.99, rate(flowcop_inactivity_cop_pass_duration_seconds_bucket[10s]))')
            check(len(q) == 1, f"pass-duration quantile {q}")
            (info,) = prom.query("flowcop_config_info")
            check(info[0].get("clock") == "tsc" and info[1] == 1, f"config info {info}")
            samples = prom.query('scrape_samples_scraped{job="flowcop"}')
            # Prometheus stored every sample line flowcop serves (none rejected or dropped).
            want = len(Scrape(fc.url).samples)
            check(samples and samples[0][1] == want, f"samples per scrape: {samples}, served {want}")
        except Exception:
            print("---- prometheus log ----\n" + prom.logs(), file=sys.stderr)
            raise
        finally:
            prom.stop()
        check(fc.stop() == 0, "flowcop exit code")


if __name__ == "__main__":
    run_tests([test_prometheus_scrapes_the_cop_counters])
