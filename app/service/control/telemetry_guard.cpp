// SPDX-License-Identifier: BSD-3-Clause
#include "telemetry_guard.h"

#include <service/log.h>

#include <rte_log.h>

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace flowcop::app {
namespace {

constexpr const char* kThreadPrefix = "telemetry-"; // DPDK's listeners; their clients inherit it

void on_wake(int) {} // only interrupts a blocked call, which SA_RESTART restarts

struct Connection {
    int fd;
    ino_t inode;
};

bool names_path(int fd, const std::string& path)
{
    sockaddr_un sun{};
    socklen_t len = sizeof sun;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sun), &len) != 0 || sun.sun_family != AF_UNIX)
        return false;
    const size_t n = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    return strnlen(sun.sun_path, n) == path.size() && std::memcmp(sun.sun_path, path.data(), path.size()) == 0;
}

bool listening(int fd)
{
    int on = 0;
    socklen_t len = sizeof on;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on != 0;
}

std::vector<Connection> connections_to(const std::string& path)
{
    std::vector<Connection> out;
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr)
        return out;
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == dirfd(dir))
            continue;
        struct stat st {};
        if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        if (names_path(int(fd), path) && !listening(int(fd)))
            out.push_back({int(fd), st.st_ino});
    }
    closedir(dir);
    return out;
}

bool set_timeouts(int fd, unsigned ms)
{
    const timeval tv{time_t(ms / 1000), suseconds_t(ms % 1000) * 1000};
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
           setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0;
}

std::string read_small(const std::string& path)
{
    char buf[256] = {};
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr)
        return {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    return std::string(buf, n);
}

} // namespace

int TelemetryGuard::blocked_fd(std::string_view text) noexcept
{
    // "NR ARG1 ARG2 ... SP PC": the syscall number in decimal, its arguments in hex.
    int nr = -1;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), nr);
    if (r.ec != std::errc() || (nr != SYS_read && nr != SYS_write) || r.ptr == text.data() + text.size() ||
        *r.ptr != ' ')
        return -1;
    std::string_view arg = text.substr(size_t(r.ptr - text.data()) + 1);
    if (!arg.starts_with("0x"))
        return -1;
    arg.remove_prefix(2);
    unsigned long fd = 0;
    const auto r2 = std::from_chars(arg.data(), arg.data() + arg.size(), fd, 16);
    if (r2.ec != std::errc() || fd > unsigned(INT_MAX))
        return -1;
    return int(fd);
}

namespace {

// Interrupts each DPDK telemetry thread blocked in read() or write() on one of `fds` (read from
// /proc/self/task/TID/syscall), so that the call restarts with the timeout just set. Only those:
// a thread blocked with a finite timeout already would not restart but fail (EINTR), and DPDK
// would close a connection nobody asked to close.
void wake_threads_blocked_on(const std::vector<int>& fds)
{
    DIR* dir = opendir("/proc/self/task");
    if (dir == nullptr)
        return;
    const pid_t pid = getpid();
    const std::string_view prefix = kThreadPrefix;
    while (const dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.')
            continue;
        const std::string task = std::string("/proc/self/task/") + e->d_name;
        if (!read_small(task + "/comm").starts_with(prefix))
            continue;
        const int fd = TelemetryGuard::blocked_fd(read_small(task + "/syscall"));
        if (fd >= 0 && std::find(fds.begin(), fds.end(), fd) != fds.end())
            syscall(SYS_tgkill, pid, std::atoi(e->d_name), TelemetryGuard::wake_signal());
    }
    closedir(dir);
}

} // namespace

int TelemetryGuard::wake_signal() noexcept
{
    return SIGRTMIN;
}

TelemetryGuard::TelemetryGuard(std::string socket_path) : TelemetryGuard(std::move(socket_path), Limits{}) {}

TelemetryGuard::TelemetryGuard(std::string socket_path, Limits limits) : _path(std::move(socket_path)), _limits(limits)
{
    struct sigaction sa {};
    sa.sa_handler = on_wake;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(wake_signal(), &sa, nullptr);
}

unsigned TelemetryGuard::scan() noexcept
{
    try {
        const std::vector<Connection> open = connections_to(_path);
        const bool pressure = open.size() >= _limits.pressure;
        if (pressure != _pressure)
            log::write(RTE_LOG_INFO, log::Part::telemetry,
                       pressure ? "flowcop: telemetry: %zu connections open (DPDK serves 10): each is closed after "
                                  "%u ms without a request"
                                : "flowcop: telemetry: %zu connections open: no time limit again (was %u ms)",
                       open.size(), _limits.pressure_idle_ms);
        _pressure = pressure;
        const unsigned limit = pressure ? _limits.pressure_idle_ms : 0; // 0: none, as DPDK has it
        std::map<ino_t, unsigned> now;
        std::vector<int> to_wake;
        for (const Connection& c : open) {
            const auto it = _limited.find(c.inode);
            if (it == _limited.end())
                ++_seen;
            const unsigned before = it == _limited.end() ? 0 : it->second;
            if (before != limit && !set_timeouts(c.fd, limit)) {
                now.emplace(c.inode, before);
                continue;
            }
            now.emplace(c.inode, limit);
            // A call waiting with no time limit, woken, restarts with the new one. The guard never
            // wakes a call that already waits with a limit: it would fail (EINTR) and DPDK would
            // close the connection; when pressure ends, a wait in progress keeps its limit.
            if (before == 0 && limit != 0)
                to_wake.push_back(c.fd);
        }
        _limited = std::move(now);
        if (!to_wake.empty())
            wake_threads_blocked_on(to_wake);
        return unsigned(open.size());
    } catch (...) {
        return 0; // out of memory: no change this scan
    }
}

} // namespace flowcop::app
