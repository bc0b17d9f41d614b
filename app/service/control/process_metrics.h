// SPDX-License-Identifier: BSD-3-Clause
// The process families every Prometheus client library exports (the "process collector"), read from
// /proc/self at scrape time, and flowcop_build_info:
//   process_start_time_seconds       gauge    Unix time the process started (/proc/self/stat starttime)
//   process_cpu_seconds_total        counter  user + system CPU time of every thread
//   process_resident_memory_bytes    gauge    resident set (/proc/self/statm); hugetlbfs pages are not
//                                             in it (Linux counts them as HugetlbPages in /proc/PID/status)
//   process_virtual_memory_bytes     gauge    virtual memory size
//   process_open_fds, process_max_fds gauges  open descriptors and RLIMIT_NOFILE's soft limit
//   flowcop_build_info{version,commit,dpdk} gauge 1 (build_info.h; dpdk is the version running)
// Threading: called on the exporter's HTTP threads only; reads files, takes no lock, touches nothing
// of the data plane. Degraded behaviour: a /proc file that cannot be read omits its family (a
// sandbox without /proc), it never fails the scrape.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace flowcop::app {

void collect_process_families(std::vector<prometheus::MetricFamily>& out);

// Parsing, separate for the unit tests. /proc/PID/stat's text -> (utime + stime, starttime) in
// clock ticks; the command name (field 2) may hold spaces and parentheses.
struct ProcStat {
    uint64_t cpu_ticks = 0;
    uint64_t start_ticks = 0; // since boot
    uint64_t vsize_bytes = 0;
};
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// /proc/stat's "btime" line: boot time in Unix seconds.
std::optional<uint64_t> parse_boot_time(std::string_view proc_stat);

} // namespace flowcop::app
