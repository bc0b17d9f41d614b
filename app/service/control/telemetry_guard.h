// SPDX-License-Identifier: BSD-3-Clause
// Keeps DPDK's telemetry socket open to new clients when others hold their connections idle.
//
// DPDK 22.11 serves at most 10 telemetry clients, each on a thread of its own blocked in read()
// with no time limit, and closes an 11th connection at once: ten clients that connect and send
// nothing lock every other client out for as long as they like. The guard lets DPDK run as it does
// while few clients are connected, and bounds idle time once connections pile up.
//
// scan() finds this process's connected sockets whose local address is the telemetry socket's path
// (getsockname(); the listener itself is skipped). While `pressure` (5) or more are open, each gets
// a receive and a send timeout of pressure_idle_ms (2 s; SO_RCVTIMEO, SO_SNDTIMEO): DPDK's read()
// then fails after that long without a request, or its write() of a reply the client does not
// read, and DPDK closes the connection and frees the slot. A thread already blocked when the
// timeout is set does not see it, so the guard interrupts the DPDK telemetry thread (named
// "telemetry-*") that /proc/self/task/TID/syscall shows blocked on that socket with one signal
// (wake_signal(), handled with SA_RESTART and doing nothing): a call waiting with no time limit
// restarts, and takes the new one. Below `pressure` the limits are removed again (a wait in
// progress keeps its limit). So a new client finds a slot within pressure_idle_ms + one scan
// (kScanIntervalMs) of the moment ten were taken; a client that sends requests more often than
// pressure_idle_ms and reads the replies is never cut. What is not bounded: a client that
// reconnects as soon as it is cut can keep taking slots back, and fewer than `pressure` idle
// connections are kept for as long as their clients like (only the socket's owner, root, can
// connect at all).
//
// Threading: scan() from one control thread (housekeeping), never a worker lcore; the constructor
// installs the signal handler. Cost per scan: one fstat() per open descriptor and a getsockname()
// per socket. Degraded behaviour: without /proc the guard finds nothing and does nothing; a socket
// is changed only if its address is the telemetry path when the guard reads it, and tracked by
// inode, so a descriptor closed and reused between scans is a new connection.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace flowcop::app {

class TelemetryGuard {
public:
    struct Limits {
        unsigned pressure = 5; // connections open, of DPDK's 10
        unsigned pressure_idle_ms = 2000;
    };
    static constexpr unsigned kScanIntervalMs = 250;
    static int wake_signal() noexcept; // SIGRTMIN: glibc leaves it to applications; DPDK uses none

    // socket_path: DPDK's dpdk_telemetry.v2 (rte_eal_get_runtime_dir() + "/dpdk_telemetry.v2").
    explicit TelemetryGuard(std::string socket_path);
    TelemetryGuard(std::string socket_path, Limits limits);

    // One scan; returns the number of connections now open.
    unsigned scan() noexcept;

    // /proc/self/task/TID/syscall's text -> the descriptor of a read() or write() in progress, or
    // -1 (another call, "running", malformed). Exposed for the unit tests.
    static int blocked_fd(std::string_view syscall_text) noexcept;

    // Observed since construction (read by the thread that scans).
    uint64_t connections_seen() const noexcept { return _seen; }
    bool under_pressure() const noexcept { return _pressure; }

private:
    std::string _path;
    Limits _limits;
    std::map<ino_t, unsigned> _limited; // socket inode -> the timeout set on it (ms, 0 = none)
    uint64_t _seen = 0;
    bool _pressure = false;
};

} // namespace flowcop::app
