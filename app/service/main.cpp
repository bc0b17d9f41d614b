// SPDX-License-Identifier: BSD-3-Clause
// flowcop [EAL options] -- [flowcop options]
//
// Exit codes: 0 clean stop; 1 runtime failure (EAL, ports, memory); 2 bad
// command line or configuration (one line on stderr naming the flag), a flowcop
// option before "--" included (the hint comes after EAL's usage text).
#include "build_info.h"
#include "log.h"
#include "service.h"
#include "start_errors.h"
#include <service/options/options.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include <signal.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <list>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The running service, for the signal handlers; nullptr before start() succeeded and after run().
std::atomic<flowcop::app::Service*> g_service{nullptr};
// A stop signal that arrived while EAL and the service were starting: run() then stops at once.
volatile std::sig_atomic_t g_stop_pending = 0;
static_assert(std::atomic<flowcop::app::Service*>::is_always_lock_free, "read in signal handlers");

void on_stop_signal(int)
{
    g_stop_pending = 1;
    if (flowcop::app::Service* s = g_service.load(std::memory_order_acquire))
        s->request_stop();
}

void on_reload_signal(int)
{
    if (flowcop::app::Service* s = g_service.load(std::memory_order_acquire))
        s->request_reopen();
}

// Every signal whose default action ends the process, except those a fault raises (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP: nothing can be trusted then) and SIGKILL: each stops
// flowcop in order (RX stops, flows end as "shutdown", events are flushed, the summary printed).
constexpr int kStopSignals[] = {SIGINT,    SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
                                SIGVTALRM, SIGPROF, SIGXCPU, SIGPWR,  SIGIO};

void set_handler(int sig, void (*handler)(int))
{
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    // Restart interrupted calls: DPDK's telemetry threads end a client's connection on a read()
    // that fails with EINTR.
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
}

void install_signal_handlers()
{
    for (int sig : kStopSignals)
        set_handler(sig, on_stop_signal);
    // SIGHUP reopens the events file (logrotate's convention); ignored until the service runs.
    set_handler(SIGHUP, on_reload_signal);
    // A closed stderr or events pipe, a file over RLIMIT_FSIZE: a failed write (counted), not death.
    set_handler(SIGPIPE, SIG_IGN);
    set_handler(SIGXFSZ, SIG_IGN);
}

void restore_stop_signals()
{
    // The teardown after the summary: a second signal ends the process at once.
    for (int sig : kStopSignals)
        set_handler(sig, SIG_DFL);
}

// --help and --version must work without EAL (no hugepages, no root): as the first argument or
// anywhere after "--".
bool wants(int argc, char** argv, const char* long_name, const char* short_name)
{
    bool after = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0)
            after = true;
        else if ((after || i == 1) && (std::strcmp(argv[i], long_name) == 0 || std::strcmp(argv[i], short_name) == 0))
            return true;
    }
    return false;
}

// EAL's arguments, each --log-level value with the umbrella "flowcop" widened to every flowcop.*
// type (log.h). The rewritten strings live in `storage`; the pointers in the returned vector are
// what rte_eal_init() parses (and permutes).
std::vector<char*> eal_arguments(int count, char** argv, std::list<std::string>& storage)
{
    std::vector<char*> out(argv, argv + count);
    constexpr std::string_view kJoined = "--log-level=";
    for (int i = 1; i < count; ++i) {
        const std::string_view arg = argv[i];
        std::string widened;
        if (arg.starts_with(kJoined))
            widened =
                std::string(kJoined) + flowcop::app::log::umbrella_log_level(std::string(arg.substr(kJoined.size())));
        else if (arg == "--log-level" && i + 1 < count)
            widened = flowcop::app::log::umbrella_log_level(argv[++i]);
        else
            continue;
        if (widened != out[i])
            out[i] = storage.emplace_back(std::move(widened)).data();
    }
    out.push_back(nullptr); // argv[argc], as getopt may expect
    return out;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace flowcop::app;
    if (wants(argc, argv, "--help", "-h")) {
        std::fputs(help_text(argv[0]).c_str(), stdout);
        return 0;
    }
    if (wants(argc, argv, "--version", "-V")) {
        std::printf("%s\n", version_line().c_str());
        return 0;
    }
    // Parse our own options first so a bad flag is reported before EAL takes the machine.
    int ours = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            ours = i;
            break;
        }
    std::vector<char*> own;
    own.push_back(argv[0]);
    for (int i = ours + 1; i < argc; ++i)
        own.push_back(argv[i]);
    const ParseOutcome parsed = parse_options(int(own.size()), own.data());
    if (parsed.kind == ParseOutcome::error) {
        std::fprintf(stderr, "%s\n", parsed.message.c_str());
        return 2;
    }

    install_signal_handlers();
    log::register_types(); // before EAL reads --log-level (log.h)
    std::list<std::string> widened_levels;
    std::vector<char*> eal_argv = eal_arguments(ours, argv, widened_levels);
    const int eal_args = rte_eal_init(ours, eal_argv.data());
    if (eal_args < 0) {
        const int err = rte_errno;
        // EAL prints its usage text on stdout: flush it so that our line is the last one printed.
        std::fflush(stdout);
        if (const std::string opt = misplaced_option(ours - 1, argv + 1); !opt.empty()) {
            std::fprintf(stderr,
                         "flowcop: %s is a flowcop option, and flowcop options go after '--': "
                         "flowcop [EAL options] -- [flowcop options]\n",
                         opt.c_str());
            return 2;
        }
        std::fprintf(stderr, "%s\n", eal_failure(ours - 1, argv + 1, err).c_str());
        return 1;
    }
    if (eal_args != ours - 1) {
        std::fprintf(stderr, "flowcop: unexpected argument '%s' before '--' (flowcop options go after '--')\n",
                     eal_argv[size_t(eal_args) + 1]);
        rte_eal_cleanup();
        return 2;
    }

    int rc;
    {
        Service service(parsed.options);
        const StartError e = service.start();
        if (e.exit_code != 0) {
            log::write(RTE_LOG_ERR, log::Part::service, "%s", e.message.c_str());
            rc = e.exit_code;
        } else {
            g_service.store(&service, std::memory_order_release);
            if (g_stop_pending)
                service.request_stop();
            rc = service.run();
            g_service.store(nullptr, std::memory_order_release);
            restore_stop_signals();
        }
    }
    rte_eal_cleanup();
    return rc;
}
