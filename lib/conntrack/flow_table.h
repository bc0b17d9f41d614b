// SPDX-License-Identifier: BSD-3-Clause
// FlowTable: one lcore's tracked TCP flows, their deadlines and their expiry.
//
// Threading. One lcore owns a table: it alone calls process_burst(), run_cop(),
// kill(), set_timeouts(), rebase_step() and destroy_all(). Any other thread may
// call counters(), snapshot(), hold_shard()/release_shard() and the const
// accessors at any time. The synchronisation between them is one spinlock per
// shard of kShardSize records:
//   - updating a live flow (the per-packet path) takes no lock: the fields
//     readers look at are single-writer relaxed atomics (stats/relaxed.h);
//   - ending a flow's lifetime (expiry, eviction, reopen, shutdown) takes the
//     flow's shard lock, so a reader holding that lock sees whole flows only;
//   - the inactivity cop must not block, so it only try-locks the shard of a
//     flow that is actually due; when the lock is held it counts a lock-acquire
//     failure and the wheel retries that flow on the next pass — never lost,
//     never fired early. Sustained failures mean a control-plane reader is
//     holding shards for long (or looping): expiry on that lcore runs late.
//
// Deadlines follow the timer wheel design (lib/timerwheel/timer-wheel.md). A flow's true
// deadline is computed, never stored: the earliest non-zero of
//   inactivity = last_seen + timeout(state)   and   active = first_seen + active timeout,
// or "now" once an RST or a kill marked it. timeout(state) is the state's own
// timeout, or the default inactivity timeout when the state has none (0), so no
// flow can be left without a deadline. The places where that could otherwise
// happen, and what covers each:
//   1. creation — the flow is scheduled at once;
//   2. a transition into a state whose timeout is 0 — timeout() falls back to the default;
//   3. a runtime change of a state timeout or of the default (set_timeouts) —
//      the default is read at every deadline computation, and a rebase sweep
//      (rebase_step) re-arms every flow so that a shortened timeout is not late;
//   4. a due flow whose shard lock was held — the wheel re-links it for the next pass;
//   5. a reopen (SYN on a TIME_WAIT/CLOSE flow) — the record is re-initialised and re-armed.
// A packet for a flow whose timeout has run out but which the cop has not reaped
// yet ends that flow (with its expiry reason) and starts a new one, so a flow
// never outlives its deadline by being "revived" (RST/kill-marked flows keep
// their packets until the next tick reaps them).
// A plain packet in the same state only moves last_seen (no wheel work: the
// wheel re-reads the deadline when the cached one comes due). A state change,
// an RST and a kill re-arm, which moves the flow only if its deadline got earlier.
//
// Table full: a new flow first tries to evict an unassured flow (one that never
// completed a handshake — netfilter's early drop) among kEarlyDropSamples random
// records, the least recently seen one; otherwise it is refused and counted
// (tcp_table_full). The search is bounded, as netfilter's is (it scans at most 8
// entries of one hash chain): a table that is mostly assured may refuse a flow
// although an unassured one exists elsewhere — the price of a constant-time
// insert under a SYN flood. Assured flows are never evicted. Nothing grows: capacity is
// fixed at create(). The hash has no extendable buckets (they cost 9 bytes per
// flow), so close to capacity an insert can also fail on a bucket collision; that
// is handled the same way, so "full" may come slightly before `capacity` flows
// (test_flow_table measures how close).
//
// Memory: 128 bytes per flow at a power-of-two capacity (64-byte record, 48-byte
// key-store slot, 8 bytes of buckets, 8 of free-slot ring), plus the wheel's heads
// (32 bytes per bucket); memory_bytes() reports the measured figure.
//
// Expiry cost: the cop retires a due flow under its shard lock at once (the record
// stops being in use) but batches the rte_hash deletes (kDeleteBatch), and hints
// the wheel's next flows to the memory system (timer-wheel.md, "Lanes"), so a
// pass's cost is instructions rather than a chain of cache misses.
#pragma once

#include <conntrack/counters.h>
#include <conntrack/flow_record.h>
#include <conntrack/reason.h>
#include <packet/packet.h>
#include <tcpstate/tcp_state.h>
#include <timerwheel/timer_wheel.h>

#include <rte_spinlock.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct rte_hash;

namespace flowcop::events {
class Producer;
}

