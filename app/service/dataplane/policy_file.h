// SPDX-License-Identifier: BSD-3-Clause
// Contract: reads a --policy file and compiles it (lib/policy: parse.h, policy.h) into one Policy, the
// copy every worker then takes its own of. Control plane only (it allocates and reads a file); never
// throws. On failure `out` is unchanged and `error` is one line without a newline: the parser's or the
// compiler's "<file>:<line>:<column>: expected ..., found ...", or "<file>: <why it cannot be read>".
// `resolve` maps an `iif` port name to its id (the service asks DPDK).
#pragma once

#include <policy/policy.h>

#include <string>

namespace flowcop::app {

bool load_policy_file(const std::string& path, const policy::PortResolver& resolve, policy::Policy& out,
                      std::string& error) noexcept;

} // namespace flowcop::app
