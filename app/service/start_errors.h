// SPDX-License-Identifier: BSD-3-Clause
// The sentences flowcop prints when EAL refuses to start, so an operator reads a cause, not
// "Success" (EAL returns -1 without setting rte_errno for several failures, a taken file prefix
// among them).
//
// eal_failure() builds the one line for a failed rte_eal_init(): rte_errno's text when EAL set it;
// when it did not, the cause flowcop can find itself (another process holding the file prefix's
// config lock: the prefix, the lock file, the holder's pid and what to do), else a pointer to EAL's
// own lines above. misplaced_option() tells a flowcop option given before "--" (a forgotten "--"),
// which EAL rejects with its usage text: main() prints its hint last, after that text.
// Pure apart from reading the runtime directory and one fcntl(F_GETLK) on the lock file; called
// once, from main(), after rte_eal_init() failed.
#pragma once

#include <string>

namespace flowcop::app {

// args: EAL's part of the command line (argv[1..n), before "--"); rte_err: rte_errno after the
// failure. One line, "flowcop: EAL initialisation failed: ...", without a newline.
std::string eal_failure(int n, char** args, int rte_err);

// The first argument of EAL's part that is a flowcop option ("--metrics-addr", "--events=x"), or "".
std::string misplaced_option(int n, char** args);

// The runtime directory EAL uses for a file prefix: /var/run/dpdk/<prefix> for root, else
// $XDG_RUNTIME_DIR/dpdk/<prefix> (or /tmp/dpdk/<prefix>). The prefix is --file-prefix's, or "rte".
std::string eal_runtime_dir(const std::string& prefix);
// --file-prefix=X / --file-prefix X in EAL's part, or "rte" (EAL's default).
std::string eal_file_prefix(int n, char** args);

} // namespace flowcop::app