namespace flowcop::conntrack {

// Lookups are done in bursts of at most this many packets (rte_hash_lookup_bulk's limit is 64).
inline constexpr unsigned kMaxBurst = 64;
inline constexpr unsigned kShardShift = 10;
inline constexpr uint32_t kShardSize = 1u << kShardShift;
inline constexpr unsigned kEarlyDropSamples = 8;
// Evictions tried when an insert fails on a bucket collision before the table is
// full: an evicted flow frees a slot elsewhere, which cuckoo displacement can
// usually reach; a few tries bound the work per refused SYN.
inline constexpr unsigned kInsertRetries = 3;
// The cop ends due flows at once but removes their keys from the hash in batches of this many (and at
// the end of every pass): a delete's bucket read is a cache miss that depends on the key's own, and
// done back to back without the fire path's locked instructions in between, those misses overlap.
inline constexpr unsigned kDeleteBatch = 32;

struct TableConfig {
    std::string name;             // unique in the process (names the rte_hash)
    uint32_t capacity = 1u << 20; // flows; the table never holds more
    int socket_id = -1;           // SOCKET_ID_ANY
    uint16_t lcore = 0;           // reported in events
    timerwheel::Config wheel;
    tcpstate::Timeouts timeouts = tcpstate::Timeouts::netfilter_defaults();
    uint32_t active_timeout_s = 0; // 0 = none
    bool loose_pickup = true;      // track flows first seen mid-stream
};

// A copy of one flow, taken under its shard lock.
struct FlowSnapshot {
    packet::FlowKey key;
    bool orig_is_lo;
    bool assured;
    bool reset;
    bool killed;
    tcpstate::State state;
    uint32_t position;
    uint64_t first_seen_ns, last_seen_ns;
    uint64_t packets[2], bytes[2];
    uint64_t deadline_ns; // the true current deadline
};

struct SnapshotFilter {
    bool match_addr = false;
    uint8_t addr[16] = {}; // IPv4-mapped for IPv4; matches either endpoint
    bool match_port = false;
    uint16_t port = 0; // matches either endpoint
};

struct CopResult {
    timerwheel::ExpireResult wheel; // fired / visited / deferred / budget_exhausted
};

class FlowTable {
public:
    // Allocates everything the table will ever use (hash, records, wheel, locks) on
    // config.socket_id. Requires an initialised EAL. On failure returns nullptr and
    // a one-sentence reason in `error`.
    static std::unique_ptr<FlowTable> create(const TableConfig& config, std::string& error);
    ~FlowTable();
    FlowTable(const FlowTable&) = delete;
    FlowTable& operator=(const FlowTable&) = delete;

