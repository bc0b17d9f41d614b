# SPDX-License-Identifier: BSD-3-Clause
"""The docs' defaults, sizes and claims against `flowcop --help`, the code and the shipped rules.

usage: test_docs.py build/app/flowcop REPO_ROOT

Every Markdown page of the tree (test data aside) is read as prose, line breaks folded:
- a default given next to an option, "`--opt N` (1 to 10; default N)", "`--opt V` (the default)",
  "the default `--opt V`", a row of an "| option | default |" table, "the default (fire) budget of
  N" or "the defaults are ... fires at most N", is the default `--help` prints, and a range "A to B"
  beside it is `--help`'s "A..B";
- the timer wheel's constants quoted in lib/timerwheel/timer-wheel.md are the headers' values, and
  every size derived from a bucket (bytes per bucket, N buckets are X KiB) uses kLanes x 4 bytes;
- no page keeps merge markers (<<<<<<<, =======, >>>>>>>);
- claims found false once do not come back: a lock-failed flow retried "one tick late" (it is
  retried by the next cop pass after the tick) and a per-packet path that "takes no lock" (expiry
  on arrival and reopen take the shard lock);
- app/operations.md's list of alert conditions is the rules file's, and FlowcopTimeoutsLate's
  threshold is one default tick plus one default check interval.
stdlib plus PyYAML (Debian's python3-yaml, as test_dashboard.py); no EAL: --help is answered first.
"""
import os
import re
import subprocess
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from tap import check, run  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SKIPPED_DIRS = {".git", "tests/data", "tests/fuzz/corpus", "tests/fuzz/regressions"}
ALERTS_FILE = os.path.join(REPO, "deploy", "prometheus", "rules", "flowcop-alerts.yml")


def pages():
    """{relative path: text} for every Markdown page."""
    out = {}
    for d, dirs, names in os.walk(REPO):
        rel_d = os.path.relpath(d, REPO)
        dirs[:] = [x for x in dirs if os.path.normpath(os.path.join(rel_d, x)) not in SKIPPED_DIRS
                   and not x.startswith("build")]
        for n in names:
            if n.endswith(".md"):
                rel = os.path.normpath(os.path.join(rel_d, n))
                with open(os.path.join(d, n)) as f:
                    out[rel] = f.read()
    return out


RAW = pages()
PAGES = {page: re.sub(r"\s+", " ", text) for page, text in RAW.items()}  # prose: line breaks folded


