// SPDX-License-Identifier: BSD-3-Clause
// The worker's half of the rss plan's handoff (worker.h, port_plan.h): the packets a port delivers to a
// worker that does not own their flow, because a NIC hashes them on other fields than the flow's; and the
// handoff plan's fragments, which the worker polling their port attributes for the same reason.
//
// - An ICMP error is hashed on its outer addresses (the router or host that sent it, and the quoted
//   packet's source), not on the flow it quotes. Its owner is the quoted flow's (rss_owner.h), where
//   it is counted RELATED on the flow (or unknown_flow if that worker has no such flow either).
// - A fragment is hashed on its addresses only (a later fragment has no ports; NICs hash the first
//   one alike), so all fragments of a datagram reach one worker, F, which need not own the flow. F
//   attributes them (lib/fragattr: it sees the first fragment and every later one, in any order),
//   then hands each attributed one to the flow's owner: the first fragment, marked with the frames
//   and bytes of later fragments that came before it (held as counts on F), and each later fragment
//   marked with the ports the attribution gave it. The owner tracks them from the mark, without an
//   attributor of its own, so the flow's packets and bytes are the datagram's whatever the order.
//   A later fragment F cannot attribute (its first has not come, or never does) stays on F, held or
//   counted unattributed, as under one lcore. Fragments of a flow keyed without ports (GRE, ESP,
//   ICMP) are hashed like the flow's other packets and never leave F.
// The mark is an mbuf dynamic field (registered at start), written by F for every packet it hands
// over here and read only by the owner of that ring, so no stale value is ever read.
// Every other packet stays where the port delivered it: no handoff, no mark.
//
// Under the handoff plan every packet goes to its flow's owner (flow_owner.h over its key), and a port's
// fragments all reach the worker that polls it, F. A later fragment's key has no ports, so its owner by
// key is its address pair's, the flow's only by chance. So a burst that holds a fragment comes here too:
// F attributes its fragments before the handoff, so an attributed later fragment's key has its flow's
// ports and hand_off() sends it to the flow's owner, marked as above (the first fragment with what was held
// for it); a later fragment F cannot attribute stays on F. The owner reads the marks of the fragments
// (only theirs: other packets of a ring's burst carry none) and tracks them without attributing again.
#include "worker.h"

#include <stats/relaxed.h>

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

