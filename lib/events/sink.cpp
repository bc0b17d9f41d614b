// SPDX-License-Identifier: BSD-3-Clause
#include "sink.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace flowcop::events::detail {
namespace {

uint64_t now_ms() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000u + static_cast<uint64_t>(ts.tv_nsec) / 1000000u;
}

// How long one poll() waits before re-checking the stop flag and the stall deadline.
constexpr int kPollSliceMs = 50;

} // namespace

int Sink::open(const std::string& path, Sink& out, std::string& error) noexcept
{
    int fd = STDOUT_FILENO;
    if (path != "-") {
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            const int e = errno;
            error = "cannot open events file '" + path + "' for append: " + std::strerror(e);
            return -e;
        }
        out._owned = true;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        error = "cannot use events output '" + path + "': " + std::strerror(e);
        if (out._owned)
            ::close(fd);
        out._owned = false;
        return -e;
    }
    out._fd = fd;
    out._regular = S_ISREG(st.st_mode);
    out._socket = S_ISSOCK(st.st_mode);
    return 0;
}

Sink::~Sink()
{
    if (_owned)
        ::close(_fd);
}

Sink::Result Sink::write_all(const char* buf, size_t len, const std::atomic<bool>& stopping, unsigned stall_ms) noexcept
{
    size_t done = 0;
    uint64_t last_progress = now_ms();
    bool saw_stop = false;
    while (done < len) {
        if (!_regular) {
            // Wait until the reader makes room, so the write below cannot block past a shutdown.
            pollfd p{_fd, POLLOUT, 0};
            const int r = ::poll(&p, 1, kPollSliceMs);
            if (r < 0 && errno != EINTR)
                return {done, errno};
            if (r <= 0) {
                // The stall clock starts at the later of the last progress and the stop request, so a
                // reader that was idle before shutdown still gets the full stall_ms to drain.
                if (stopping.load(std::memory_order_acquire)) {
                    if (!saw_stop)
                        last_progress = now_ms();
                    saw_stop = true;
                    if (now_ms() - last_progress >= stall_ms)
                        return {done, ETIMEDOUT};
                }
                continue;
            }
            // POLLERR/POLLHUP: fall through, write() reports the real errno (EPIPE, EIO).
        }
        // After POLLOUT a pipe has at least one free page, so a write of at most PIPE_BUF cannot block.
        const size_t chunk = _regular ? len - done : std::min<size_t>(len - done, PIPE_BUF);
        const ssize_t n =
            _socket ? ::send(_fd, buf + done, chunk, MSG_DONTWAIT | MSG_NOSIGNAL) : ::write(_fd, buf + done, chunk);
        if (n > 0) {
            done += static_cast<size_t>(n);
            last_progress = now_ms();
            continue;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        return {done, n < 0 ? errno : EIO}; // write() == 0 for len > 0 has no errno; treat as I/O error
    }
    return {done, 0};
}

} // namespace flowcop::events::detail
