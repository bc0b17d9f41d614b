# SPDX-License-Identifier: BSD-3-Clause
"""Every /flowcop/* telemetry command through the real DPDK telemetry socket.

usage: test_telemetry_commands.py build/app/flowcop

flowcop replays the synthetic capture (tests/common/flowcoptest/pcapgen.py) under
--clock tsc, so its established flows stay open (5-day timeout) while the test
runs; the cop runs on wall time once a second. Each good command is checked for
its reply shape and its effect (in telemetry and in /metrics); each bad input
for an error reply, no change, and a service that keeps answering.
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest import pcapgen  # noqa: E402
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import Scrape  # noqa: E402
from flowcoptest.process import Flowcop, temp_dir  # noqa: E402
from flowcoptest.telemetry import telemetry, telemetry_connect  # noqa: E402

EXE = sys.argv[1]
PCAP = os.path.join(temp_dir(prefix="flowcop-tel-"), "synthetic.pcap")
N_PACKETS = pcapgen.write(PCAP)
ESTABLISHED = pcapgen.ESTABLISHED_V4 + pcapgen.ESTABLISHED_V6
# Open once the resets are reaped: established + TIME_WAIT (120 s) + SYN_SENT (120 s).
OPEN = ESTABLISHED + pcapgen.CLOSED + pcapgen.HALF_OPEN

# --track tcp: real time runs here, and the capture's UDP and echo flows would expire (30 s) mid-test.
FC = Flowcop(EXE, PCAP, ["--clock", "tsc", "--track", "tcp", "--stop-when-idle-ms", "170000", "--flows-per-lcore",
                         "65536",
                         "--metrics-addr", "127.0.0.1:0"], "tel")
SOCK = FC.socket_path


def tel(req):
    return telemetry(SOCK, req)


def error_of(req):
    r = tel(req)
    check(isinstance(r, dict) and isinstance(r.get("error"), str) and r["error"],
          f"{req[:60]!r}: expected an error reply, got {r}")
    check(all(0x20 <= ord(c) < 0x7f for c in r["error"]) and len(r["error"]) <= 127,
          f"{req[:60]!r}: error text not printable ASCII <= 127 bytes: {r['error']!r}")
    return r


def flows(params=""):
    r = tel("/flowcop/flows" + ("," + params if params else ""))
    check(isinstance(r, list), f"flows,{params}: {r}")
    out = []
    for f in r:
        check(isinstance(f, list) and all(isinstance(x, str) and "=" in x for x in f), f"flow entry {f}")
        out.append(dict(x.split("=", 1) for x in f))
    return out


def stats():
    return tel("/flowcop/stats")


def test_all_six_commands_are_registered_with_help():
    listing = tel("/")
    for c in ("stats", "config", "ports", "flows", "kill", "set"):
        check(f"/flowcop/{c}" in listing, f"/flowcop/{c} missing from {listing}")
        h = tel(f"/help,/flowcop/{c}")
        check(h.get(f"/flowcop/{c}"), f"no help for /flowcop/{c}: {h}")


def test_ports_says_the_plan_and_who_polls_each_queue():
    p = tel("/flowcop/ports")
    check(p["plan"] == "single_lcore" and p["reason"] == "one_lcore", f"plan {p}")
    check(" ".join(p["why"]).startswith("lcore "), f"why {p['why']}")
    check(p["ports"] == [0] and p["rx_queues"] == [1] and p["port0_queue_lcores"] == p["workers"], f"ports {p}")


def test_stats_reports_the_replay():
    s = wait_until(lambda: (lambda s: s if s["flows_expired_reset"] == pcapgen.RESET else None)(stats()), 10,
                   "the resets to be reaped")
    check(s["rx_packets"] == N_PACKETS, f"rx_packets {s['rx_packets']}")
    check(s["flows_created"] == pcapgen.EXPECTED["created_tcp"], f"flows_created {s['flows_created']}")
    check(s["flows_active"] == OPEN, f"flows_active {s['flows_active']}")
    check(s["flows_created"] == s["flows_expired"] + s["flows_active"], "created != expired + active")
    for k in ("inactivity_cop_passes", "inactivity_cop_visited", "inactivity_cop_fired",
              "inactivity_cop_budget_exhausted", "inactivity_cop_lock_acquire_failure", "flows_dropped_table_full"):
        check(isinstance(s[k], int), f"{k} missing")
    check(s["lcores"] == [0], f"lcores {s['lcores']}")
    for k in ("flows_active_per_lcore", "inactivity_cop_visited_per_lcore",
              "inactivity_cop_budget_exhausted_per_lcore", "inactivity_cop_lock_acquire_failure_per_lcore"):
        check(isinstance(s[k], list) and len(s[k]) == 1, f"{k}: {s.get(k)}")
    check(s["flows_active_per_lcore"] == [OPEN], "per-lcore active")
    m = Scrape(FC.url)
    check(m.value("flowcop_flows_created_total", lcore="0") == s["flows_created"], "stats and metrics disagree")
    # Everything else /metrics has, as totals: packets by result, events, histogram counts and sums, ports.
    results = {l["result"] for l, _ in m.series("flowcop_packets_total")}
    check(len(results) > 5, f"results {results}")
    for r in results:
        check(s.get("packets_" + r) == m.value("flowcop_packets_total", lcore="0", result=r),
              f"packets_{r}: stats {s.get('packets_' + r)}, metrics {m.value('flowcop_packets_total', lcore='0', result=r)}")
    check(sum(s["packets_" + r] for r in results) == N_PACKETS, "packets by result add up to rx_packets")
    check(s["events_written"] == m.value("flowcop_events_written_total", lcore="0"), "events_written")
    check(s["events_dropped_ring_full"] == m.value("flowcop_events_dropped_total", lcore="0", reason="ring_full") and
          s["events_dropped_write_error"] == m.value("flowcop_events_dropped_total", lcore="0", reason="write_error"),
          "events dropped")
    # The cop passes once a second meanwhile: the scrape, taken after, may count a few more.
    passes = m.value("flowcop_inactivity_cop_pass_duration_seconds_count", lcore="0")
    check(0 < s["inactivity_cop_pass_duration_count"] <= passes <= s["inactivity_cop_pass_duration_count"] + 5,
          f"pass duration count: stats {s['inactivity_cop_pass_duration_count']}, metrics {passes}")
    check(s["timeout_lag_count"] == m.value("flowcop_timeout_lag_seconds_count", lcore="0") and
          abs(s["timeout_lag_sum_ns"] / 1e9 - m.value("flowcop_timeout_lag_seconds_sum", lcore="0")) < 1e-6,
          "timeout lag count and sum")
    check(s["ports"] == [0] and s["port_rx_packets"] == [N_PACKETS] and
          s["port_rx_packets"] == [m.value("flowcop_port_rx_packets_total", port="0")] and
          s["port_rx_missed"] == [m.value("flowcop_port_rx_missed_total", port="0")] and
          s["port_rx_nombuf"] == [m.value("flowcop_port_rx_nombuf_total", port="0")], f"ports {s}")


def test_config_matches_config_info():
    c = tel("/flowcop/config")
    (labels, _), = Scrape(FC.url).series("flowcop_config_info")
    check(c == labels, f"/flowcop/config {c} != flowcop_config_info {labels}")
    check(c["clock"] == "tsc" and c["tcp_timeout_established"] == "432000", f"config {c}")


def test_flows_lists_filters_and_limits():
    all_flows = flows("limit=32")
    check(len(all_flows) == OPEN, f"{len(all_flows)} flows listed, {OPEN} open")
    check(len(flows()) == min(20, OPEN), "default limit is 20")
    check(len(flows("limit=3")) == 3, "limit=3")
    f = all_flows[0]
    for k in ("lcore", "proto", "state", "src", "sport", "dst", "dport", "packets_orig", "bytes_orig",
              "packets_reply", "bytes_reply", "timeout", "flags"):
        check(k in f, f"flow field {k} missing: {f}")
    v6 = flows("port=443,limit=32")
    check(len(v6) == pcapgen.ESTABLISHED_V6, f"port=443: {len(v6)} flows")
    for f in v6:
        check(f["state"] == "ESTABLISHED" and f["vlan"] == str(pcapgen.VLAN) and f["flags"] == "SEEN_REPLY,ASSURED", f"{f}")
        check(f["src"] == pcapgen.V6_CLIENT and f["dport"] == "443", f"orig direction: {f}")
        check(f["packets_orig"] == "3" and f["packets_reply"] == "2", f"packet counts {f}")
        check(int(f["timeout"]) > 431000, f"timeout {f['timeout']}")
    check(len(flows(f"addr={pcapgen.V6_SERVER},limit=32")) == pcapgen.ESTABLISHED_V6, "addr filter (v6)")
    syn = flows("addr=10.0.0.4,limit=32")
    check(len(syn) == pcapgen.HALF_OPEN and all(f["state"] == "SYN_SENT" and f["flags"] == "UNREPLIED"
                                                for f in syn), f"half-open {syn}")
    check(len(flows("lcore=0,limit=32")) == OPEN, "lcore=0")
    check(flows("lcore=7") == [], "a non-worker lcore has no flows")
    check(flows("addr=192.0.2.9") == [], "unknown address")


def test_bad_flow_filters_get_errors():
    for p in ["addr=1.2.3", "addr=", "addr=::g", "port=65536", "port=-1", "port=", "port=1e3", "lcore=x",
              "lcore=1024", "limit=0", "limit=33", "limit=99999999999999999999999", "color=red", "limit",
              ",", "limit=5,", "addr=1.2.3.4,port=x"]:
        error_of("/flowcop/flows," + p)


def test_commands_without_parameters_reject_them():
    error_of("/flowcop/stats,now")
    error_of("/flowcop/config,all")
    error_of("/flowcop/ports,all")


def test_bad_kill_tuples_get_errors_and_kill_nothing():
    before = stats()["flows_active"]
    c, cp, s, sp = pcapgen.v4_tuple(0)
    for p in ["", "1.2.3.4", f"{c},{cp},{s}", f"{c},{cp},{s},{sp},1,2,3", f"{c},x,{s},{sp}",
              f"{c},{cp},{s},65536", f"999.1.1.1,{cp},{s},{sp}", f"{c},{cp},{pcapgen.V6_SERVER},{sp}",
              f"{c},{cp},{s},{sp},4096", f"{c},{cp},{s},{sp},1,-1", f"{c},{cp},{s},{sp},", f" {c},{cp},{s},{sp}",
              f"{c},+{cp},{s},{sp}"]:
        error_of("/flowcop/kill," + p)
    time.sleep(1.5)  # a wrong kill would be reaped on the next tick
    check(stats()["flows_active"] == before, "a rejected kill changed the table")


def test_oversized_and_binary_parameters_get_errors():
    # The socket read cuts a request at about 1 KB; what is left is still rejected cleanly.
    for cmd in ("kill", "set", "flows", "stats", "config", "ports"):
        error_of(f"/flowcop/{cmd},".encode() + b"A" * 5000)
        error_of(f"/flowcop/{cmd},".encode() + bytes(range(1, 256)))
    r = error_of(b"/flowcop/kill,\xc3\xa9,1,2.2.2.2,2")  # UTF-8 in the echo: still valid JSON
    check("\\xc3\\xa9" in r["error"], f"non-ASCII bytes not shown as escapes: {r['error']!r}")


def test_kill_reaps_a_live_flow_on_the_next_tick_with_reason_killed():
    c, cp, s, sp = pcapgen.v4_tuple(1)
    v6c, v6cp, v6s, v6sp = pcapgen.v6_tuple(1)
    before = stats()
    # Either direction names the flow; the IPv6 one is on VLAN 100, part of its key.
    check(tel(f"/flowcop/kill,{s},{sp},{c},{cp}") == {"killed": 1}, "kill (reply direction)")
    check(tel(f"/flowcop/kill,{v6c},{v6cp},{v6s},{v6sp},{pcapgen.VLAN}") == {"killed": 1}, "kill v6 + vlan")
    check(tel(f"/flowcop/kill,{v6c},{v6cp},{v6s},{v6sp}") == {"killed": 0}, "without its VLAN it is another flow")
    check(tel("/flowcop/kill,192.0.2.1,1,192.0.2.2,2") == {"killed": 0}, "unknown flow")
    t0 = time.monotonic()
    after = wait_until(lambda: (lambda x: x if x["flows_expired_killed"] == before["flows_expired_killed"] + 2
                                else None)(stats()), 5, "two killed expiries")
    check(time.monotonic() - t0 < 3, "a kill took longer than the next tick (1 s) to reap")
    check(after["flows_active"] == before["flows_active"] - 2, "active did not drop by two")
    check(after["flows_expired"] == before["flows_expired"] + 2, "other flows ended too")
    check(not [f for f in flows("port=80,limit=32") if f["sport"] == str(cp) or f["dport"] == str(cp)],
          "killed flow still listed")
    check(Scrape(FC.url).value("flowcop_flows_expired_total", lcore="0", reason="killed") == 2, "metric")
    check(tel(f"/flowcop/kill,{c},{cp},{s},{sp}") == {"killed": 0}, "a reaped flow cannot be killed again")


SETTABLE = {"timeout_budget", "visit_budget_factor", "default_inactivity_timeout", "active_timeout"} | {
    f"tcp_timeout_{s}" for s in ("syn_sent", "syn_recv", "established", "fin_wait", "close_wait", "last_ack",
                                 "time_wait", "close", "syn_sent2")} | {
    "tcp_be_liberal", "tcp_ignore_invalid_rst", "tcp_max_retrans", "tcp_timeout_max_retrans",
    "tcp_timeout_unacknowledged"} | {"udp_timeout", "udp_timeout_stream", "icmp_timeout", "generic_timeout"}


def test_bad_settings_get_errors_and_change_nothing():
    before = tel("/flowcop/config")
    for p in ["", "timeout_budget", "timeout_budget,", "timeout_budget,0", "timeout_budget,10000001",
              "timeout_budget,abc", "timeout_budget,-5", "timeout_budget,1,2", "visit_budget_factor,1025",
              "tcp_timeout_established,31536001", "tcp_timeout_none,5", "tcp_timeout_,5", "wheel_buckets,1024",
              "flows_per_lcore,2048", "quiet,on", "mode,inline", "TIMEOUT_BUDGET,5", "default_inactivity_timeout,0",
              "active_timeout,99999999999", "timeout_budget,--quiet", ",5"]:
        r = error_of("/flowcop/set," + p)
        check(set(r.get("settable", [])) == SETTABLE, f"set,{p}: settable list {r.get('settable')}")
    check(tel("/flowcop/config") == before, "a rejected set changed the configuration")


def test_set_changes_budgets_and_timeouts_live():
    base = stats()
    open_established = ESTABLISHED - 2  # two were killed
    # A fire budget of 1 (and 1 visit per fire): a burst of due flows needs one pass each.
    r = tel("/flowcop/set,timeout_budget,1")
    check(r.get("timeout_budget") == "1", f"set reply {r}")
    tel("/flowcop/set,visit_budget_factor,1")
    c = tel("/flowcop/config")
    check(c["timeout_budget"] == "1" and c["visit_budget_factor"] == "1", f"config {c}")
    (labels, _), = Scrape(FC.url).series("flowcop_config_info")
    check(labels["timeout_budget"] == "1" and labels["visit_budget_factor"] == "1", "config_info not updated")
    # Established flows last seen seconds ago: a 2 s timeout makes all of them due at once.
    check(tel("/flowcop/set,tcp_timeout_established,2").get("tcp_timeout_established") == "2", "set timeout")
    done = wait_until(lambda: (lambda x: x if x["flows_expired_inactivity"] == base["flows_expired_inactivity"]
                               + open_established else None)(stats()), 15, "the established flows to expire")
    check(done["inactivity_cop_budget_exhausted"] - base["inactivity_cop_budget_exhausted"] >= open_established - 1,
          f"budget of 1 exhausted only {done['inactivity_cop_budget_exhausted'] - base['inactivity_cop_budget_exhausted']}"
          " times")
    check(not flows("port=443,limit=32") and all(f["state"] != "ESTABLISHED" for f in flows("limit=32")),
          "established flows still listed")
    m = Scrape(FC.url)
    check(m.value("flowcop_inactivity_cop_budget_exhausted_total", lcore="0") >= done["inactivity_cop_budget_exhausted"],
          "metrics behind stats")
    (labels, _), = m.series("flowcop_config_info")
    check(labels["tcp_timeout_established"] == "2", "config_info timeout")
    # Raise the budget back; every other settable name is accepted with a valid value.
    for name, value in [("timeout_budget", "512"), ("visit_budget_factor", "16"), ("default_inactivity_timeout", "900"),
                        ("active_timeout", "0"), ("tcp_timeout_syn_sent", "120"), ("tcp_timeout_syn_recv", "60"),
                        ("tcp_timeout_fin_wait", "120"), ("tcp_timeout_close_wait", "60"),
                        ("tcp_timeout_last_ack", "30"), ("tcp_timeout_time_wait", "120"), ("tcp_timeout_close", "10"),
                        ("tcp_timeout_syn_sent2", "120"), ("tcp_timeout_established", "432000"),
                        ("tcp_be_liberal", "on"), ("tcp_be_liberal", "off"), ("tcp_ignore_invalid_rst", "on"),
                        ("tcp_ignore_invalid_rst", "off"), ("tcp_max_retrans", "5"), ("tcp_timeout_max_retrans", "600"),
                        ("tcp_timeout_unacknowledged", "0"), ("udp_timeout", "30"), ("udp_timeout_stream", "120"),
                        ("icmp_timeout", "30"), ("generic_timeout", "600")]:
        check(tel(f"/flowcop/set,{name},{value}").get(name) == value, f"set {name}")
    check(tel("/flowcop/config")["timeout_budget"] == "512", "raised budget not shown")


def test_concurrent_clients_are_all_answered():
    # DPDK serves each connection on its own thread (at most 10 at once; it closes the
    # 11th unanswered): six clients, each with one connection and ten requests, all at once.
    results, errors = [], []
    reqs = [b"/flowcop/stats", b"/flowcop/flows,limit=32", b"/flowcop/config", b"/flowcop/kill,1.1.1.1,1,2.2.2.2,2"]

    def client(i):
        try:
            s = telemetry_connect(SOCK, 10)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
            return
        try:
            json.loads(s.recv(1024))
            for n in range(10):
                s.send(reqs[(i + n) % len(reqs)])
                results.append(json.loads(s.recv(1 << 17)))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            s.close()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    check(not errors and len(results) == 60, f"{len(results)} answers, errors {errors[:3]}")
    check(all("error" not in next(iter(r.values())) for r in results if isinstance(next(iter(r.values())), dict)),
          "a concurrent request got an error")


def test_dpdk_telemetry_py_is_a_working_client():
    # The client operators use (Debian's dpdk package): one JSON reply per line read from stdin.
    tool = "/usr/bin/dpdk-telemetry.py"
    check(os.access(tool, os.X_OK), f"{tool} missing (Debian package dpdk)")
    out = subprocess.run([tool, "-f", FC.prefix], input="/flowcop/stats\n/flowcop/config\n/flowcop/kill,1.2.3\nquit\n",
                         capture_output=True, text=True, timeout=20)
    check(out.returncode == 0, f"exit {out.returncode}: {out.stderr[-500:]}")
    replies = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    check(len(replies) == 3, f"{len(replies)} replies: {out.stdout[-800:]}")
    check(replies[0]["/flowcop/stats"]["rx_packets"] == N_PACKETS, f"stats {replies[0]}")
    check(replies[1]["/flowcop/config"]["clock"] == "tsc", f"config {replies[1]}")
    check("error" in replies[2]["/flowcop/kill"], f"kill {replies[2]}")


def test_the_service_is_still_up_and_stops_cleanly():
    check(FC.alive(), "flowcop died")
    s = stats()
    check(s["rx_packets"] == N_PACKETS and s["flows_created"] == s["flows_expired"] + s["flows_active"], f"{s}")
    check(Scrape(FC.url).value("flowcop_up") == 1, "flowcop_up")
    rc = FC.stop()
    check(rc == 0, f"exit code {rc}")
    check("flows: 25 created" in FC.stderr, "no summary")


if __name__ == "__main__":
    with FC:
        run_tests([
            test_all_six_commands_are_registered_with_help,
            test_ports_says_the_plan_and_who_polls_each_queue,
            test_stats_reports_the_replay,
            test_config_matches_config_info,
            test_flows_lists_filters_and_limits,
            test_bad_flow_filters_get_errors,
            test_commands_without_parameters_reject_them,
            test_bad_kill_tuples_get_errors_and_kill_nothing,
            test_oversized_and_binary_parameters_get_errors,
            test_kill_reaps_a_live_flow_on_the_next_tick_with_reason_killed,
            test_bad_settings_get_errors_and_change_nothing,
            test_set_changes_budgets_and_timeouts_live,
            test_concurrent_clients_are_all_answered,
            test_dpdk_telemetry_py_is_a_working_client,
        test_the_service_is_still_up_and_stops_cleanly,
        ])
