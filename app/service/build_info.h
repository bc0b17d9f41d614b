// SPDX-License-Identifier: BSD-3-Clause
// What was built: flowcop's version (meson's project version), the git commit the build came from
// (`git describe --always --dirty`, "unknown" outside a git checkout, read when ninja runs), the DPDK
// version it was compiled against and the one it runs with (rte_version(), which needs no EAL).
// `flowcop --version`, the startup line and the flowcop_build_info gauge all read these.
#pragma once

#include <string>

namespace flowcop::app {

const char* build_version() noexcept;      // "0.1.0"
const char* build_commit() noexcept;       // "efb3437abcde" or "efb3437abcde-dirty" or "unknown"
const char* build_dpdk_version() noexcept; // the DPDK headers built against: "22.11.11"
std::string run_dpdk_version();            // the DPDK library running: "22.11.11"
// "flowcop 0.1.0 (commit efb3437abcde, DPDK 22.11.11)": one line, no newline.
std::string version_line();

} // namespace flowcop::app
