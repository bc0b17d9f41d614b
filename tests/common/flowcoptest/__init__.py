# SPDX-License-Identifier: BSD-3-Clause
"""flowcop's Python test helpers, one package for every suite that runs the real binary
(stdlib only, Debian's /usr/bin/python3). A test adds tests/common to sys.path and imports the
modules it needs:

  checks       Fail, check(), wait_until(), run_tests(): assertions and bounded waits
  exposition   fetch(), parse(), scrape(), Scrape, metric(), histogram(): /metrics, the one parser
  telemetry    a DPDK telemetry socket client (/flowcop/* commands)
  process      Flowcop: one long-running flowcop process on a pcap vdev (metrics, telemetry tests)
  harness      run() to completion, Tap, and the end-of-run invariants (integration, hostile, soak)
  pcaplib      classic pcap files: frame builders, write_pcap(), read_pcap(), dissect()
  pcapgen      the synthetic capture whose every count is known in advance
  layouts      LAYOUTS: the lcore layouts every replay scenario runs on (selected() for CI's narrowing)
  scenario     crafted TCP conversations on a millisecond timeline with their expected flows
"""
