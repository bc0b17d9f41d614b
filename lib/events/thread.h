// SPDX-License-Identifier: BSD-3-Clause
// Consumer threads of the event stream (the JSON writer, the IPFIX exporter) are made here, the one
// way: every signal blocked, so the thread never runs a signal handler and a write to a closed pipe or
// socket returns EPIPE instead of raising SIGPIPE; then `on_start` (the service pins the thread to
// DPDK's control-thread CPUs there), then `body`. Throws std::system_error if the thread cannot be
// created, as std::thread does (setup time only).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <functional>
#include <thread>
#include <utility>

namespace flowcop::events {

template <typename F>
std::thread spawn_consumer_thread(const std::function<void()>& on_start, F body)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct Restore {
        sigset_t* old;
        ~Restore() { pthread_sigmask(SIG_SETMASK, old, nullptr); }
    } restore{&old};
    // The new thread inherits the blocked mask.
    return std::thread([on_start, body = std::move(body)]() mutable {
        if (on_start)
            on_start();
        body();
    });
}

} // namespace flowcop::events
