// SPDX-License-Identifier: BSD-3-Clause
// FragmentAttributor: gives every fragment of an IP datagram the flow key of its first fragment,
// which alone carries the ports (packet.h), per lcore, in memory fixed at creation.
//
// What it remembers: for each datagram, identified by its fragment key (packet::FlowKey with zero
// ports: addresses, protocol, VLAN IDs and zone), its direction (src_is_lo) and its IP id, either
// the flow's ports (the first fragment was seen: "resolved") or, when later fragments came first,
// how many frames and bytes are waiting for it ("pending"). Like OVS's ipf and Suricata's defrag it
// keys datagrams by (addresses, protocol, id); unlike them it never holds packet bytes: the frames
// pass through untouched and only their attribution is looked up, so nothing needs a copy, a
// reassembly buffer or a memcap.
//
// Bounds (why this shape): a fixed table of `capacity` entries of one cache line, in buckets of
// kWays entries (set-associative, a datagram lives in the bucket its hash picks). An entry lives
// `hold_ns` after the last fragment that touched it (time-bounded, as Linux's ipfrag_time, OVS's
// and Suricata's timeouts are; the default of 1 s is far shorter than theirs because only
// metadata is kept and an IPv4 id can wrap within a few seconds on a fast link, RFC 4963). Once the
// fragments of a resolved datagram cover it whole (every byte, by count) its slot is free for the
// next insert that wants one, and until then its duplicates still find the flow. When a bucket is
// full: a first fragment replaces the least recently touched entry (LRU within the bucket: a live
// datagram is evicted only by a newer one, counted `evicted`); a pending entry replaces only a
// free, expired, completed or other pending entry, never a live resolved one, so a flood of
// unmatched fragments can neither grow memory nor push out the datagrams of real flows.
//
// Degraded behaviour, all counted (Counters), never a crash or a leak: a later fragment whose
// first is unknown and for which no slot may be taken is unattributed at once; fragments held for
// a first that never comes become unattributed when their entry expires (expire() sweeps, and any
// insert reclaims the expired entries of its bucket); a datagram evicted while pending makes its
// held fragments unattributed. Duplicate or overlapping fragments are counted as the frames they
// are (on the flow, like a retransmitted segment); they may complete a resolved datagram's byte
// count early, which only frees its slot sooner: a fragment that comes after an insert took the
// slot is held, then unattributed. A pending datagram is never completed by count (its first is
// due). An IP id reused within hold_ns by another flow of the same addresses and protocol
// takes over the entry at its first fragment, so only a later fragment of the old datagram that
// arrives after that is misattributed (as in any id-based reassembly).
//
// Threading: one lcore owns an instance and calls every non-const member; counters() may be read
// from any thread (single-writer fields, stats/relaxed.h). No allocation after construction, no
// locks, no syscalls: hot-path safe. Memory is the caller's (bytes_for()), e.g. rte_malloc'd on the
// lcore's socket; the instance never frees it.
#pragma once

#include <packet/packet.h>

#include <cstddef>
#include <cstdint>

namespace flowcop::fragattr {

inline constexpr unsigned kWays = 4;

struct Config {
    uint32_t capacity = 4096;            // entries (datagrams at once), rounded up to a power-of-two number of buckets
    uint64_t hold_ns = 1'000'000'000;    // an entry's life after the last fragment that touched it; > 0
    uint64_t seed = 0x243f6a8885a308d3u; // hash seed: give each instance a random one (hash flooding)
};

// Single-writer counters. Every later (non-first) fragment handed to later() ends in exactly one of
// attributed, attributed_late or unattributed, or is still pending:
//   later fragments = attributed + attributed_late + unattributed + pending.
struct alignas(64) Counters {
    uint64_t first_fragments = 0; // first fragments remembered
    uint64_t attributed = 0;      // later fragments whose first had been seen
    uint64_t attributed_late = 0; // later fragments held until their first came
    uint64_t unattributed = 0;    // later fragments whose first never came in time, or with no room to wait
    uint64_t pending = 0;         // later fragments held right now (a gauge)
    uint64_t evicted = 0;         // live datagrams (resolved or pending) forgotten to make room for a newer one
    uint64_t completed = 0;       // resolved datagrams whose every byte was seen (their slot is free at once)
};

// What a first fragment brings back: the frames and IP bytes (Packet::ip_len) of its datagram that came before it
// and now belong to its flow, in the first fragment's direction.
struct Held {
    uint32_t packets = 0;
    uint64_t bytes = 0;
};

class FragmentAttributor {
public:
    // Bytes of memory an instance with `config` needs (64-byte aligned).
    static size_t bytes_for(const Config& config) noexcept;
    // `memory`: bytes_for(config) bytes, 64-byte aligned, owned by the caller and outliving this.
    // config.capacity is rounded up (at least one bucket); hold_ns 0 is taken as 1 ns.
    FragmentAttributor(const Config& config, void* memory) noexcept;
    FragmentAttributor(const FragmentAttributor&) = delete;
    FragmentAttributor& operator=(const FragmentAttributor&) = delete;

