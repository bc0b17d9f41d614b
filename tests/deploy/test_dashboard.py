# SPDX-License-Identifier: BSD-3-Clause
"""The Grafana dashboard and the Prometheus rules against the running binary and a real Prometheus.

usage: test_dashboard.py build/app/flowcop REPO_ROOT

Grafana itself is not packaged in Debian 12, so the dashboard is checked by what it depends on:
- its JSON: unique ids and titles, a layout without overlaps, every query on the "Data source"
  variable, every variable it uses defined; the provisioning files parse and agree with the
  Prometheus configs; every panel or row an alert or a doc names exists;
- every alert's runbook_url is a heading of a doc in this tree;
- a panel with a red line that names an alert draws exactly that alert's threshold;
- every metric the dashboard and the rules query is served by the real binary (replaying a
  capture through two pcap ports), with every label the queries select or group by, so a rename
  cannot silently blank a panel or mute an alert;
- Debian's Prometheus, scraping that binary with deploy/prometheus/rules loaded, evaluates every
  rule without error and answers every panel query and variable query with data.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# meson's timeout sends SIGTERM: exit through the finally blocks that stop flowcop and Prometheus.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
from tap import Skip, check, run  # noqa: E402

from flowcoptest.exposition import fetch  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GRAFANA = os.path.join(REPO, "deploy", "grafana")
PROM = os.path.join(REPO, "deploy", "prometheus")
RULE_FILES = [os.path.join(PROM, "rules", f) for f in ("flowcop-recording.yml", "flowcop-alerts.yml")]
DOCS = [os.path.join(REPO, "deploy", f) for f in ("tuning.md", "deployment.md")]
PCAP = os.path.join(REPO, "tests", "data", "captures", "suricata_ftp_data_ipv4_ipv6_80conns.pcap")
VARIABLES = {"datasource", "cluster", "instance", "lcore"}
# Labels Prometheus adds to every series of the job (prometheus-fleet.yml's target files add the
# last two); the rest must come from flowcop.
TARGET_LABELS = {"job", "instance", "cluster", "site"}
# Series Prometheus makes itself.
PROMETHEUS_SERIES = {"up", "ALERTS"}

DASH = json.load(open(os.path.join(GRAFANA, "flowcop.json")))
PANELS = DASH["panels"]
RULES = [r for f in RULE_FILES for g in yaml.safe_load(open(f))["groups"] for r in g["rules"]]
RECORDED = {r["record"] for r in RULES if "record" in r}


def targets():
    """(panel title, expr) for every query of every panel."""
    return [(p["title"], t["expr"]) for p in PANELS if p["type"] != "row" for t in p["targets"]]


def variable_queries():
    return [(v["name"], v["query"]["query"]) for v in DASH["templating"]["list"] if v["type"] == "query"]


def all_exprs():
    return ([e for _, e in targets()] + [q for _, q in variable_queries()] + [r["expr"] for r in RULES])


# ------------------------------------------------------------------ static checks

def test_dashboard_layout_ids_and_variables():
    """dashboard JSON: unique ids and titles, no overlapping panels, every query on $datasource, every variable defined"""
    check(DASH["uid"] == "flowcop" and DASH["schemaVersion"] >= 36, "uid flowcop, schemaVersion >= 36")
    ids = [p["id"] for p in PANELS]
    check(len(ids) == len(set(ids)), f"duplicate panel ids: {ids}")
    titles = [p["title"] for p in PANELS]
    check(len(titles) == len(set(titles)), f"duplicate titles: {sorted(t for t in titles if titles.count(t) > 1)}")
    cells = {}
    for p in PANELS:
        g = p["gridPos"]
        check(0 <= g["x"] and g["w"] >= 1 and g["x"] + g["w"] <= 24 and g["h"] >= 1, f"{p['title']}: gridPos {g}")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                check((x, y) not in cells, f"{p['title']} overlaps {cells.get((x, y))}")
                cells[(x, y)] = p["title"]
        if p["type"] == "row":
            check(g["w"] == 24 and g["h"] == 1 and not p.get("panels"), f"row {p['title']}: full width, not collapsed")
            continue
        check(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, f"{p['title']}: datasource")
        refs = [t["refId"] for t in p["targets"]]
        check(refs and len(refs) == len(set(refs)), f"{p['title']}: refIds {refs}")
        for t in p["targets"]:
            check(t["datasource"]["uid"] == "${datasource}" and t["expr"].strip(), f"{p['title']}: target {t}")
        check(p.get("description"), f"{p['title']}: no description (it is the panel's help)")
    names = [v["name"] for v in DASH["templating"]["list"]]
    check(set(names) == VARIABLES, f"variables {names}")
    for where, text in targets() + variable_queries():
        used = set(re.findall(r"\$\{?(\w+)", text)) - {"__rate_interval"}
        check(used <= VARIABLES, f"{where}: undefined variables {used - VARIABLES} in {text}")
    # Rows in order, each followed by the panels below it.
    rows = [p for p in PANELS if p["type"] == "row"]
    check([r["gridPos"]["y"] for r in rows] == sorted(r["gridPos"]["y"] for r in rows), "rows in order")


def quantity(expr):
    """What a panel query draws: a rate or a level, of bytes, seconds or counts."""
    bare = re.sub(r'\{[^}]*\}', "", expr)
    kind = "rate" if re.search(r"\b(?:rate|irate|increase|deriv)\(", bare) else "level"
    names = re.findall(r"\b(?:flowcop|process)[:_][a-z0-9_:]+", bare)
    what = ("bytes" if any("bytes" in n for n in names) else
            "seconds" if any(n.endswith("_seconds") or "seconds:" in n for n in names) else "count")
    return kind, what


def test_one_unit_per_panel():
    """every panel draws one unit: one unit set for the panel, none overridden per series, and every query of it
    the same quantity (a rate or a level; bytes, seconds or counts)"""
    for p in PANELS:
        if p["type"] in ("row", "table"):
            continue
        fc = p.get("fieldConfig", {})
        check(fc.get("defaults", {}).get("unit"), f"{p['title']}: no unit")
        overridden = [o for o in fc.get("overrides", []) if any(pr.get("id") == "unit" for pr in o.get("properties", []))]
        check(not overridden, f"{p['title']}: a unit overridden per series: {overridden}")
        kinds = {quantity(t["expr"]) for t in p["targets"]}
        check(len(kinds) == 1, f"{p['title']}: queries of different quantities on one axis: {sorted(kinds)}")


def test_process_row_and_the_rows_deployment_md_lists():
    """a Process row draws uptime, restarts, CPU and RSS from the process metrics; deployment.md names every row"""
    rows = [p for p in PANELS if p["type"] == "row"]
    (proc,) = [r for r in rows if r["title"] == "Process"] or [None]
    check(proc, "no Process row")
    below = sorted((p for p in PANELS if p["type"] != "row" and
                    proc["gridPos"]["y"] < p["gridPos"]["y"] < min([r["gridPos"]["y"] for r in rows
                                                                     if r["gridPos"]["y"] > proc["gridPos"]["y"]]
                                                                    + [10 ** 6])),
                   key=lambda p: p["gridPos"]["x"])
    reads = {p["title"]: set().union(*(referenced(t["expr"]) for t in p["targets"])) for p in below}
    want = {"Uptime": ("process_start_time_seconds", "s"), "Restarts": ("process_start_time_seconds", "none"),
            "CPU": ("process_cpu_seconds_total", "percentunit"), "Resident memory": ("process_resident_memory_bytes", "bytes")}
    for title, (metric, unit) in want.items():
        p = [q for q in below if q["title"] == title]
        check(p and metric in reads[title] and p[0]["fieldConfig"]["defaults"]["unit"] == unit,
              f"Process row: panel {title!r} reading {metric} in {unit} (row has {reads})")
    restarts = [t["expr"] for p in below if p["title"] == "Restarts" for t in p["targets"]]
    check(restarts and all("changes(process_start_time_seconds" in e for e in restarts),
          f"Restarts counts the changes of the start time: {restarts}")
    alerts = {r["alert"]: r["expr"] for r in RULES if "alert" in r}
    check("absent(up{job=\"flowcop\"})" in " ".join(alerts.values()), "an alert on absent(up{job=\"flowcop\"})")
    check(any("changes(process_start_time_seconds" in e for e in alerts.values()), "an alert on restart flapping")
    text = re.sub(r"\s+", " ", open(os.path.join(REPO, "deploy", "deployment.md")).read())
    m = re.search(r"The rows are ((?:\"[^\"]+\"(?:, | and )?)+)", text)
    check(m, "deployment.md has no 'The rows are ...' sentence")
    listed = re.findall(r'"([^"]+)"', m.group(1))
    check(listed == [r["title"] for r in rows], f"deployment.md lists rows {listed}, the dashboard has "
          f"{[r['title'] for r in rows]}")


def test_provisioning_matches_the_dashboard_and_prometheus():
    """provisioning YAML: a file provider, a Prometheus data source whose timeInterval is the scrape interval"""
    ds = yaml.safe_load(open(os.path.join(GRAFANA, "provisioning", "datasources", "flowcop.yml")))
    (src,) = ds["datasources"]
    check(ds["apiVersion"] == 1 and src["type"] == "prometheus", ds)
    for cfg in ("prometheus.yml", "prometheus-fleet.yml"):
        interval = yaml.safe_load(open(os.path.join(PROM, cfg)))["global"]["scrape_interval"]
        check(src["jsonData"]["timeInterval"] == interval, f"timeInterval {src['jsonData']['timeInterval']} != {cfg}'s {interval}")
    (dsvar,) = [v for v in DASH["templating"]["list"] if v["type"] == "datasource"]
    check(dsvar["current"].get("value") == src["uid"], "the dashboard starts on the provisioned data source")
    dp = yaml.safe_load(open(os.path.join(GRAFANA, "provisioning", "dashboards", "flowcop.yml")))
    (prov,) = dp["providers"]
    check(dp["apiVersion"] == 1 and prov["type"] == "file" and os.path.isabs(prov["options"]["path"]), dp)
    for doc in DOCS:
        if os.path.exists(doc) and doc.endswith("deployment.md"):
            text = open(doc).read()
            check(prov["options"]["path"] in text, f"{doc} does not say where flowcop.json goes ({prov['options']['path']})")


def named_titles(text):
    """Dashboard titles a text points at: row "X", panel "X" or "X" panel/row (line breaks as spaces)."""
    text = re.sub(r"\s+", " ", text)
    return set(re.findall(r'(?:panels?|rows?) "([^"]+)"', text)) | set(re.findall(r'"([^"]+)" (?:panel|row)', text))


def test_every_panel_an_alert_or_doc_names_exists():
    """alerts and docs name only panels and rows the dashboard has"""
    titles = {p["title"] for p in PANELS}
    named = {}
    for r in RULES:
        for t in named_titles(" ".join(r.get("annotations", {}).values())):
            named.setdefault(t, []).append(r["alert"])
    for doc in DOCS:
        if os.path.exists(doc):
            for t in named_titles(open(doc).read()):
                named.setdefault(t, []).append(os.path.basename(doc))
    check(named, "nothing names a panel")
    missing = {t: w for t, w in named.items() if t not in titles}
    check(not missing, f"named but not in the dashboard: {missing}")


def test_a_panel_naming_an_alert_draws_its_threshold():
    """a panel with a red line that names an alert draws exactly that alert's threshold"""
    alerts = {r["alert"]: r["expr"] for r in RULES if "alert" in r}
    drawn = 0
    for p in PANELS:
        if p["type"] == "row":
            continue
        names = set(re.findall(r"\b(Flowcop[A-Z]\w+)", p.get("description", "")))
        check(names <= set(alerts), f"{p['title']}: names alerts that do not exist: {sorted(names - set(alerts))}")
        steps = p.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
        red = [s["value"] for s in steps if s.get("color") == "red"]
        if not red or not names:
            continue
        check(len(names) == 1, f"{p['title']}: a red line and several alerts named: {sorted(names)}")
        (alert,) = names
        m = re.search(r">\s*([0-9.e+-]+)", alerts[alert])
        check(m and red == [float(m.group(1))],
              f"{p['title']}: red line {red}, {alert} fires above {m.group(1) if m else '?'} ({alerts[alert]!r})")
        drawn += 1
    check(drawn, "no panel draws an alert's threshold")


