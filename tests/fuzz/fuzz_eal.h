// SPDX-License-Identifier: BSD-3-Clause
// EAL for fuzz targets and their replay runners: started once per process, without hugepages,
// PCI or telemetry, on one lcore, with no shared runtime files (--no-shconf) and a file prefix
// unique to the process, so libFuzzer's parallel jobs and meson's tests never share state.
// 256 MiB is room for the fuzz tables (a 256-flow table takes well under 1 MiB) many times over.
// Not thread-safe: call it from LLVMFuzzerInitialize or main before anything else.
#pragma once

namespace flowcop::fuzz {

// Returns false (after printing why) if EAL cannot start; later calls return the first result.
bool init_eal_once(const char* argv0);

} // namespace flowcop::fuzz
