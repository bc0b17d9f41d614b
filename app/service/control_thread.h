// SPDX-License-Identifier: BSD-3-Clause
// Where threads that do not poll run: on EAL's control CPUs, never on a polling lcore's CPU.
//
// EAL computes one CPU set for its own control threads (interrupts, multi-process, telemetry): the
// CPUs of the process's affinity when rte_eal_init() ran, minus every lcore's CPU, or the main
// lcore's CPU when that leaves none (-l 0,1 on a 2-CPU machine). rte_ctrl_thread_create() starts a
// thread on that set. Every flowcop helper (housekeeping, the event writer, the exporter's HTTP
// threads, flowgen's generator) must run there: a thread created by a plain std::thread or by a
// library (civetweb) inherits its creator's affinity, and the main thread is pinned to the main
// lcore, which busy-polls RX.
//
// ControlThread runs one function on such a thread and joins it on destruction (or join()).
// on_control_cpus() runs setup code there and waits for it, so that the threads a library creates
// inside it inherit the control set instead of the caller's. Both need EAL initialised; both are
// control-plane calls (never from a worker lcore). Errors: nullptr / false and one sentence in
// `error` (the thread could not be created); nothing has run then.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <pthread.h>
#include <string>

namespace flowcop::app {

class ControlThread {
public:
    // name: at most 15 characters (the kernel's comm), shown by top -H and /proc/PID/task/*/comm.
    static std::unique_ptr<ControlThread> start(const std::string& name, std::function<void()> body,
                                                std::string& error);
    ~ControlThread(); // join()
    void join() noexcept;
    ControlThread(const ControlThread&) = delete;
    ControlThread& operator=(const ControlThread&) = delete;

private:
    ControlThread() = default;
    friend bool on_control_cpus(const std::string&, const std::function<void()>&, std::string&);
    static void* trampoline(void* self) noexcept;
    std::function<void()> _body;
    std::exception_ptr _thrown; // what body threw, for on_control_cpus (a long-lived body must not throw)
    pthread_t _thread{};
    bool _joinable = false;
};

// Runs body on a temporary control thread named `name` and returns once it has finished; an
// exception body throws is rethrown here.
bool on_control_cpus(const std::string& name, const std::function<void()>& body, std::string& error);

} // namespace flowcop::app