def slug(heading):
    """GitHub's anchor for a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(doc):
    """The heading anchors of a Markdown file (outside code blocks)."""
    out, code = set(), False
    for line in open(doc):
        code ^= line.startswith("```")
        if not code and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def test_every_runbook_and_doc_link_resolves():
    """every alert's runbook_url, and every link of the deployment docs into this tree, is a file and a heading"""
    for r in [r for r in RULES if "alert" in r]:
        rb = r["annotations"].get("runbook_url", "")
        path, _, anchor = rb.partition("#")
        doc = os.path.join(REPO, path)
        check(anchor and os.path.exists(doc), f"{r['alert']}: runbook_url {rb!r} is not a doc#anchor of this tree")
        check(anchor in anchors(doc), f"{r['alert']}: {path} has no heading #{anchor}")
    for doc in DOCS:
        links = re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", open(doc).read())
        check(links, f"{doc}: no links found")
        for target, anchor in links:
            if re.match(r"^[a-z]+:", target):
                continue  # an external URL
            path = os.path.join(os.path.dirname(doc), target) if target else doc
            check(os.path.exists(path), f"{os.path.basename(doc)}: link to missing {target}")
            check(not anchor or anchor in anchors(path), f"{os.path.basename(doc)}: {target or 'itself'} has no #{anchor}")


