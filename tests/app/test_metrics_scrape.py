# SPDX-License-Identifier: BSD-3-Clause
"""/metrics from the running binary: names, types, labels and values after a replay.

usage: test_metrics_scrape.py build/app/flowcop

The synthetic capture (tests/common/flowcoptest/pcapgen.py) is replayed with --clock packet, so every
count is known in advance; the demo capture checks the same invariants on real
traffic. promtool (Debian's prometheus package) lints a real scrape.
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest import pcapgen  # noqa: E402
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import Scrape  # noqa: E402
from flowcoptest.process import DEMO_PCAP, Flowcop, temp_dir  # noqa: E402

EXE = sys.argv[1]
TMP = temp_dir(prefix="flowcop-metrics-")
PCAP = os.path.join(TMP, "synthetic.pcap")
N_PACKETS = pcapgen.write(PCAP)
E = pcapgen.EXPECTED

# name -> Prometheus type, for every family the issue requires.
REQUIRED = {
    "flowcop_inactivity_cop_visited_total": "counter",
    "flowcop_inactivity_cop_budget_exhausted_total": "counter",
    "flowcop_inactivity_cop_lock_acquire_failure_total": "counter",
    "flowcop_inactivity_cop_passes_total": "counter",
    "flowcop_inactivity_cop_pass_duration_seconds": "histogram",
    "flowcop_timeout_lag_seconds": "histogram",
    "flowcop_flows_active": "gauge",
    "flowcop_flows_created_total": "counter",
    "flowcop_flows_expired_total": "counter",
    "flowcop_flows_dropped_total": "counter",
    "flowcop_packets_total": "counter",
    "flowcop_events_dropped_total": "counter",
    "flowcop_port_rx_packets_total": "counter",
    "flowcop_port_tx_packets_total": "counter",
    "flowcop_port_rx_missed_total": "counter",
    "flowcop_port_rx_nombuf_total": "counter",
    "flowcop_config_info": "gauge",
}
REASONS = {"inactivity", "active", "closed", "reset", "killed", "evicted", "shutdown"}


def replay(pcap, name, extra=()):
    return Flowcop(EXE, pcap, ["--clock", "packet", "--stop-when-idle-ms", "6000", "--flows-per-lcore", "65536",
                               "--metrics-addr", "127.0.0.1:0", *extra], name)


def settled(fc, rx, created, ended):
    """The scrape once the replay is in and the cop has reaped what it will."""
    def done():
        s = Scrape(fc.url)
        ok = (s.total("flowcop_port_rx_packets_total") == rx and s.total("flowcop_flows_created_total") == created
              and s.total("flowcop_flows_expired_total") == ended)
        return s if ok else None
    return wait_until(done, 20, f"{rx} packets, {created} flows created and {ended} ended")


def promtool_clean(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
          f"promtool check metrics failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def test_every_required_family_is_exposed_with_its_type_and_lcore_label():
    with replay(PCAP, "names") as fc:
        s = settled(fc, N_PACKETS, E["created"], sum(E["expired"].values()))
        for name, t in REQUIRED.items():
            check(s.types.get(name) == t, f"{name}: TYPE {s.types.get(name)!r}, want {t!r}")
            check(s.helps.get(name), f"{name} has no HELP text")
        for name in s.types:
            check(not name.endswith("_total_total"), f"{name}: suffix doubled")
            if s.types[name] == "counter":
                check(name.endswith("_total"), f"counter {name} does not end in _total")
        per_lcore = [n for n in REQUIRED if not n.startswith(("flowcop_port_", "flowcop_config"))]
        for name in per_lcore:
            series = [l for n, l, _ in s.samples if n == name or n.startswith(name + "_")]
            check(series and all(l.get("lcore") == "0" for l in series), f"{name}: samples without lcore=\"0\"")
        check({l["reason"] for l, _ in s.series("flowcop_flows_expired_total")} == REASONS, "expired reasons")
        check([l["reason"] for l, _ in s.series("flowcop_flows_dropped_total")] == ["table_full"], "dropped reasons")
        check({l["reason"] for l, _ in s.series("flowcop_events_dropped_total")} == {"ring_full", "write_error"},
              "events dropped reasons")
        results = {l["result"] for l, _ in s.series("flowcop_packets_total")}
        check(results == set(E["packets"]), f"packet results {sorted(results ^ set(E['packets']))} differ")
        for l, _ in s.series("flowcop_port_rx_packets_total"):
            check(l == {"port": "0", "name": "net_pcap0"}, f"port labels {l}")
        promtool_clean(s.text)
        check(fc.stop() == 0, "flowcop exit code")


def test_values_match_the_synthetic_capture():
    with replay(PCAP, "values") as fc:
        s = settled(fc, N_PACKETS, E["created"], sum(E["expired"].values()))
        for result, n in E["packets"].items():
            got = s.value("flowcop_packets_total", lcore="0", result=result)
            check(got == n, f"packets_total{{result={result!r}}} = {got}, want {n}")
        check(s.total("flowcop_packets_total") == s.value("flowcop_port_rx_packets_total", port="0") == N_PACKETS,
              "packets_total summed over results != port rx packets")
        check(s.value("flowcop_flows_created_total", lcore="0") == E["created"], "created")
        check(s.value("flowcop_flows_active", lcore="0") == E["active"], "active")
        for reason in REASONS:
            got = s.value("flowcop_flows_expired_total", lcore="0", reason=reason)
            check(got == E["expired"].get(reason, 0), f"expired{{reason={reason!r}}} = {got}")
        check(s.value("flowcop_flows_dropped_total", lcore="0", reason="table_full") == 0, "table_full drops")
        check(s.value("flowcop_port_tx_packets_total", port="0") == 0, "monitor mode transmitted")
        check(s.value("flowcop_port_rx_missed_total", port="0") == 0, "missed")
        check(s.value("flowcop_port_rx_nombuf_total", port="0") == 0, "no mbuf")
        # The cop expired exactly the flows that ended (a reset flow is also reaped by the cop).
        check(s.value("flowcop_inactivity_cop_fired_total", lcore="0") == sum(E["expired"].values()), "fired")
        check(s.value("flowcop_inactivity_cop_visited_total", lcore="0") >= sum(E["expired"].values()), "visited")
        check(s.value("flowcop_inactivity_cop_budget_exhausted_total", lcore="0") == 0, "budget exhausted")
        check(s.value("flowcop_inactivity_cop_lock_acquire_failure_total", lcore="0") == 0, "lock failures")
        passes = s.value("flowcop_inactivity_cop_passes_total", lcore="0")
        check(passes >= 1, "no cop pass")
        check(s.value("flowcop_inactivity_cop_pass_duration_seconds_count", lcore="0") == passes,
              "one pass-duration observation per pass")
        inf = s.value("flowcop_inactivity_cop_pass_duration_seconds_bucket", lcore="0", le="+Inf")
        check(inf == passes, "pass duration +Inf bucket != count")
        # Lag: the TIME_WAIT and SYN_SENT flows (120 s) were reaped when the clock jumped to T0+300 s,
        # ~180 s late, the UDP and echo flows (30 s) ~270 s late; reset flows do not count (their
        # deadline is "now").
        lag_n = s.value("flowcop_timeout_lag_seconds_count", lcore="0")
        check(lag_n == E["lagged"], f"lag observations {lag_n}, want {E['lagged']}")
        mean = s.value("flowcop_timeout_lag_seconds_sum", lcore="0") / lag_n
        want = (180 * (E["lagged"] - 2) + 270 * 2) / E["lagged"]
        check(want - 3 <= mean <= want + 1, f"mean lag {mean} s, want ~{want:.0f} s (in seconds, not ns)")
        check(s.value("flowcop_timeout_lag_seconds_bucket", lcore="0", le="60") == 0, "lag <= 60 s bucket")
        buckets = [v for l, v in s.series("flowcop_timeout_lag_seconds_bucket", lcore="0")]
        check(buckets == sorted(buckets), "histogram buckets are not cumulative")
        check(s.value("flowcop_up") == 1, "flowcop_up")
        promtool_clean(s.text)
        check(fc.stop() == 0, "flowcop exit code")


def test_config_info_carries_the_running_configuration():
    with replay(PCAP, "config", ["--timeout-budget", "77", "--tcp-timeout-close", "9"]) as fc:
        s = Scrape(fc.url)
        (labels, value), = s.series("flowcop_config_info")
        check(value == 1, "info value")
        check(labels["timeout_budget"] == "77" and labels["tcp_timeout_close"] == "9", f"labels {labels}")
        check(labels["clock"] == "packet" and labels["metrics_addr"] == "127.0.0.1:0", f"labels {labels}")
        check(len(labels) >= 20, "config_info is missing options")
        fc.stop()


def test_an_unusual_events_path_keeps_the_scrape_valid():
    # Label values may be any bytes from the command line: quotes, backslashes and invalid
    # UTF-8 must not break the exposition (Prometheus drops a whole scrape it cannot parse).
    odd = os.path.join(TMP.encode(), b'ev "q" \\ \xff.jsonl')
    with Flowcop(EXE, PCAP, ["--clock", "packet", "--stop-when-idle-ms", "3000", "--metrics-addr", "127.0.0.1:0",
                             "--flows-per-lcore", "65536", "--events", os.fsdecode(odd)], "odd") as fc:
        s = Scrape(fc.url)
        (labels, _), = s.series("flowcop_config_info")
        check(labels["events"].endswith('ev "q" \\ \ufffd.jsonl'), f"events label {labels['events']!r}")
        promtool_clean(s.text)
        fc.stop()
    check(os.path.exists(odd), "the event log was not written where asked")


def test_event_counters_match_the_event_log():
    log = os.path.join(TMP, "events.jsonl")
    created, ended = E["created"], sum(E["expired"].values())
    with replay(PCAP, "events", ["--events", log]) as fc:
        def written():
            s = Scrape(fc.url)
            return s if s.value("flowcop_events_written_total", lcore="0") == created + ended else None
        s = wait_until(written, 20, "the writer to drain every event")
        check(s.total("flowcop_events_dropped_total") == 0, "events dropped")
        check(s.value("flowcop_events_write_errors_total", lcore="0") == 0, "write errors")
        check(fc.stop() == 0, "flowcop exit code")
    with open(log) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    # The scrape counted create + destroy events; shutdown then ended the still-open flows.
    check(len(lines) == created + ended + E["active"], f"{len(lines)} event lines")


def test_the_demo_capture_gives_its_80_flows_and_consistent_totals():
    with replay(DEMO_PCAP, "demo") as fc:
        def done():
            s = Scrape(fc.url)
            # 80 TCP connections (its UDP: tests/conntrack/test_real_protocols.cpp).
            return s if s.total("flowcop_proto_flows_created_total", proto="tcp") == 80 \
                and s.total("flowcop_port_rx_packets_total") > 0 \
                and s.total("flowcop_packets_total") == s.total("flowcop_port_rx_packets_total") else None
        s = wait_until(done, 20, "80 flows created")
        for l, created in s.series("flowcop_flows_created_total"):
            lc = l["lcore"]
            ended = s.total("flowcop_flows_expired_total", lcore=lc)
            check(created == ended + s.value("flowcop_flows_active", lcore=lc),
                  f"lcore {lc}: created != sum(expired) + active")
        check(s.total("flowcop_packets_total", result="tracked") > 0, "nothing tracked")
        promtool_clean(s.text)
        check(fc.stop() == 0, "flowcop exit code")


def exporter_started_or_exited(fc):
    """Waits until flowcop serves metrics ("serving") or has exited ("exited"), up to 30 s."""
    def outcome():
        if fc.proc.poll() is not None:
            return "exited"
        return "serving" if "metrics at" in fc.stderr else None
    return wait_until(outcome, 30, "the exporter to start or fail")


def test_ipv6_exporter_serves_or_says_why_not():
    # Debian 12's civetweb (prometheus-cpp's HTTP server) has no IPv6: flowcop must then refuse
    # the address with a sentence naming the cause, not claim the address is in use.
    fc = Flowcop(EXE, PCAP, ["--clock", "packet", "--stop-when-idle-ms", "3000", "--metrics-addr", "[::1]:0",
                             "--flows-per-lcore", "65536"], "v6", wait_metrics=False)
    with fc:
        if exporter_started_or_exited(fc) == "serving":
            fc.url = fc._url_or_exit()
            check(fc.url.startswith("http://[::1]:"), f"url {fc.url}")
            check("flowcop_flows_created_total" in Scrape(fc.url).types, "no flowcop metrics over IPv6")
            fc.stop()
        else:
            fc._reader.join(timeout=5)
            check(fc.proc.returncode == 2, f"exit code {fc.proc.returncode}, want 2")
            check("[::1]:0: cannot listen on IPv6: the HTTP server prometheus-cpp uses (civetweb) was built without IPv6"
                  in fc.stderr, f"stderr: {fc.stderr}")


def test_an_ipv6_network_in_metrics_allow_applies_or_says_why_not():
    # An IPv6 network in --metrics-allow needs civetweb with IPv6 (Debian 12's has none): flowcop
    # then refuses it at start naming the flag, instead of failing with "cannot listen". Where it
    # has IPv6, the list holds ::1 only, so this test's IPv4 scrape is refused.
    fc = Flowcop(EXE, PCAP, ["--clock", "packet", "--stop-when-idle-ms", "3000", "--metrics-addr", "127.0.0.1:0",
                             "--metrics-allow", "::1/128", "--flows-per-lcore", "65536"], "v6acl", wait_metrics=False)
    with fc:
        if exporter_started_or_exited(fc) == "serving":
            fc.url = fc._url_or_exit()
            try:
                Scrape(fc.url)
                refused = False
            except OSError:
                refused = True
            check(refused, "a client from 127.0.0.1 was served, outside --metrics-allow ::1/128")
            fc.stop()
        else:
            fc._reader.join(timeout=5)
            check(fc.proc.returncode == 2, f"exit code {fc.proc.returncode}, want 2")
            check("flowcop: --metrics-allow: ::1/128: the HTTP server prometheus-cpp uses (civetweb) was built "
                  "without IPv6 (as Debian 12's is), so it cannot check IPv6 clients; list IPv4 networks only"
                  in fc.stderr, f"stderr: {fc.stderr}")


def test_a_taken_port_is_a_clear_configuration_error():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        fc = Flowcop(EXE, PCAP, ["--clock", "packet", "--metrics-addr", f"127.0.0.1:{port}"], "busy",
                     wait_metrics=False)
        with fc:
            rc = fc.wait_exit(30)
            fc._reader.join(timeout=5)
            check(rc == 2, f"exit code {rc}, want 2")
            check(f"--metrics-addr: 127.0.0.1:{port}: cannot listen: Address already in use" in fc.stderr,
                  f"stderr: {fc.stderr}")


if __name__ == "__main__":
    run_tests([
        test_every_required_family_is_exposed_with_its_type_and_lcore_label,
        test_values_match_the_synthetic_capture,
        test_config_info_carries_the_running_configuration,
        test_an_unusual_events_path_keeps_the_scrape_valid,
        test_event_counters_match_the_event_log,
        test_the_demo_capture_gives_its_80_flows_and_consistent_totals,
        test_ipv6_exporter_serves_or_says_why_not,
        test_a_taken_port_is_a_clear_configuration_error,
    ])
