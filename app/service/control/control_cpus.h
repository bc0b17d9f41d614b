// SPDX-License-Identifier: BSD-3-Clause
// Where threads that do not poll run: on the CPUs DPDK gives its own control threads.
//
// EAL computes that set at rte_eal_init() (the CPUs of the process's start-up affinity that no lcore
// uses, or the main lcore's when every CPU polls) and applies it in rte_ctrl_thread_create(). Threads
// made with std::thread inherit the creating thread's affinity instead, and the service's main thread
// is the main lcore, which polls as worker 0: a writer or exporter thread made there would share a
// polling CPU. pin_to_control_cpus() moves the calling thread onto EAL's set.
//
// Threading: control_cpus() learns the set once, by starting one short-lived control thread (so it
// needs an initialised EAL) and caches it; later calls, from any thread, only copy it.
// Degraded behaviour: if the probe thread cannot be created or its affinity cannot be read, the set is
// empty and pin_to_control_cpus() returns false and leaves the thread where it is.
#pragma once

#include <sched.h>

#include <string>

namespace flowcop::app {

// EAL's control-thread CPU set (empty if it could not be learnt).
cpu_set_t control_cpus();

// control_cpus() as a CPU list ("1", "0-3,6"), or "unknown" if it could not be learnt.
std::string describe_control_cpus();

// Pins the calling thread to control_cpus(). False if the set is unknown or the kernel refused.
bool pin_to_control_cpus() noexcept;

} // namespace flowcop::app