namespace flowcop::app {

using stats::bump;

namespace {

// What the worker that attributed a handed-off fragment found (an ICMP error carries kind none).
struct HandoffMark {
    enum Kind : uint8_t { none, first_fragment, later_fragment };
    uint8_t kind;
    bool src_is_lo;
    uint16_t port_lo, port_hi, sport, dport; // later_fragment: the ports its first fragment gave it
    uint32_t held_packets;                   // first_fragment: later fragments that came before it
    uint64_t held_bytes;
};

HandoffMark& mark_of(rte_mbuf* m, int offset) noexcept
{
    return *RTE_MBUF_DYNFIELD(m, offset, HandoffMark*);
}

// What an attributed fragment's owner needs: an attributed later fragment, its flow's ports; a first
// fragment whose ports parsed, the frames and bytes held for it. Kind none for anything else.
HandoffMark fragment_mark(const packet::Packet& p, const fragattr::Held& held) noexcept
{
    HandoffMark mark{};
    if (p.verdict == packet::Verdict::fragment) {
        if (p.extra.frag_flags & packet::kFragAttributed) {
            mark.kind = HandoffMark::later_fragment;
            mark.port_lo = p.key.port_lo;
            mark.port_hi = p.key.port_hi;
            mark.sport = p.sport;
            mark.dport = p.dport;
            mark.src_is_lo = p.src_is_lo;
        }
    } else if (p.verdict == packet::Verdict::tcp || p.verdict == packet::Verdict::udp ||
               p.verdict == packet::Verdict::icmp) {
        mark.kind = HandoffMark::first_fragment;
        mark.held_packets = held.packets;
        mark.held_bytes = held.bytes;
    }
    return mark;
}

} // namespace

int register_handoff_mark() noexcept
{
    static const rte_mbuf_dynfield desc = {"flowcop_handoff_mark", sizeof(HandoffMark), alignof(HandoffMark), 0};
    return rte_mbuf_dynfield_register(&desc);
}

void Worker::handle_related(rte_mbuf** mbufs, packet::Packet** ptrs, uint16_t n, uint64_t tsc, const RxQueueRef* rx,
                            const Timeline* tl, uint8_t* orig, bool fragmented) noexcept
{
    fragattr::Held held[kBurst];
    if (rx == nullptr) {
        read_marks(mbufs, ptrs, n, held);
    } else {
        attribute_fragments(ptrs, n, tl, held);
        n = _place.rss ? pass_related(mbufs, ptrs, held, orig, n, rx->port)
                       : hand_off(mbufs, ptrs, n, rx->port, tl != nullptr ? tl->times : nullptr, orig, held);
        if (n == 0 && tl == nullptr)
            return;
    }
    if (fragmented)
        track_fragmented(ptrs, n, tsc, tl, held);
    else
        track(ptrs, n, tsc, tl);
    release(mbufs, ptrs, n, rx);
}

uint16_t Worker::pass_related(rte_mbuf** mbufs, packet::Packet** ptrs, fragattr::Held* held, uint8_t* orig, uint16_t n,
                              uint16_t rx_port) noexcept
{
    const unsigned me = _place.index;
    uint16_t local = 0;
    bool staged = false;
    for (uint16_t i = 0; i < n; ++i) {
        const packet::Packet& p = *ptrs[i];
        HandoffMark mark{};
        bool elsewhere = false;
        if (p.verdict == packet::Verdict::icmp_error) {
            elsewhere = true;
        } else if ((p.extra.frag_flags & packet::kFragmented) && (p.key.proto == 6 || p.key.proto == 17)) {
            // Only TCP and UDP flows are hashed with ports, so only their fragments can be elsewhere.
            mark = fragment_mark(p, held[i]);
            elsewhere = mark.kind != HandoffMark::none;
        }
        const unsigned owner = elsewhere ? rss_owner(p.key, _place.rss_owner) : me;
        if (owner == me) {
            mbufs[local] = mbufs[i];
            ptrs[local] = ptrs[i];
            held[local] = held[i];
            orig[local] = uint8_t(i);
            ++local;
            continue;
        }
        mark_of(mbufs[i], _mark_offset) = mark;
        mbufs[i]->port = rx_port; // some PMDs (net_ring) leave it unset; the owner forwards and zones by it
        _outbox[owner * kBurst + _outbox_size[owner]++] = mbufs[i];
        staged = true;
    }
    if (!staged)
        return local;
    // As under the handoff plan: a port that reads a file waits for a full ring, any other drops and counts.
    send_outboxes(rx_port, false);
    return local;
}

unsigned Worker::mark_fragment(rte_mbuf* m, const packet::Packet& p, const fragattr::Held& held,
                               unsigned owner) noexcept
{
    const HandoffMark mark = fragment_mark(p, held);
    // A later fragment this worker could not attribute is held here (or counted unattributed): it stays.
    if (p.verdict == packet::Verdict::fragment && mark.kind == HandoffMark::none)
        return _place.index;
    if (owner != _place.index)
        mark_of(m, _mark_offset) = mark;
    return owner;
}

void Worker::read_marks(rte_mbuf* const* mbufs, packet::Packet* const* ptrs, uint16_t n, fragattr::Held* held) noexcept
{
    for (uint16_t i = 0; i < n; ++i) {
        packet::Packet& p = *ptrs[i];
        held[i] = {};
        // Under rss the worker that handed a packet here marked it; under the handoff plan only the
        // fragments are marked (a ring's burst holds packets of every kind).
        if (!_place.rss && !(p.extra.frag_flags & packet::kFragmented))
            continue;
        const HandoffMark& mark = mark_of(mbufs[i], _mark_offset);
        if (mark.kind == HandoffMark::first_fragment) {
            held[i].packets = mark.held_packets;
            held[i].bytes = mark.held_bytes;
        } else if (mark.kind == HandoffMark::later_fragment && p.verdict == packet::Verdict::fragment) {
            p.key.port_lo = mark.port_lo;
            p.key.port_hi = mark.port_hi;
            p.sport = mark.sport;
            p.dport = mark.dport;
            p.src_is_lo = mark.src_is_lo;
            p.extra.frag_flags |= packet::kFragAttributed;
        }
    }
}

} // namespace flowcop::app
