// SPDX-License-Identifier: BSD-3-Clause
// Contract: a Ruleset is what parse() (parse.h) read from a policy file, before compilation: the
// rules in file order, each a conjunction of matches, an action and an optional comment, and the
// default action of the final `policy` line. It is plain data with value semantics; building and
// copying it allocates, so it lives on the control plane only. compile() (policy.h) turns it into
// the per-lcore decision structure the data plane consults.
//
// Invariants parse() guarantees: every value is in range (ports 0-65535, VLAN 0-4095, protocol
// 0-255, prefix lengths within the family), every set is non-empty and at most kMaxSetElements
// long, a rule names each selector at most once and never two that contradict (ip with ip6, tcp
// with udp, a meta l4proto other than the port selector's protocol).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::policy {

enum class Action : uint8_t { accept, drop };

// netfilter's conntrack states as policy.md defines them for flowcop, one bit each.
enum class State : uint8_t { new_, established, related, invalid, untracked };
inline constexpr unsigned kStateCount = 5;
inline constexpr uint8_t state_bit(State s) noexcept
{
    return static_cast<uint8_t>(1u << static_cast<unsigned>(s));
}
inline constexpr uint8_t kAllStates = (1u << kStateCount) - 1;

// Bounds that keep parsing and compiling linear and small whatever the input.
inline constexpr size_t kMaxFileBytes = 1u << 20; // a policy file is text an operator writes
inline constexpr size_t kMaxRules = 4096;         // rule indexes fit uint16_t with room for the default
inline constexpr size_t kMaxSetElements = 1024;   // per anonymous set
inline constexpr size_t kMaxTokenBytes = 256;     // a word, a number, an address or a quoted string
inline constexpr size_t kMaxCommentBytes = 128;   // nft's own limit for rule comments

// An address prefix, held as flowcop holds addresses (lib/packet/flow_key.h): 16 bytes, IPv4 in
// the IPv4-mapped form with its length counted from bit 0 of that form (10.0.0.0/8 is
// ::ffff:10.0.0.0/104). Host bits beyond the length are zero.
struct Prefix {
    std::array<uint8_t, 16> addr{};
    uint8_t length = 0; // 0-128 over the 16-byte form
};

struct PortRange {
    uint16_t lo = 0;
    uint16_t hi = 0; // lo <= hi; a single port has lo == hi
};

enum class Family : uint8_t { any, ipv4, ipv6 };

struct Rule {
    // Which selectors the rule names; an absent one matches everything.
    uint8_t states = kAllStates; // ct state set (kAllStates: no ct state match)
    Family family = Family::any; // set by ip/ip6 saddr/daddr
    std::vector<Prefix> saddr;   // empty: no saddr match
    std::vector<Prefix> daddr;
    int proto = -1;               // meta l4proto, or implied by tcp/udp sport/dport; -1: any
    std::vector<PortRange> sport; // empty: no sport match (non-empty implies proto)
    std::vector<PortRange> dport;
    std::string iif;       // as written (a port id in decimal, or a name); empty: any
    unsigned iif_line = 0; // where its value is, for compile()'s error when no port has that name
    unsigned iif_column = 0;
    int vlan = -1; // vlan id, -1: any
    int zone = -1; // ct zone, -1: any
    Action action = Action::accept;
    std::string comment;
    // The rule's identity across reloads: its tokens as written, one space apart, without the
    // comment "..." clause and without # comments (policy.md, "Rule identity").
    std::string identity;
    unsigned line = 0; // 1-based line of its first token, for listings and errors
};

struct Ruleset {
    std::vector<Rule> rules;
    Action default_action = Action::accept; // `policy accept` when the file has no policy line
};

} // namespace flowcop::policy
