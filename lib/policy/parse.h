// SPDX-License-Identifier: BSD-3-Clause
// Contract: parse() reads a policy file's text (policy.md gives the grammar: a subset of nftables'
// rule syntax) into a Ruleset. It accepts what nft accepts for that subset and refuses everything
// else. On error it returns ok == false and one message naming the first problem:
//   "<file>:<line>:<column>: expected <what> [after '<previous token>'], found <token>"
// with 1-based line and byte column of the offending token, e.g.
//   "policy.nft:3:14: expected a port number or range after 'dport', found 'ssh'".
// Never throws, never crashes, on any bytes: a file over kMaxFileBytes, a word over
// kMaxTokenBytes, more than kMaxRules rules or kMaxSetElements elements in one set are errors;
// sets do not nest, so nothing recurses. Time and memory are linear in the text's length.
// Pure and thread-safe (it allocates: control plane only).
#pragma once

#include <policy/ruleset.h>

#include <string>
#include <string_view>

namespace flowcop::policy {

struct ParseResult {
    bool ok = false;
    Ruleset ruleset;   // valid when ok
    std::string error; // when !ok: the message above
};

// `file` is only used in the message (pass the path as the operator gave it).
ParseResult parse(std::string_view text, std::string_view file) noexcept;

} // namespace flowcop::policy
