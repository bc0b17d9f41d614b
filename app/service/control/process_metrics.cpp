// SPDX-License-Identifier: BSD-3-Clause
#include "process_metrics.h"

#include <service/build_info.h>

#include <metrics/families.h>
#include <text/decimal.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace flowcop::app {
namespace {

using prometheus::MetricType;

std::optional<std::string> read_file(const char* path)
{
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The n-th whitespace-separated unsigned field of `line` (0-based), or nullopt.
std::optional<uint64_t> field(std::string_view line, unsigned n)
{
    size_t at = 0;
    for (unsigned i = 0;; ++i) {
        at = line.find_first_not_of(' ', at);
        if (at == std::string_view::npos)
            return std::nullopt;
        const size_t end = std::min(line.find(' ', at), line.size());
        if (i == n) {
            uint64_t v = 0;
            if (!text::parse_decimal(line.substr(at, end - at), v))
                return std::nullopt;
            return v;
        }
        at = end;
    }
}

std::optional<uint64_t> open_fds()
{
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr)
        return std::nullopt;
    uint64_t n = 0;
    while (dirent* e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; // the descriptor opendir() holds
}

void gauge(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help, double v)
{
    metrics::Family f(name, help, MetricType::Gauge);
    f.gauge({}, v);
    out.push_back(f.take());
}

} // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text)
{
    // "pid (comm) state ppid ...": comm may contain ") ", so fields are counted after the last ')'.
    const size_t close = text.rfind(')');
    if (close == std::string_view::npos)
        return std::nullopt;
    const std::string_view rest = text.substr(close + 1);
    // After comm, field 3 (state) is index 0: utime is field 14, stime 15, starttime 22, vsize 23.
    const auto utime = field(rest, 11), stime = field(rest, 12), start = field(rest, 19), vsize = field(rest, 20);
    if (!utime || !stime || !start || !vsize)
        return std::nullopt;
    return ProcStat{*utime + *stime, *start, *vsize};
}

std::optional<uint64_t> parse_boot_time(std::string_view proc_stat)
{
    for (size_t at = 0; at < proc_stat.size();) {
        const size_t nl = std::min(proc_stat.find('\n', at), proc_stat.size());
        const std::string_view line = proc_stat.substr(at, nl - at);
        if (line.starts_with("btime "))
            return field(line, 1);
        at = nl + 1;
    }
    return std::nullopt;
}

void collect_process_families(std::vector<prometheus::MetricFamily>& out)
{
    metrics::Family info("flowcop_build_info", "The build that runs: version, git commit, DPDK (value is always 1)",
                         MetricType::Gauge);
    info.gauge({{"version", build_version()}, {"commit", build_commit()}, {"dpdk", run_dpdk_version()}}, 1);
    out.push_back(info.take());

    const double hz = double(sysconf(_SC_CLK_TCK));
    const auto stat = read_file("/proc/self/stat");
    const auto parsed = stat ? parse_proc_stat(*stat) : std::nullopt;
    const auto sys = read_file("/proc/stat");
    const auto boot = sys ? parse_boot_time(*sys) : std::nullopt;
    if (parsed && boot && hz > 0) {
        gauge(out, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
              double(*boot) + double(parsed->start_ticks) / hz);
        metrics::Family cpu("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                            MetricType::Counter);
        cpu.counter({}, double(parsed->cpu_ticks) / hz);
        out.push_back(cpu.take());
        gauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", double(parsed->vsize_bytes));
    }
    if (const auto statm = read_file("/proc/self/statm"))
        if (const auto resident = field(*statm, 1))
            gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                  double(*resident) * double(sysconf(_SC_PAGESIZE)));
    if (const auto fds = open_fds())
        gauge(out, "process_open_fds", "Number of open file descriptors.", double(*fds));
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        gauge(out, "process_max_fds", "Maximum number of open file descriptors.", double(rl.rlim_cur));
}

} // namespace flowcop::app
