// SPDX-License-Identifier: BSD-3-Clause
// Oracle: every protocol's burst model (see track_oracle.h, "every protocol"): UDP, ICMP/ICMPv6
// queries and other protocols stepped by protostate's rules, attributed and held fragments, and
// ICMP errors, replayed packet by packet on the flows as the previous snapshot had them.
#include "track_oracle.h"

#include <protostate/proto_state.h>

#include <map>

namespace flowcop::fuzz {

using conntrack::FlowSnapshot;
using conntrack::Proto;

namespace {

// One key's flow as the model sees it through the burst.
struct Modelled {
    bool live = false;      // a flow with this key is in the table (possibly past its deadline)
    bool resolvable = true; // no TCP segment of this key in the burst: lib/tcpstate's rules are not replayed here
    FlowSnapshot f{};
};

protostate::Family family_of_verdict(packet::Verdict v)
{
    return v == packet::Verdict::udp    ? protostate::Family::udp
           : v == packet::Verdict::icmp ? protostate::Family::icmp
                                        : protostate::Family::generic;
}

void add_frames(FlowSnapshot& f, bool src_is_lo, uint64_t packets, uint64_t bytes)
{
    const unsigned d = f.orig_is_lo == src_is_lo ? 0 : 1;
    f.packets[d] += packets;
    f.bytes[d] += bytes;
}

size_t pi(Proto p)
{
    return static_cast<size_t>(p);
}

} // namespace

void Oracle::check_other(const packet::Packet* const* pkts, const uint64_t* times, unsigned n,
                         const fragattr::Held* held, const Flows& s1, bool exact)
{
    std::map<packet::FlowKey, Modelled, KeyLess> model;
    auto at = [&](const packet::FlowKey& k) -> Modelled& {
        auto [it, fresh] = model.try_emplace(k);
        if (fresh)
            if (const FlowSnapshot* f = _flows.find(k)) {
                it->second.live = true;
                it->second.f = *f;
            }
        return it->second;
    };
    // A packet that finds its flow past its deadline (and not RST- or kill-marked) ends it first.
    auto end_if_due = [&](Modelled& k, uint64_t t) {
        if (k.live && !k.f.reset && !k.f.killed && t >= deadline(k.f))
            k.live = false;
    };
    for (unsigned i = 0; i < n; ++i)
        if (pkts[i]->verdict == packet::Verdict::tcp)
            at(pkts[i]->key).resolvable = false;

    struct PerProto {
        uint64_t packets = 0, tracked = 0, no_flow = 0, created = 0;
    } per[conntrack::kProtoCount];
    uint64_t errors = 0, related = 0, unknown = 0;
    uint64_t frag_fed = 0, frag_tracked = 0, frag_no_flow = 0, frag_late = 0;
    bool counters_exact = exact;
    for (unsigned i = 0; i < n; ++i) {
        const packet::Packet& p = *pkts[i];
        const uint64_t t = times[i];
        switch (p.verdict) {
        case packet::Verdict::udp:
        case packet::Verdict::icmp:
        case packet::Verdict::other_l4: {
            const Proto proto = conntrack::proto_of_verdict(p.verdict);
            PerProto& c = per[pi(proto)];
            ++c.packets;
            Modelled& k = at(p.key);
            end_if_due(k, t);
            if (k.live) {
                const bool from_orig = k.f.orig_is_lo == p.src_is_lo;
                add_frames(k.f, p.src_is_lo, 1, p.ip_len);
                k.f.last_seen_ns = t;
                protostate::step(k.f.other, from_orig ? protostate::Dir::orig : protostate::Dir::reply,
                                 t - k.f.first_seen_ns);
                k.f.assured = k.f.other.assured();
                ++c.tracked;
            } else if (p.verdict == packet::Verdict::icmp && !packet::icmp_is_request(p)) {
                ++c.no_flow; // only a request starts an ICMP flow
            } else {
                FlowSnapshot f{};
                f.key = p.key;
                f.orig_is_lo = p.src_is_lo;
                f.proto = proto;
                f.other = protostate::initial(family_of_verdict(p.verdict));
                f.first_seen_ns = f.last_seen_ns = t;
                f.packets[0] = 1;
                f.bytes[0] = p.ip_len;
                k.f = f;
                k.live = true;
                ++c.tracked;
                ++c.created;
            }
            break;
        }
        case packet::Verdict::fragment: {
            if (!(p.extra.frag_flags & packet::kFragAttributed))
                break; // held or unattributed: the table only counts its verdict
            ++frag_fed;
            Modelled& k = at(p.key);
            if (!k.resolvable) {
                counters_exact = false;
                break;
            }
            end_if_due(k, t);
            if (k.live) {
                add_frames(k.f, p.src_is_lo, 1, p.ip_len);
                k.f.last_seen_ns = t;
                ++frag_tracked;
            } else {
                ++frag_no_flow;
            }
            break;
        }
        case packet::Verdict::icmp_error: {
            ++errors;
            Modelled& k = at(p.key);
            if (!k.resolvable) {
                counters_exact = false;
                break;
            }
            if (k.live) {
                ++k.f.related;
                ++related;
            } else {
                ++unknown;
            }
            break;
        }
        default: break;
        }
    }
    // What the attributor held for a first fragment joins its flow after the burst.
    uint64_t held_fed = 0;
    for (unsigned i = 0; held != nullptr && i < n; ++i) {
        if (held[i].packets == 0)
            continue;
        held_fed += held[i].packets;
        Modelled& k = at(pkts[i]->key);
        if (!k.resolvable) {
            counters_exact = false;
            continue;
        }
        if (k.live) {
            add_frames(k.f, pkts[i]->src_is_lo, held[i].packets, held[i].bytes);
            frag_late += held[i].packets;
        } else {
            frag_no_flow += held[i].packets;
        }
    }

    // Each packet is counted exactly once, whatever was evicted or refused.
    const conntrack::Counters& a = _c;
    const conntrack::Counters& b = _c1;
    for (Proto proto : {Proto::udp, Proto::icmp, Proto::other}) {
        const size_t x = pi(proto);
        if ((b.proto_tracked[x] - a.proto_tracked[x]) + (b.proto_no_flow[x] - a.proto_no_flow[x]) +
                (b.proto_table_full[x] - a.proto_table_full[x]) !=
            per[x].packets)
            fail(std::string(conntrack::proto_name(proto)) + " packets tracked + no_flow + table_full != the burst's");
        if (counters_exact && (b.proto_tracked[x] - a.proto_tracked[x] != per[x].tracked ||
                               b.proto_no_flow[x] - a.proto_no_flow[x] != per[x].no_flow ||
                               b.flows_created_by_proto[x] - a.flows_created_by_proto[x] != per[x].created))
            fail(std::string(conntrack::proto_name(proto)) + " packets tracked " +
                 std::to_string(b.proto_tracked[x] - a.proto_tracked[x]) + ", no_flow " +
                 std::to_string(b.proto_no_flow[x] - a.proto_no_flow[x]) + ", flows created " +
                 std::to_string(b.flows_created_by_proto[x] - a.flows_created_by_proto[x]) + " != the model's " +
                 std::to_string(per[x].tracked) + ", " + std::to_string(per[x].no_flow) + ", " +
                 std::to_string(per[x].created));
    }
    if ((b.icmp_related - a.icmp_related) + (b.icmp_related_unknown - a.icmp_related_unknown) != errors)
        fail("ICMP errors counted related + unknown != the burst's");
    if (counters_exact &&
        (b.icmp_related - a.icmp_related != related || b.icmp_related_unknown - a.icmp_related_unknown != unknown))
        fail("ICMP errors related to a flow " + std::to_string(b.icmp_related - a.icmp_related) + " != the model's " +
             std::to_string(related));
    const uint64_t frag_counted = (b.fragments_tracked - a.fragments_tracked) +
                                  (b.fragments_no_flow - a.fragments_no_flow) + (b.fragments_late - a.fragments_late);
    if (frag_counted != frag_fed + held_fed)
        fail("fragments counted tracked + no_flow + late " + std::to_string(frag_counted) +
             " != attributed and held frames " + std::to_string(frag_fed + held_fed));
    if (counters_exact &&
        (b.fragments_tracked - a.fragments_tracked != frag_tracked ||
         b.fragments_no_flow - a.fragments_no_flow != frag_no_flow || b.fragments_late - a.fragments_late != frag_late))
        fail("fragments tracked/no_flow/late " + std::to_string(b.fragments_tracked - a.fragments_tracked) + "/" +
             std::to_string(b.fragments_no_flow - a.fragments_no_flow) + "/" +
             std::to_string(b.fragments_late - a.fragments_late) + " != the model's " + std::to_string(frag_tracked) +
             "/" + std::to_string(frag_no_flow) + "/" + std::to_string(frag_late));
    if (!exact)
        return; // an eviction or a refusal the model cannot place: only the sums above hold

    for (const auto& [key, k] : model) {
        if (!k.resolvable)
            continue;
        const FlowSnapshot* g = s1.find(key);
        if (k.live != (g != nullptr)) {
            fail(std::string(k.live ? "a flow the model has is not in the table"
                                    : "a flow is in the table that the model does not have") +
                 " (" + conntrack::proto_name(k.live ? k.f.proto : g->proto) + ")");
            continue;
        }
        if (!g)
            continue;
        const FlowSnapshot& f = k.f;
        const bool same = g->proto == f.proto && g->orig_is_lo == f.orig_is_lo && g->first_seen_ns == f.first_seen_ns &&
                          g->last_seen_ns == f.last_seen_ns && g->packets[0] == f.packets[0] &&
                          g->packets[1] == f.packets[1] && g->bytes[0] == f.bytes[0] && g->bytes[1] == f.bytes[1] &&
                          g->related == f.related && g->assured == f.assured &&
                          (f.proto == Proto::tcp ? g->state == f.state : g->other == f.other);
        if (!same)
            fail(std::string("a ") + conntrack::proto_name(f.proto) + " flow differs from the model: packets " +
                 std::to_string(g->packets[0]) + "/" + std::to_string(g->packets[1]) + " want " +
                 std::to_string(f.packets[0]) + "/" + std::to_string(f.packets[1]) + ", state " +
                 conntrack::state_name(*g) + (g->assured ? " assured" : "") + " want " + conntrack::state_name(f) +
                 (f.assured ? " assured" : "") + ", related " + std::to_string(g->related) + " want " +
                 std::to_string(f.related));
    }
}

} // namespace flowcop::fuzz