    // --- owner lcore only ---
    void set_events(events::Producer* producer) noexcept { _events = producer; }
    // Counts every packet by verdict and tracks the TCP ones. n <= kMaxBurst.
    void process_burst(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept;
    // The same with one time per packet (the packet clock: each packet's own timestamp).
    void process_burst(const packet::Packet* const* pkts, unsigned n, const uint64_t* times_ns) noexcept;
    // One inactivity-cop pass over the wheel buckets due at now_ns.
    CopResult run_cop(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept;
    // Records how long a run_cop() call took (the caller owns the clock).
    void observe_pass_ns(uint64_t ns) noexcept { _counters.cop_pass_ns.observe(ns); }
    // Marks the flow due on the next tick (reason killed). False if it is not here.
    bool kill(const packet::FlowKey& key) noexcept;
    // New timeouts take effect for every flow's next deadline computation; a rebase
    // sweep (rebase_step) then re-arms flows so shortened timeouts fire on time.
    void set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_timeout_s) noexcept;
    // Re-arms up to max_records records of a pending rebase sweep; returns how many
    // it looked at (0 when no sweep is pending). Call it between bursts.
    uint32_t rebase_step(uint32_t max_records) noexcept;
    bool rebase_pending() const noexcept { return _rebase_cursor < _n_records; }
    // Ends every flow with `reason` (flowcop's shutdown), emitting destroy events.
    void destroy_all(uint64_t now_ns, Reason reason) noexcept;
    // The record position of a key, or -1 (tests and the control plane's kill path).
    int32_t find(const packet::FlowKey& key) const noexcept;

    // --- any thread ---
    const Counters& counters() const noexcept { return _counters; }
    uint64_t active() const noexcept { return _counters.active(); }
    uint32_t capacity() const noexcept { return _capacity; }
    uint16_t lcore() const noexcept { return _lcore; }
    uint32_t shards() const noexcept { return _n_shards; }
    static uint32_t shard_of(uint32_t position) noexcept { return position >> kShardShift; }
    // Blocks until the shard is held. Hold it briefly: the owner's cop defers every
    // due flow of a held shard, and lifetime changes on the data path wait for it.
    void hold_shard(uint32_t shard) const noexcept;
    void release_shard(uint32_t shard) const noexcept;
    // Copies up to `max` flows matching `filter`, most recently seen first. Takes one
    // shard lock at a time; never blocks the owner's per-packet path.
    size_t snapshot(const SnapshotFilter& filter, FlowSnapshot* out, size_t max) const;
    // Bytes this table allocated from DPDK's heap at create() (hash + records + locks),
    // measured from rte_malloc's heap statistics, plus the wheel's bucket array.
    size_t memory_bytes() const noexcept { return _memory_bytes; }

private:
    struct HookOf {
        FlowRecord* records;
        timerwheel::Hook& operator()(uint32_t i) const noexcept { return records[i].hook; }
    };
    using Wheel = timerwheel::TimerWheel<HookOf>;
    struct CopCallbacks;

    FlowTable() = default;

    // The wheel's cursor starts at the first time the owner passes in (the first
    // packet's, under --clock packet), so early flows are not clamped against 0.
    void start_clock(uint64_t now_ns) noexcept;
    void track(uint32_t pos, const packet::Packet& pkt, uint64_t now_ns) noexcept;
    void create_flow(const packet::Packet& pkt, uint64_t now_ns) noexcept;
    void init_record(uint32_t pos, const packet::Packet& pkt, tcpstate::State state, uint64_t now_ns) noexcept;
    bool early_drop(uint64_t now_ns) noexcept;
    void rearm(uint32_t pos) noexcept;
    bool fire(uint32_t pos, uint64_t now_ns) noexcept;
    // Caller holds the shard lock. Emits the destroy event and frees the position.
    void end_flow(uint32_t pos, Reason reason, uint64_t now_ns) noexcept;
    // end_flow() without the hash delete, which the caller does or defers: the record is no longer
    // in use (readers skip it), but its key and position stay taken until the delete.
    void retire(uint32_t pos, Reason reason, uint64_t now_ns) noexcept;
    // Removes pos's key (sig: its flow_hash) from the hash, freeing the position.
    void delete_key(uint32_t pos, uint32_t sig) noexcept;
    // Removes the keys of the flows the cop retired since the last call (see kDeleteBatch).
    void delete_deferred() noexcept;
    void emit(uint32_t pos, bool created, Reason reason, uint64_t now_ns) noexcept;
    uint64_t deadline_of(const FlowRecord& rec) const noexcept
    {
        // RST and kill: due now. 1 ns is in every caller's past, so the wheel puts it in the next
        // bucket it drains.
        if (rec.flags & (FlowRecord::kReset | FlowRecord::kKilled))
            return 1;
        return timeout_deadline(rec);
    }
    // The earliest of the inactivity and active deadlines, ignoring RST/kill marks.
    uint64_t timeout_deadline(const FlowRecord& rec) const noexcept
    {
        const uint64_t inactivity = rec.last_seen_ns + _state_timeout_ns[static_cast<size_t>(rec.tcp.state)];
        const uint64_t active = _active_timeout_ns ? rec.first_seen_ns + _active_timeout_ns : 0;
        return active != 0 && active < inactivity ? active : inactivity;
    }
    Reason final_reason(const FlowRecord& rec, Reason reason, uint64_t now_ns) const noexcept;
    Reason reason_of(const FlowRecord& rec, uint64_t now_ns) const noexcept;
    const packet::FlowKey& key_at(uint32_t pos) const noexcept
    {
        return *reinterpret_cast<const packet::FlowKey*>(_key_store + size_t(pos) * _key_stride);
    }

    struct alignas(64) Shard {
        mutable rte_spinlock_t lock;
    };

    rte_hash* _hash = nullptr;
    FlowRecord* _records = nullptr;
    Shard* _shards = nullptr;
    std::unique_ptr<Wheel> _wheel;
    const uint8_t* _key_store = nullptr; // key of position p at key_store_ + p * key_stride_
    size_t _key_stride = 0;
    events::Producer* _events = nullptr;
    uint32_t _n_records = 0;
    uint32_t _n_shards = 0;
    uint32_t _capacity = 0;
    uint32_t _rebase_cursor = 0;
    uint32_t _live = 0;                    // flows in the table (owner's own count)
    uint64_t _ends = 0;                    // flows ended so far (detects stale positions within a burst)
    uint32_t _deferred[kDeleteBatch] = {}; // positions retired by the running cop pass, keys not yet deleted
    unsigned _n_deferred = 0;              // 0 whenever run_cop() is not running
    bool _clock_started = false;           // the wheel's cursor is placed at the first time seen
    uint16_t _lcore = 0;
    bool _loose_pickup = true;
    size_t _memory_bytes = 0;
    // Effective timeouts in ns (never 0), read by the owner on every deadline and by
    // snapshot() with relaxed loads.
    uint64_t _state_timeout_ns[static_cast<size_t>(tcpstate::State::count)] = {};
    uint64_t _active_timeout_ns = 0;
    Counters _counters;
};

} // namespace flowcop::conntrack