    // A first fragment (extra.frag_flags has kFragmented, frag_offset 0) whose key is its flow's: remembers
    // the datagram and returns what was held for it. Call it for the fragments the caller tracks
    // (a protocol keyed without ports needs no attribution: its later fragments' keys are complete).
    Held first(const packet::Packet& p, uint64_t now_ns) noexcept;

    // A later fragment (verdict fragment). true: p.key's and p.sport/dport's ports are now its flow's
    // (p.verdict is left as it is; the caller knows the protocol from p.key.proto). false: not
    // attributable now (held or unattributed, counted).
    bool later(packet::Packet& p, uint64_t now_ns) noexcept;

    // The caller's one step per packet (the worker's, for every packet with extra.frag_flags set): a
    // later fragment of a protocol keyed with ports (TCP, UDP, ICMP over IPv4, ICMPv6 over IPv6) goes
    // through later(), one of any other protocol is complete already; either way an attributed one
    // gets packet::kFragAttributed, which tells the flow table to count it on its flow. A first
    // fragment whose ports parsed (verdict tcp, udp or icmp) goes through first(), and what it returns
    // (the frames held for it) is the caller's to count on the flow once the first fragment has been
    // tracked (conntrack::FlowTable::count_held_fragments). Anything else (a first fragment too short
    // for its L4 header, an ICMP error) is left alone and returns nothing held: its later fragments
    // then find no first and end unattributed.
    Held attribute(packet::Packet& p, uint64_t now_ns) noexcept
    {
        if (!(p.extra.frag_flags & packet::kFragmented))
            return {};
        if (p.verdict == packet::Verdict::fragment) {
            const uint8_t proto = p.key.proto;
            const bool v4 = packet::key_is_ipv4(p.key);
            const bool keyed_with_ports = proto == 6 || proto == 17 || (proto == 1 && v4) || (proto == 58 && !v4);
            if (!keyed_with_ports || later(p, now_ns))
                p.extra.frag_flags |= packet::kFragAttributed;
        } else if (p.extra.frag_offset == 0 &&
                   (p.verdict == packet::Verdict::tcp || p.verdict == packet::Verdict::udp ||
                    p.verdict == packet::Verdict::icmp)) {
            return first(p, now_ns);
        }
        return {};
    }

    // Visits up to max_entries entries from where the last call stopped and frees those expired at
    // now_ns, counting held fragments as unattributed. Returns how many it visited. Call it between
    // bursts, e.g. with the inactivity cop: a full lap of capacity / max_entries calls bounds how long
    // an expired pending entry is counted as pending.
    uint32_t expire(uint64_t now_ns, uint32_t max_entries) noexcept;

    const Counters& counters() const noexcept { return _counters; }
    uint32_t capacity() const noexcept { return _mask + 1 == 0 ? 0 : (_mask + 1) * kWays; }
    // Entries holding a slot at now_ns (not expired, not completed) (tests, and sizing: memory never
    // depends on it).
    uint32_t live(uint64_t now_ns) const noexcept;

    struct Entry; // one datagram (fragment_attributor.cpp)

private:
    Entry* bucket_of(const packet::FlowKey& key, uint32_t id, bool src_is_lo) const noexcept;
    Entry* find(Entry* bucket, const packet::Packet& p, uint64_t now_ns) const noexcept;
    Entry* take(Entry* bucket, uint64_t now_ns, bool may_evict_resolved) noexcept;
    void release(Entry& e, bool evicted) noexcept;
    // was_complete: e was a complete resolved datagram before p (so p does not count it completed again).
    void account(Entry& e, const packet::Packet& p, uint64_t now_ns, bool was_complete) noexcept;

    Entry* _entries;
    uint32_t _mask; // buckets - 1
    uint32_t _cursor = 0;
    uint64_t _hold_ns;
    uint64_t _seed;
    Counters _counters;
};

} // namespace flowcop::fragattr
