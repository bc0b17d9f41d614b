// SPDX-License-Identifier: BSD-3-Clause
// The control socket's requests (ctl_server.h): one line of text, parsed and matched here.
//
// Grammar: VERB [KEY=VALUE ...], space-separated, at most kMaxRequestBytes. Verbs: list, count, delete,
// flush, get, update, stats, events. Keys (conntrack's filters, as flowcopctl passes them): proto=NAME|NUMBER,
// src=ADDR[/LEN], dst=ADDR[/LEN] (the originator's source and destination, IPv4 or IPv6, with an optional
// prefix length), sport=N, dport=N (the originator's ports), state=NAME (conntrack -L's spelling, any
// case: a TCP state, or UNREPLIED/REPLIED for the other protocols), vlan=OUTER[,INNER], zone=N, lcore=N,
// family=ipv4|ipv6 (conntrack's -f). A filter key given twice, an unknown key or verb, a value out
// of range and a key the verb does not take are errors.
//
// Families. Keys hold IPv4 addresses IPv4-mapped (flow_key.h), but a filter never crosses families, as in
// conntrack: an address typed as a dotted quad is an IPv4 prefix and matches IPv4 flows only; one typed as
// IPv6 matches IPv6 flows only, so ::/0, ::/8 or ::ffff:0:0/96 select no IPv4 flow. src= and dst= of two
// families, or one that contradicts family=, are an error (no flow could match). An exact address typed
// as IPv4-mapped IPv6 (::ffff:a.b.c.d) is refused where a whole address names a flow (get, update): the
// only flows keyed so are IPv4 ones, which is not what an IPv6 address asks for. `get` takes an exact tuple: src= and dst= as
// plain addresses and sport=, dport= required, proto= (default tcp), vlan=, zone=; it names one flow in
// either direction. `update` (conntrack -U) takes timeout=S (required, 1..kMaxTimeoutS seconds) and either
// get's whole tuple (one flow, either direction, one lookup per lcore) or list's filters (a walk: every
// matching flow): each one's deadline becomes now + S until its next packet. flush and stats take no keys.
// `events` follows the event stream live: kinds=new,update,destroy (any of them; default all three),
// buffer=BYTES (kMinFollowBuffer..kMaxFollowBuffer: output held for this follower before it loses
// events, conntrack -E's -b) and the filters above except zone and state, which events do not carry.
//
// Matching: `vlan=10` matches a flow whose outer VLAN ID is 10 (any inner one); `vlan=10,20` both IDs
// (a listing prints both, so what it shows selects exactly that flow); `vlan=0` untagged flows only.
//
// Pure functions, any thread, no EAL. Errors are one sentence quoting the bad part through reply_text().
#pragma once

#include <service/options/proto_names.h>

#include <conntrack/flow_snapshot.h>
#include <events/event.h>
#include <packet/flow_key.h>

#include <cstdint>
#include <string>

namespace flowcop::app {

inline constexpr size_t kMaxRequestBytes = 1024;
inline constexpr size_t kMinFollowBuffer = 64 * 1024, kMaxFollowBuffer = 64 * 1024 * 1024;

// The kinds flowcopctl -E can follow: conntrack's NEW, UPDATE and DESTROY (interim reports are IPFIX's).
inline constexpr events::KindMask kFollowKinds = events::kind_bit(events::Kind::created) |
                                                 events::kind_bit(events::Kind::updated) |
                                                 events::kind_bit(events::Kind::destroyed);

// policy: --policy's rules and counters (flowcopctl -P); policy_reload: re-read the file (--policy-reload).
enum class CtlVerb : uint8_t { list, count, remove, flush, get, update, stats, events, policy, policy_reload };

// An address prefix over the 16-byte key form (IPv4 as IPv4-mapped: a.b.c.d/8 is ::ffff:a.0.0.0/104),
// with the family it was typed in: it matches flows of that family only.
struct AddrPrefix {
    uint8_t addr[16] = {};
    unsigned bits = 0; // leading bits that must match
    bool ipv4 = false; // typed as a dotted quad
};

struct CtlFilter {
    bool has_proto = false, has_src = false, has_dst = false, has_sport = false, has_dport = false;
    bool has_state = false, has_vlan = false, has_vlan_inner = false, has_zone = false, has_lcore = false;
    bool has_family = false;
    bool family_ipv4 = false; // family=ipv4 (else ipv6), when has_family
    uint8_t proto = 0;
    AddrPrefix src, dst;
    uint16_t sport = 0, dport = 0;
    std::string state; // upper case, as conntrack -L prints it
    uint16_t vlan_outer = 0, vlan_inner = 0;
    uint16_t zone = 0;
    unsigned lcore = 0;
};

struct CtlRequest {
    CtlVerb verb = CtlVerb::list;
    CtlFilter filter;
    events::KindMask kinds = kFollowKinds; // events: the kinds to follow
    packet::FlowKey key{};                 // get, update: the canonical key of the tuple
    uint32_t timeout_s = 0;                // update: the flow's new timeout
    bool walk = false;                     // update: by filters (a walk), not by the whole tuple (`key`)
    size_t buffer_bytes = 0;               // events: buffer=BYTES, the output held for it (0: the server's)
};

// Parses one request line (without its newline). Returns "" or one sentence.
std::string parse_ctl_request(const std::string& line, CtlRequest& out);

// What a filter reads of a listed flow or a followed event, in the originator's direction.
struct CtlCandidate {
    unsigned lcore = 0;
    uint8_t proto = 0;
    uint16_t zone = 0; // events carry none: 0 (an events request refuses zone=)
    uint16_t vlan_outer = 0, vlan_inner = 0;
    const char* state = nullptr; // conntrack -L's spelling; nullptr unknown (an events request refuses state=)
    uint8_t src[16] = {}, dst[16] = {};
    uint16_t sport = 0, dport = 0;
    bool ipv4 = false; // both addresses IPv4-mapped: an IPv4 flow (packet::key_is_ipv4)

    static CtlCandidate of(unsigned lcore, const conntrack::FlowSnapshot& f) noexcept;
    // An event's kind is checked against CtlRequest::kinds by the caller.
    static CtlCandidate of(const events::Event& e) noexcept;
};

// True when `c` passes every filter that is set; a state filter never passes an unknown state, an address
// or family filter never a flow of the other family.
bool ctl_matches(const CtlFilter& filter, const CtlCandidate& c) noexcept;

} // namespace flowcop::app