# ------------------------------------------------------------------ against the binary

class Flowcop:
    """flowcop replaying the demo capture on two pcap ports, plus flowgen's synthetic traffic paced to
    wall time (200 flows a second, a tenth ending in RSTs), so rates and flows coming due are non-zero
    while Prometheus watches; exporter on a free port; IPFIX to a UDP port nobody listens on; a --policy
    (monitor mode: judged and counted, nothing dropped)."""

    def __init__(self, tmp):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            self.ipfix_port = s.getsockname()[1]  # released: nothing listens there
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.prefix = f"fct-dash-{os.getpid()}"
        self.log = os.path.join(tmp, "flowcop.log")
        # A policy, so the Policy row's families are served (monitor mode: a dry run, nothing dropped).
        policy = os.path.join(tmp, "policy.nft")
        with open(policy, "w") as f:
            f.write('ct state established,related accept comment "return"\nct state invalid drop\npolicy accept\n')
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(
                [EXE, "--no-huge", "-m", "512", "--no-pci", "-l", "0", f"--file-prefix={self.prefix}",
                 "--log-level=lib.eal:error", f"--vdev=net_pcap0,rx_pcap={PCAP}", f"--vdev=net_pcap1,rx_pcap={PCAP}",
                 "--", "--clock", "tsc", "--flows-per-lcore", "65536", "--metrics-addr", f"127.0.0.1:{self.port}",
                 "--flowgen", "flows=200,lifetime=1,pps=4000,realtime=1",
                 # A collector nobody listens on: the IPFIX panels have series (sends and errors).
                 "--ipfix", f"127.0.0.1:{self.ipfix_port}", "--policy", policy],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f)
        try:
            self.text = wait(lambda: self.scrape(), 30, "flowcop's /metrics")
        except BaseException:
            self.stop()
            raise

    def scrape(self):
        check(self.proc.poll() is None, f"flowcop exited with {self.proc.returncode}:\n{open(self.log).read()}")
        return fetch(self.url)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", True)


