// SPDX-License-Identifier: BSD-3-Clause
// Contract: a Policy is a Ruleset compiled into the decision structure the data plane consults once
// per packet. compile() builds it on the control plane (it allocates); verdict() is the packet path:
// noexcept, no allocation, no lock, no string, no list: it reads flat arrays of fixed-size records.
//
// Ownership and threads: a Policy is immutable after compile() and copyable; each lcore holds its
// own copy (the service copies it per lcore), so verdict() touches only that lcore's memory. A
// reload compiles a new Policy and swaps it in between bursts on each lcore (the worker's mailbox,
// app/service/dataplane/commands.h); counters.h carries the counters of unchanged rules over.
//
// Decision: the index of the first rule that matches, in file order (first match wins), or
// rule_count() for the default `policy` action, and that action.
//
// The established fast path (by construction, and checked by the rules_examined() test seam): for
// each conntrack state, compile() finds the first rule whose `ct state` set contains it. When that
// rule has no other match, every packet in that state is decided by it, so verdict() answers from a
// per-state table indexed by the packet's state byte, before any rule is examined. A policy that
// begins `ct state established,related accept` therefore decides an established packet with one
// byte test and one table load. Rules whose state set excludes the packet's state are skipped by
// one bit test, so the walk starts at the first rule that can apply.
//
// Families (lib/packet/flow_key.h holds IPv4 as IPv4-mapped IPv6): PacketView::family says what
// the packet was on the wire. A rule with an `ip` match applies to IPv4 packets only and one with
// `ip6` to IPv6 packets only, whatever the address bytes, so an IPv4 prefix never matches an IPv6
// packet carrying IPv4-mapped addresses, nor ::/0 an IPv4 packet. A non-IP frame (Family::any)
// matches no address, protocol or port match.
#pragma once

#include <policy/ruleset.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flowcop::policy {

// The facts the data plane already computed for one packet, as flowcop holds them.
struct PacketView {
    State state = State::untracked;
    Family family = Family::any; // the packet's own IP version; any for non-IP frames
    uint8_t proto = 0;           // the packet's own IP protocol (an ICMP error is ICMP, not the quoted one)
    uint16_t sport = 0;          // host byte order; meaningful for TCP and UDP
    uint16_t dport = 0;
    uint16_t port = 0;    // ingress port id
    uint16_t vlan = 0;    // outer VLAN ID; 0 when untagged (a priority-only tag keys like untagged)
    uint16_t zone = 0;    // conntrack zone of the ingress port
    uint8_t src[16] = {}; // the packet's source and destination (not the key's lo/hi), 16-byte form
    uint8_t dst[16] = {};
};

struct Decision {
    uint16_t rule = 0; // 0..rule_count()-1, or rule_count() for the default
    Action action = Action::accept;
};

class Policy;

// Maps an `iif` name to a port id; nullopt when no port has that name.
using PortResolver = std::function<std::optional<uint16_t>(std::string_view name)>;

struct CompileResult {
    bool ok = false;
    std::string error; // "<file>:<line>:<column>: expected ..., found ..." (an iif name no port has)
};

class Policy {
public:
    // The empty policy: no rules, default accept (what flowcop does without --policy).
    Policy() = default;

    // Compiles `rules` into `out`. An `iif` value of digits is a port id; any other is resolved
    // through `resolve` (no resolver: every name is an error). On error `out` is unchanged.
    // Never throws (allocation failure is an error).
    static CompileResult compile(const Ruleset& rules, std::string_view file, const PortResolver& resolve,
                                 Policy& out) noexcept;

    Decision verdict(const PacketView& v) const noexcept
    {
        const Shortcut& s = _by_state[static_cast<uint8_t>(v.state)];
        if (s.decided)
            return s.decision;
        return walk(v, s.start, nullptr);
    }

    // The per-state table alone: the decision of every packet in state s when one rule (or the
    // default) decides the whole state, else nullptr (the caller builds a PacketView and calls
    // verdict()). One byte test and a load: what the data plane pays for an established packet
    // behind `ct state established,related accept`, without building a view.
    const Decision* decided(State s) const noexcept
    {
        const Shortcut& x = _by_state[static_cast<uint8_t>(s)];
        return x.decided ? &x.decision : nullptr;
    }

    // Test and benchmark seam: verdict() plus the number of rules whose matches were examined
    // (0 when the per-state table decided).
    Decision verdict_examined(const PacketView& v, unsigned& examined) const noexcept
    {
        examined = 0;
        const Shortcut& s = _by_state[static_cast<uint8_t>(v.state)];
        if (s.decided)
            return s.decision;
        return walk(v, s.start, &examined);
    }

    size_t rule_count() const noexcept { return _rules.size(); }
    Action default_action() const noexcept { return _default; }
    // Control plane (listings, metrics labels, counter carry-over); i < rule_count().
    Action action(size_t i) const noexcept { return _rules[i].action; }
    const std::string& identity(size_t i) const noexcept { return _text[i].identity; }
    const std::string& comment(size_t i) const noexcept { return _text[i].comment; }

private:
    // One rule as flat data: which matches it has, and where its prefixes and ranges are.
    struct Compiled {
        uint8_t states = kAllStates;
        Family family = Family::any;
        uint8_t need = 0; // kNeed* bits (policy.cpp)
        uint8_t proto = 0;
        uint16_t iif = 0;
        uint16_t vlan = 0;
        uint16_t zone = 0;
        Action action = Action::accept;
        uint32_t saddr = 0, daddr = 0, sport = 0, dport = 0; // first index in _nets / _ranges
        uint16_t n_saddr = 0, n_daddr = 0, n_sport = 0, n_dport = 0;
    };
    // A prefix as two masked 64-bit halves of the 16-byte address, in host order.
    struct Net {
        uint64_t hi, lo, mask_hi, mask_lo;
    };
    struct Shortcut {
        bool decided = true; // the empty policy decides every state by its default
        uint16_t start = 0;  // otherwise: the first rule that can match this state
        Decision decision;
    };
    struct Text {
        std::string identity, comment;
    };

    Decision walk(const PacketView& v, uint16_t start, unsigned* examined) const noexcept;
    static bool in_nets(const Net* nets, uint16_t n, const uint8_t addr[16]) noexcept;
    static bool in_ranges(const PortRange* ranges, uint16_t n, uint16_t port) noexcept;

    std::array<Shortcut, kStateCount> _by_state{};
    std::vector<Compiled> _rules;
    std::vector<Net> _nets;
    std::vector<PortRange> _ranges;
    Action _default = Action::accept;
    std::vector<Text> _text; // off the packet path
};

} // namespace flowcop::policy