def help_options():
    """{--option: (default, allowed)} from flowcop --help."""
    p = subprocess.run([EXE, "--help"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"--help: exit {p.returncode}\n{p.stderr}")
    opts, current = {}, None
    for line in (p.stdout + p.stderr).splitlines():
        m = re.match(r"^  (?:-\w, )?(--[a-z][a-z0-9_-]*)", line)
        if m:
            current = m.group(1)
            opts[current] = [None, None]
            continue
        m = re.match(r"^\s+(default|allowed): (.*)$", line)
        if m and current:
            opts[current][0 if m.group(1) == "default" else 1] = m.group(2).strip()
    return {k: tuple(v) for k, v in opts.items()}


HELP = help_options()


def plain(value):
    """A value as --help writes it: no backticks, no thousands separators."""
    value = value.strip().strip("`").strip()
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", value)


def where(page, text, start):
    return f"{page}: ...{text[max(0, start - 60):start + 100]}..."


def test_defaults_and_ranges_beside_an_option_are_the_help_text():
    """every 'default N' and 'A to B' written beside an option is what --help prints"""
    check(len(HELP) > 20 and HELP["--timeout-budget"][0], f"--help parsed to {HELP}")
    seen = 0
    forms = [
        # `--opt N` (a power of two, 256 to 16777216; default 4096) / `--opt` expiries (1 to 9; default 8)
        re.compile(r"`(--[a-z][a-z0-9_-]*)(?: [^`]*)?`[^.()`]{0,40}\(([^()]*?)\bdefault ([^;,)]+)"),
        # `--clock tsc` (default) / `--mbufs auto` (the default) / `--loose-pickup on`, the default
        re.compile(r"`(--[a-z][a-z0-9_-]*) ([^`]+)`,? \(?(?:the )?default\b()"),
        # the default `--mbufs auto`
        re.compile(r"\bthe default `(--[a-z][a-z0-9_-]*) ([^`]+)`()"),
    ]
    for page, text in PAGES.items():
        for i, form in enumerate(forms):
            for m in form.finditer(text):
                opt = m.group(1)
                if opt not in HELP:
                    continue  # an EAL option, or another tool's
                said = m.group(3) if i == 0 else m.group(2)
                check(plain(said) == HELP[opt][0],
                      f"{where(page, text, m.start())}\n  says {opt} defaults to {plain(said)!r}; --help: {HELP[opt][0]!r}")
                if i == 0:
                    for lo, hi in re.findall(r"([\d,]+) to ([\d,]+)", m.group(2)):
                        rng = f"{plain(lo)}..{plain(hi)}"
                        check(rng in (HELP[opt][1] or ""),
                              f"{where(page, text, m.start())}\n  says {opt} takes {rng}; --help: {HELP[opt][1]!r}")
                seen += 1
    check(seen >= 10, f"only {seen} documented defaults found: the patterns no longer match the docs")


def test_default_tables_and_named_defaults_are_the_help_text():
    """'| option | default |' tables and 'the default (fire) budget of N' are what --help prints"""
    rows = 0
    for page, raw in RAW.items():
        in_table = False
        for line in raw.splitlines():
            if re.match(r"^\| option \| default \|", line):
                in_table = True
            elif not line.startswith("|"):
                in_table = False
            elif in_table:
                m = re.match(r"^\| `(--[a-z][a-z0-9_-]*)` \| ([^|]+) \|", line)
                if not m:
                    continue  # the |---| line
                opt, said = m.groups()
                check(opt in HELP, f"{page}: table row for {opt}, which --help does not know")
                check(plain(said) == HELP[opt][0], f"{page}: table says {opt} defaults to {plain(said)!r}; "
                      f"--help: {HELP[opt][0]!r}")
                rows += 1
    for page, text in PAGES.items():
        for m in re.finditer(r"\b[Dd]efault (?:fire )?budget(?: \([^)]*\))?(?: of| is)? (\d[\d,]*\d|\d)"
                             r"|\b[Tt]he defaults are\b[^.]*?\bfires at most (\d[\d,]*\d|\d)", text):
            check(plain(m.group(1) or m.group(2)) == HELP["--timeout-budget"][0],
                  f"{where(page, text, m.start())}\n  the default budget is {HELP['--timeout-budget'][0]}")
            rows += 1
    check(rows >= 6, f"only {rows} table rows and named budgets found")


def header_constants():
    consts = {}
    for name in os.listdir(os.path.join(REPO, "lib", "timerwheel")):
        if name.endswith(".h"):
            with open(os.path.join(REPO, "lib", "timerwheel", name)) as f:
                for k, v in re.findall(r"constexpr [\w:]+ (k\w+) = ([^;]+);", f.read()):
                    consts[k] = v.strip()
    return consts


def test_wheel_constants_and_bucket_sizes_follow_the_code():
    """timer-wheel.md's constants are the headers', and every bucket size in the docs is kLanes x 4 bytes"""
    consts = header_constants()
    lanes = int(consts["kLanes"])
    with open(os.path.join(REPO, "lib", "timerwheel", "timer-wheel.md")) as f:
        quoted = re.findall(r"inline constexpr [\w:]+ (k\w+) = ([^;,]+)[;,]", f.read())
    check(quoted, "timer-wheel.md quotes no constant")
    for k, v in quoted:
        check(consts.get(k) == v.strip(), f"timer-wheel.md: {k} = {v}; the header has {consts.get(k)!r}")
    bucket = lanes * 4
    unit = {"KiB": 1024, "MiB": 1024 * 1024}
    found = 0
    for page, text in PAGES.items():
        # "N bytes each/per bucket/of lane heads", unless it reports what an old version counted.
        for m in re.finditer(r"(?<!counted )\b(\d+) bytes (?:each|per bucket|of lane heads)", text):
            sentence = text[text.rfind(".", 0, m.start()) + 1:text.find(".", m.end())]
            if "bucket" in sentence:
                check(int(m.group(1)) == bucket, f"{where(page, text, m.start())}\n  a bucket is {lanes} x 4 = {bucket} bytes")
                found += 1
        sized = [r"([\d,]+) buckets are ([\d.]+) (KiB|MiB)",
                 r"([\d,]+) buckets \([^)]*?([\d.]+) (KiB|MiB)(?: per lcore| of lane heads)\)",
                 r"(?:per bucket|per lcore)[^.]*?([\d.]+) (KiB|MiB) at the default ([\d,]+)",
                 r"\| `--wheel-buckets` \| ([\d,]+) \|[^|]*?([\d.]+) (KiB|MiB) of lane heads"]
        for i, pattern in enumerate(sized):
            for m in re.finditer(pattern, text):
                n, size, u = (m.group(3), m.group(1), m.group(2)) if i == 2 else m.groups()
                want = int(plain(n)) * bucket
                check(abs(float(size) * unit[u] - want) < 1,
                      f"{where(page, text, m.start())}\n  {plain(n)} buckets are {want} bytes")
                found += 1
    check(found >= 4, f"only {found} bucket sizes found")


def test_claims_found_false_do_not_return():
    """no page says a deferred flow fires 'one tick late' or that the per-packet path takes no lock"""
    sources = dict(PAGES)
    for rel in ("deploy/prometheus/rules/flowcop-alerts.yml", "deploy/grafana/flowcop.json"):
        with open(os.path.join(REPO, rel)) as f:
            sources[rel] = re.sub(r"\s+", " ", f.read())
    for page, text in sources.items():
        for m in re.finditer(r"one tick lat(?:e|er)\b|retr(?:y|ies) one tick", text):
            sentence = text[max(text.rfind(".", 0, m.start()), text.rfind("\"", 0, m.start())) + 1:m.end()]
            check(not re.search(r"lock|defer", sentence),
                  f"{where(page, text, m.start())}\n  a deferred flow is retried by the next cop pass after the "
                  f"tick (one --check-interval-ms later at the defaults), not one tick late")
        m = re.search(r"per-packet path[^.]{0,40}\btakes (?:no lock|none)\b", text)
        check(not m, f"{where(page, text, m.start()) if m else ''}\n  expiry on arrival and reopen take the shard lock")


def alert_rules():
    with open(ALERTS_FILE) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]


