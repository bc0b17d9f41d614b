// SPDX-License-Identifier: BSD-3-Clause
// The comparison the flow table is measured against: flowcop's packet path before issue 19, an
// rte_hash of FlowKeys (no extendable buckets, CRC32-C hashed inline and looked up with
// rte_hash_lookup_with_hash_bulk, a branch-free key compare) whose key positions index an array of
// 64-byte records, prefetched after the lookup, then the same per-packet update (TCP state through
// tcpstate::steady/step, per-direction counters, last_seen). Deadlines, the wheel and events are left
// out on both sides of the comparison's hot path; inserts go through rte_hash_add_key.
//
// Only the benchmarks use it (issue 19 keeps rte_hash as the baseline, not in the service).
// Requires EAL (rte_hash lives in DPDK memory). One thread.
#pragma once

#include <conntrack/flow_hash.h>
#include <packet/packet.h>
#include <stats/relaxed.h>
#include <tcpstate/tcp_state.h>
#include <timerwheel/hook.h>

#include <rte_hash.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace flowcop::bench {

class RteHashTable {
public:
    // The record of flowcop before issue 19: hook, tracker, flags, times, counters in one line.
    struct alignas(64) Record {
        timerwheel::Hook hook;
        tcpstate::Tracker tcp;
        uint8_t flags;
        uint64_t first_seen_ns, last_seen_ns;
        uint64_t packets[2], bytes[2];
    };
    static_assert(sizeof(Record) == 64);
    static constexpr uint8_t kInUse = 1, kOrigIsLo = 2;

    RteHashTable(const std::string& name, uint32_t capacity)
    {
        rte_hash_parameters hp{};
        hp.name = name.c_str();
        hp.entries = capacity;
        hp.key_len = sizeof(packet::FlowKey);
        hp.hash_func = [](const void* key, uint32_t, uint32_t init) {
            return conntrack::flow_hash(*static_cast<const packet::FlowKey*>(key), init);
        };
        hp.socket_id = int(rte_socket_id());
        _hash = rte_hash_create(&hp);
        if (_hash == nullptr)
            throw std::runtime_error("rte_hash_create failed for " + std::to_string(capacity) + " flows");
        rte_hash_set_cmp_func(_hash, [](const void* a, const void* b, size_t) {
            return conntrack::same_key(*static_cast<const packet::FlowKey*>(a), *static_cast<const packet::FlowKey*>(b))
                       ? 0
                       : 1;
        });
        _n = uint32_t(rte_hash_max_key_id(_hash)) + 1;
        _records = static_cast<Record*>(rte_zmalloc("bench_rte_hash_records", size_t(_n) * sizeof(Record), 64));
        if (_records == nullptr)
            throw std::runtime_error("no memory for the rte_hash baseline's records");
    }
    ~RteHashTable()
    {
        rte_hash_free(_hash);
        rte_free(_records);
    }
    RteHashTable(const RteHashTable&) = delete;
    RteHashTable& operator=(const RteHashTable&) = delete;

    // The old process_burst() for packets of known flows (misses are inserted, as loose pickup would).
    void process_burst(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
    {
        const void* keys[64];
        uint32_t sig[64];
        int32_t pos[64];
        for (unsigned j = 0; j < n; ++j) {
            keys[j] = &pkts[j]->key;
            sig[j] = conntrack::flow_hash(pkts[j]->key);
        }
        rte_hash_lookup_with_hash_bulk(_hash, keys, sig, n, pos);
        for (unsigned j = 0; j < n; ++j)
            if (pos[j] >= 0)
                rte_prefetch0(&_records[pos[j]]);
        for (unsigned j = 0; j < n; ++j) {
            int32_t p = pos[j];
            if (p < 0)
                p = rte_hash_lookup(_hash, keys[j]);
            if (p >= 0)
                track(_records[p], *pkts[j], now_ns);
            else
                insert(*pkts[j], now_ns);
        }
    }

    uint64_t active() const noexcept { return _active; }
    // DPDK heap bytes of the hash and the records (what rte_malloc's statistics saw at construction is
    // the caller's to measure; this is the record array alone).
    size_t record_bytes() const noexcept { return size_t(_n) * sizeof(Record); }

private:
    void track(Record& r, const packet::Packet& pkt, uint64_t now_ns) noexcept
    {
        const bool from_orig = ((r.flags & kOrigIsLo) != 0) == pkt.src_is_lo;
        const tcpstate::Dir dir = from_orig ? tcpstate::Dir::orig : tcpstate::Dir::reply;
        tcpstate::Tracker t = r.tcp;
        const tcpstate::Outcome o =
            tcpstate::steady(t, pkt.tcp_flags) ? tcpstate::Outcome::ok : tcpstate::step(t, dir, pkt.tcp_flags);
        const unsigned d = static_cast<unsigned>(dir);
        stats::bump(r.packets[d]);
        stats::bump(r.bytes[d], uint64_t(pkt.ip_len));
        if (o == tcpstate::Outcome::ignored)
            return;
        stats::store_relaxed(r.tcp, t);
        stats::store_relaxed(r.last_seen_ns, now_ns);
    }
    void insert(const packet::Packet& pkt, uint64_t now_ns) noexcept
    {
        const int32_t p = rte_hash_add_key(_hash, &pkt.key);
        if (p < 0)
            return;
        Record& r = _records[p];
        r.tcp = tcpstate::Tracker{tcpstate::initial_state(pkt.tcp_flags, true), 0};
        r.flags = uint8_t(kInUse | (pkt.src_is_lo ? kOrigIsLo : 0));
        r.first_seen_ns = r.last_seen_ns = now_ns;
        r.packets[0] = 1;
        r.packets[1] = 0;
        r.bytes[0] = pkt.ip_len;
        r.bytes[1] = 0;
        ++_active;
    }

    rte_hash* _hash = nullptr;
    Record* _records = nullptr;
    uint32_t _n = 0;
    uint64_t _active = 0;
};

} // namespace flowcop::bench