def wait(pred, timeout, what):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            v = pred()
            if v:
                return v
        except OSError as e:  # not listening yet
            last = e
        time.sleep(0.2)
    check(False, f"timed out after {timeout} s waiting for {what}" + (f" ({last})" if last else ""))


def parse(text):
    """exposition -> ({family: type}, {series name: [label dicts]})"""
    types, series = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, t = line.split(" ", 3)
            types[name] = t
        elif line and not line.startswith("#"):
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$", line)
            check(m, f"unparsable: {line!r}")
            series.setdefault(m.group(1), []).append(dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
    return types, series


def referenced(expr):
    """Metric names an expression reads (recorded series and PromQL keywords are not metrics)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values are not names
    bare = re.sub(r"\b(?:by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    return set(re.findall(r"\b(flowcop_[a-z0-9_]+|process_[a-z0-9_]+|up|ALERTS)\b(?!\s*\()", bare))


def selectors(expr):
    """(metric, [label names]) for each name{matchers} in expr."""
    out = []
    for m in re.finditer(r"\b([a-zA-Z_][a-zA-Z0-9_]*)\{([^}]*)\}", expr):
        out.append((m.group(1), re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", m.group(2))))
    return out


def grouping_labels(expr):
    return {l.strip() for g in re.findall(r"\b(?:by|on|without|ignoring)\s*\(([^)]*)\)", expr)
            for l in g.split(",") if l.strip()}


def test_every_queried_metric_and_label_is_served_by_the_binary():
    """every metric the dashboard and the rules read is on the binary's /metrics, with the labels they use"""
    tmp = tempfile.mkdtemp(prefix="flowcop-dash-")
    try:
        fc = Flowcop(tmp)
        fc.stop()
    finally:
        shutil.rmtree(tmp, True)
    types, series = parse(fc.text)
    names = set().union(*(referenced(e) for e in all_exprs()))
    check(len(names) > 25, f"only {len(names)} names found: the extraction is broken? {sorted(names)}")
    missing = []
    for n in sorted(names - PROMETHEUS_SERIES):
        base = re.sub(r"_(bucket|sum|count)$", "", n)
        ok = n in types or (base != n and types.get(base) == "histogram")
        if not ok or not series.get(n):
            missing.append(n)
    check(not missing, f"queried but not served: {missing}")
    # Families the dashboard ignores are a hint that a panel is missing, not an error: list them.
    unused = sorted(f for f in types if f.startswith("flowcop_") and f not in names
                    and not any(n.startswith(f + "_") for n in names))
    check(not unused, f"served but on no panel and in no rule: {unused}")
    labels_of = {n: set().union(*(set(s) for s in ss)) for n, ss in series.items()}
    known = set().union(*labels_of.values()) | TARGET_LABELS | {"alertname", "alertstate"}
    for e in all_exprs():
        for metric, labels in selectors(e):
            if metric in RECORDED or metric in PROMETHEUS_SERIES:
                continue
            extra = set(labels) - labels_of.get(metric, set()) - TARGET_LABELS
            check(not extra, f"{metric} has no label {extra} (in {e})")
        extra = grouping_labels(e) - known
        check(not extra, f"grouping by labels no series has: {extra} (in {e})")


class Prometheus:
    def __init__(self, tmp, target):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        cfg = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
               "rule_files": RULE_FILES,
               "scrape_configs": [{"job_name": "flowcop",
                                   "static_configs": [{"targets": [target], "labels": {"cluster": "test"}}]}]}
        path = os.path.join(tmp, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        self.log = os.path.join(tmp, "prometheus.log")
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(
                ["prometheus", f"--config.file={path}", f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
        try:
            wait(lambda: self.get("/-/ready"), 60, "Prometheus to be ready")
        except BaseException:
            self.stop()
            raise

    def get(self, path):
        check(self.proc.poll() is None, f"prometheus exited with {self.proc.returncode}:\n{open(self.log).read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return json.loads(r.read()) if path.startswith("/api/") else r.status == 200
        except urllib.error.HTTPError as e:  # a bad query: 400 with the parser's message in the body
            if not path.startswith("/api/"):
                raise
            return json.loads(e.read())

    def query(self, promql):
        doc = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        check(doc["status"] == "success", f"{promql}: {doc}")
        return doc["data"]["result"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def grafana_to_promql(expr):
    """A panel query as Grafana sends it with every variable on All (".*")."""
    return expr.replace("$__rate_interval", "10s").replace("$cluster", ".*").replace("$instance", ".*") \
               .replace("$lcore", ".*")


def test_prometheus_evaluates_every_rule_and_answers_every_panel():
    """a real Prometheus with the rules loaded: every rule healthy, every panel and variable query returns data"""
    if not shutil.which("prometheus"):
        raise Skip("prometheus not installed (Debian package prometheus: deploy/install-deps.sh)")
    tmp = tempfile.mkdtemp(prefix="flowcop-dash-prom-")
    fc = prom = None
    try:
        fc = Flowcop(tmp)
        prom = Prometheus(tmp, f"127.0.0.1:{fc.port}")
        wait(lambda: prom.query('up{job="flowcop"} == 1'), 30, "Prometheus to scrape flowcop")
        # A 10 s rate needs two samples in it, and each rule two evaluations after those.
        wait(lambda: len(prom.query('count_over_time(up{job="flowcop"}[1m])')) and
             float(prom.query('count_over_time(up{job="flowcop"}[1m])')[0]["value"][1]) >= 5, 30, "five scrapes")

        def evaluated():
            groups = prom.get("/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return len(rules) == len(RULES) and all(not r["lastEvaluation"].startswith("0001") for r in rules) and rules
        rules = wait(evaluated, 30, "every rule to be evaluated")
        bad = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        check(not bad, f"rules failing: {bad}")
        # Rules reading other rules see them one evaluation later.
        deadline = time.monotonic() + 30
        while [r for r in RECORDED if not prom.query(r)] and time.monotonic() < deadline:
            time.sleep(0.5)
        empty = sorted(r for r in RECORDED if not prom.query(r))
        check(not empty, f"recording rules without a sample on a live flowcop: {empty}")
        blank = []
        for title, expr in targets():
            if not prom.query(grafana_to_promql(expr)):
                blank.append((title, expr))
        check(not blank, f"panels without data: {blank}")
        for name, q in variable_queries():
            m = re.fullmatch(r"label_values\((.*), (\w+)\)", q)
            check(m, f"variable {name}: {q}")
            values = {r["metric"].get(m.group(2)) for r in prom.query(grafana_to_promql(m.group(1)))} - {None}
            check(values, f"variable {name}: no values from {q}")
    finally:
        try:
            if prom:
                prom.stop()
            if fc:
                fc.stop()
        finally:
            shutil.rmtree(tmp, True)


if __name__ == "__main__":
    run([test_dashboard_layout_ids_and_variables, test_one_unit_per_panel, test_process_row_and_the_rows_deployment_md_lists,
         test_provisioning_matches_the_dashboard_and_prometheus,
         test_every_panel_an_alert_or_doc_names_exists, test_every_runbook_and_doc_link_resolves,
         test_a_panel_naming_an_alert_draws_its_threshold,
         test_every_queried_metric_and_label_is_served_by_the_binary,
         test_prometheus_evaluates_every_rule_and_answers_every_panel])
