// SPDX-License-Identifier: BSD-3-Clause
// Private: the output file descriptor and a write loop that survives EINTR, short writes, EAGAIN and
// readers that stop reading. Used only by the writer thread (or, before start(), by nobody).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace flowcop::events::detail {

class Sink {
public:
    // Opens `path` for append/create ("-" = stdout, not owned). @return 0, or -errno with `error` set
    // to one sentence naming the path and strerror.
    static int open(const std::string& path, Sink& out, std::string& error) noexcept;
    Sink() noexcept = default;
    Sink(const Sink&) = delete;
    Sink& operator=(const Sink&) = delete;
    ~Sink();

    struct Result {
        size_t done; // bytes the kernel accepted, from the start of the buffer
        int err;     // 0 when done == len; else the errno that stopped us (ETIMEDOUT: stalled at shutdown)
    };
    // Writes [buf, buf+len). While `stopping` is false it waits for a slow reader as long as it takes;
    // once `stopping` is true it gives up after stall_ms without progress.
    Result write_all(const char* buf, size_t len, const std::atomic<bool>& stopping, unsigned stall_ms) noexcept;

private:
    int _fd = -1;
    bool _owned = false;
    bool _regular = false; // regular files never return EAGAIN and never wait for a reader
    bool _socket = false;  // sockets take MSG_DONTWAIT per call, so we need not touch the fd's flags
};

} // namespace flowcop::events::detail
