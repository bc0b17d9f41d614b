// SPDX-License-Identifier: BSD-3-Clause
// flowcop [EAL options] -- [flowcop options]
//
// Exit codes: 0 clean stop; 1 runtime failure (EAL, ports, memory); 2 bad
// command line or configuration (one line on stderr naming the flag).
#include "options.h"
#include "service.h"

#include <rte_eal.h>
#include <rte_errno.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

flowcop::app::Service* g_service = nullptr;

void on_signal(int)
{
    g_service->request_stop();
}

bool wants_help(int argc, char** argv)
{
    // --help must work without EAL (no hugepages, no root): look past "--".
    bool after = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0)
            after = true;
        else if ((after || i == 1) && (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0))
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace flowcop::app;
    if (wants_help(argc, argv)) {
        std::fputs(help_text(argv[0]).c_str(), stdout);
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

    const int eal_args = rte_eal_init(ours, argv);
    if (eal_args < 0) {
        std::fprintf(stderr, "flowcop: EAL initialisation failed: %s (see the EAL options before '--')\n",
                     rte_strerror(rte_errno));
        return 1;
    }
    if (eal_args != ours - 1) {
        std::fprintf(stderr, "flowcop: unexpected argument '%s' before '--' (flowcop options go after '--')\n",
                     argv[eal_args + 1]);
        rte_eal_cleanup();
        return 2;
    }

    int rc;
    {
        Service service(parsed.options);
        const StartError e = service.start();
        if (e.exit_code != 0) {
            std::fprintf(stderr, "%s\n", e.message.c_str());
            rc = e.exit_code;
        } else {
            g_service = &service;
            std::signal(SIGINT, on_signal);
            std::signal(SIGTERM, on_signal);
            rc = service.run();
            std::signal(SIGINT, SIG_DFL);
            std::signal(SIGTERM, SIG_DFL);
            g_service = nullptr;
        }
    }
    rte_eal_cleanup();
    return rc;
}