def test_operations_lists_the_shipped_alerts_and_the_lag_bound_is_the_defaults():
    """operations.md's alert conditions are the rules file's; FlowcopTimeoutsLate's threshold is tick + interval"""
    with open(os.path.join(REPO, "app", "operations.md")) as f:
        ops = f.read()
    m = re.search(r"### Queries worth alerting on.*?```promql\n(.*?)```", ops, re.S)
    check(m, "operations.md has no promql block under 'Queries worth alerting on'")
    listed = re.findall(r"^# (Flowcop\w+) \(for (\w+)\)\n(.+)$", m.group(1), re.M)
    shipped = [(r["alert"], r["for"], " ".join(r["expr"].split())) for r in alert_rules()]
    check([(a, f, " ".join(e.split())) for a, f, e in listed] == shipped,
          "operations.md lists\n  " + "\n  ".join(map(str, listed)) + "\nthe rules file has\n  "
          + "\n  ".join(map(str, shipped)))
    late = [r for r in alert_rules() if r["alert"] == "FlowcopTimeoutsLate"]
    check(len(late) == 1, "one FlowcopTimeoutsLate")
    threshold = float(re.search(r">\s*([\d.]+)", late[0]["expr"]).group(1))
    bound = (int(HELP["--tick-ms"][0]) + int(HELP["--check-interval-ms"][0])) / 1000
    check(threshold == bound, f"FlowcopTimeoutsLate fires above {threshold} s; the defaults' bound, one tick plus "
          f"one check interval, is {bound} s")


def test_no_page_keeps_merge_markers():
    # A Markdown page compiles whatever it holds: a merge left unresolved there shows only to a reader
    # (app/operations.md carried one for a session).
    marked = [f"{page}:{i + 1}" for page, text in RAW.items() for i, line in enumerate(text.splitlines())
              if re.match(r"^(<<<<<<< |>>>>>>> |=======$)", line)]
    check(not marked, "merge markers at " + ", ".join(marked))


if __name__ == "__main__":
    run([test_no_page_keeps_merge_markers, test_defaults_and_ranges_beside_an_option_are_the_help_text,
         test_default_tables_and_named_defaults_are_the_help_text, test_wheel_constants_and_bucket_sizes_follow_the_code,
         test_claims_found_false_do_not_return, test_operations_lists_the_shipped_alerts_and_the_lag_bound_is_the_defaults])
