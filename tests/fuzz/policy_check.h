// SPDX-License-Identifier: BSD-3-Clause
// The policy fuzz target's body: one input is a policy file's text. Checked against parse.h's and
// policy.h's contracts:
// - parse() returns (never throws, never crashes); a refusal is "fuzz.nft:L:C: expected ..."
//   with L and C positive, or the out-of-memory sentence, and an empty ruleset;
// - an accepted ruleset keeps the bounds (kMaxRules, kMaxSetElements, values in range);
// - the identities round-trip: the rules' identities, one per line, with the policy line, parse
//   again to the same identities (what counters.h's carry-over relies on);
// - compile() with a resolver that knows eth0 and eth1 succeeds unless a rule names another port;
// - for every state and family, and for a packet built to satisfy each of the first 64 rules,
//   verdict() equals a plain reading of the ruleset (first rule whose every match holds, else
//   the default) and verdict_examined() gives the same decision.
// Returns nullptr when every check holds, else what broke. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flowcop::fuzz {

const char* check_policy(const uint8_t* data, size_t size);

} // namespace flowcop::fuzz
