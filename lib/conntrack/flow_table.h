// SPDX-License-Identifier: BSD-3-Clause
// FlowTable: one lcore's tracked flows of every IP protocol, their deadlines and their expiry.
//
// Structure. A plain library over one block of memory its TableMemory provides (EAL hugepages in the
// service, the heap in tests): `capacity` hot records (128 bytes, key included), cold entries (32
// bytes; flow_record.h has the byte map), the index (flow_index.h: one-line
// buckets of signatures and positions, bounded linear probing), and one spinlock per shard of
// kShardSize positions. A lookup
// is two dependent memory rounds: the bucket, then the record. Positions are handed out from a free
// list (most recently freed first) and then from the never-used tail.
//
// The packet path, process_burst(), is a three-stage pipeline over one burst: the keys are hashed and
// their buckets prefetched, the buckets are scanned and the candidate records prefetched, then each
// candidate is verified and tracked, so a burst's misses overlap instead of stalling each packet twice.
// Every packet is tracked on return. The steady established TCP segment (issue 29) is tracked inline by
// track_steady(): the record's kSteady bit (kept by track()) instead of the tracker, the expiry test as
// one compare of last_seen with a per-burst horizon (steady_horizon(): the exact test only when that
// fails), the window's fused steady_ack() with the cap from prepared SteadyRules, and the verdict and
// tcp_tracked counters added once per burst; every other TCP packet takes the out-of-line track().
// process_lite() is the same three stages over packet::TcpLite segments (the worker's steady lane): the
// compact IPv4 key hashed (flow_hash(LiteWords), equal to the FlowKey's hash) and compared in registers,
// every segment it does not take handed to the ordinary path as the Packet its caller parses then.
// The same stages can also overlap consecutive bursts (submit():
// burst k hashed while k-1 is scanned and k-2 tracked; a candidate found two calls earlier is used only
// if its record still holds the packet's key, else the key is looked up again). With bursts of 32 that
// measured no faster (tests/benchmarks.md, issue 19), so the cross-burst form is not the table's API:
// the fuzz target and the lookup benchmark drive it through TableInspector (table_inspector.h).
//
// Threading. One lcore owns a table: it alone calls process_burst(), run_cop(),
// kill(), kill_id(), get(), set_flow_timeout(), set_timeouts(), rebase_step() and destroy_all().
// Any other thread may call counters(), snapshot(), read_slice() and the
// const accessors at any time. The synchronisation
// between them is one spinlock per shard of kShardSize positions:
//   - updating a live flow (the per-packet path) takes no lock: the fields readers look at are
//     single-writer relaxed atomics (stats/relaxed.h); the index is the owner's alone;
//   - ending a flow's lifetime (expiry, eviction, reopen, shutdown) takes the flow's shard lock, so a
//     reader holding that lock sees whole flows only; a record is published (kInUse, release order)
//     only once its key, fields and cold entry are written;
//   - the inactivity cop must not block, so it only try-locks the shard of a flow that is actually due;
//     when the lock is held it counts a lock-acquire failure and the wheel retries that flow on the next
//     pass — never lost, never fired early. Sustained failures mean a control-plane reader is holding
//     shards for long (or looping): expiry on that lcore runs late.
//
// Deadlines follow the timer wheel design (lib/timerwheel/timer-wheel.md) and one function
// (deadline.h), which snapshot() uses too. A flow's true deadline is computed, never stored: the
// earliest non-zero of
//   inactivity = last_seen + timeout(state)   and   active = first_seen + active timeout,
// or "now" (kDueNow) once an RST or a kill marked it. timeout(state) is the state's own timeout, or the
// default inactivity timeout when the state has none (0), so no flow can be left without a deadline.
// The places where that could otherwise happen, and what covers each:
//   1. creation — the flow is scheduled at once;
//   2. a transition into a state whose timeout is 0 — timeout() falls back to the default;
//   3. a runtime change of a state timeout or of the default (set_timeouts) —
//      the default is read at every deadline computation, and a rebase sweep
//      (rebase_step) re-arms every flow so that a shortened timeout is not late;
//   4. a due flow whose shard lock was held — the wheel re-links it for the next pass;
//   5. a reopen (SYN on a TIME_WAIT/CLOSE flow) — the record is re-initialised and re-armed;
//   6. a timeout update (set_flow_timeout, flowcopctl -U) — the flow's deadline becomes now + S, kept in
//      one of kMaxTimeoutUpdates slots (FlowRecord::timeout_slot), and the flow is re-armed (a
//      shorter deadline moves it; a longer one is lazy: the wheel's cached deadline is merely early). Its
//      next accepted packet clears the update, so the state's timeout counts from that packet as usual
//      (netfilter's ctnetlink_change_timeout), and re-arms, since the update's deadline may have been
//      later than the state's. The steady packet pays nothing for this: the slot sits beside the flags
//      and is tested in the same compare as the RST and kill marks (marks_of). A slot is reclaimed once
//      its flow ended or saw a packet.
// A packet for a flow whose timeout has run out but which the cop has not reaped yet ends that flow
// (with its expiry reason) and starts a new one, so a flow never outlives its deadline by being
// "revived" (RST/kill-marked flows keep their packets until the next tick reaps them).
// A plain packet in the same state only moves last_seen (no wheel work: the wheel re-reads the
// deadline when the cached one comes due). A state change, an RST and a kill re-arm, which moves the
// flow only if its deadline got earlier. Packets still in the pipeline are tracked before the cop
// runs (the caller drains first: run_cop() does it), so no flow is fired before a packet that had
// arrived in time.
//
// Interim reports (TableConfig::interim_s): with an interval set, the wheel works to the earlier of a
// flow's deadline and its next report (deadline.h, wheel_deadline). When a report comes due first, the
// cop emits an `interim` event (the flow's totals so far) if the flow saw a packet since the previous
// report boundary, counts the boundary in the cold entry (FlowCold::exports) and re-arms the flow: it
// does not end, and nothing about how or when it ends changes (a flow whose deadline has also passed,
// or that an RST or a kill marked, ends instead). A report takes one fire from the pass's budget and
// counts in interim_reports, not in cop_fired. The packet path is unchanged.
//
// Protocols (issue 15). TCP flows follow lib/tcpstate; UDP, ICMP/ICMPv6 queries and every other IP
// protocol follow lib/protostate (netfilter's udp/icmp/generic rules), through the same pipeline, wheel,
// lazy rearm, budgets, early drop and locks: only the state step differs (flow_other.cpp). A packet
// enters the pipeline when its verdict's family (proto.h) is in TableConfig::track; the others are only
// counted by verdict. UDP and other_l4 packets create flows; an ICMP query creates one only when it is a
// request (packet::icmp_is_request), a reply to no known query counts proto_no_flow. An ICMP error
// (verdict icmp_error, key = the flow it quotes) never creates or refreshes a flow: it counts on the
// flow it quotes (FlowCold::related, icmp_related) or as icmp_related_unknown. A later fragment the
// caller attributed (packet::kFragAttributed, lib/fragattr) counts its packet and bytes on its flow
// and extends it, with no state step (the first fragment stepped the flow; a TCP flow turns liberal for
// window tracking, as flowcop does not reassemble the segment); with no live flow it counts
// fragments_no_flow. Later fragments that came before their first are counted on its flow when the
// caller hands them over (count_held_fragments). Only TCP records have a window (the others' WindowSpan stays zero). A non-TCP
// flow's timeout is its protostate::Timeout, a slot after TCP's states in the one deadline array
// (flow_record.h), so the deadline code has no protocol branch. Non-TCP flows end for inactivity,
// active, killed, evicted or shutdown (never closed or reset).
//
// Table full (early drop, as netfilter does it): a new flow first tries to drop one of kEarlyDropSamples
// random records, preferring (early_drop.h) a flow whose deadline has already passed (the cop had not
// reaped it: it ends with its own reason), then a TCP flow that is closing (FIN_WAIT, CLOSE_WAIT,
// LAST_ACK, TIME_WAIT or CLOSE, assured or not: netfilter's tcp_can_early_drop, which its gc applies to
// assured flows once the table is 95% full), then an unassured flow (one that never completed a
// handshake, or never saw a reply: netfilter's synchronous early drop); within a class the least
// recently seen one. The closing and unassured ones end "evicted". With none of these among the sample
// the new flow is refused and counted (tcp_table_full, proto_table_full). The search is bounded, as
// netfilter's is (it looks at the entries of 8 hash chains): a table that is mostly assured and open may
// refuse a flow although a droppable one exists elsewhere, the price of a constant-time insert under a
// SYN flood. Established (assured, not closing) flows are never dropped. Each drop counts by class in
// early_dropped. So a table full of short connections in TIME_WAIT keeps admitting new ones, as
// netfilter's does, instead of refusing them for TIME_WAIT's 120 s.
// Nothing grows: capacity is fixed at create(), and the index's probing is bounded (kMaxProbe buckets).
// A new key whose whole probe window is full (keys crafted to collide, or very bad luck) drops the best
// flow of its home bucket by the same rule, among the keys it collides with (netfilter's rule applied to
// the chain); with none, it is refused. Both count in probe_window_full; a refusal also in
// tcp_table_full. Below capacity no other insert fails.
//
// Memory (measured by the memory benchmark, tests/benchmarks.md part 4): 128 bytes of record, 32 of
// cold entry and 12.8 of index (a 64-byte bucket per 5 flows) per flow of capacity,
// exactly (no power-of-two rounding): 172.8 bytes, plus 64 bytes per kShardSize flows of locks and the
// wheel's heads (32 bytes per bucket); memory_bytes() reports it. The table object itself holds the 4 KiB
// of timeout-update slots (set_flow_timeout).
//
// Expiry cost: the cop retires a due flow under its shard lock at once (the record stops being in use)
// but batches the index deletes (kDeleteBatch), and hints the wheel's next flows (cold entry, record,
// lock) to the memory system (timer-wheel.md, "Lanes"), so a pass's cost is instructions rather than a
// chain of cache misses.
#pragma once

#include <conntrack/counters.h>
#include <conntrack/ct_judge.h>
#include <conntrack/deadline.h>
#include <conntrack/early_drop.h>
#include <conntrack/event_budget.h>
#include <conntrack/flow_hash.h>
#include <conntrack/flow_image.h>
#include <conntrack/flow_index.h>
#include <conntrack/flow_record.h>
#include <conntrack/flow_snapshot.h>
#include <conntrack/proto.h>
#include <conntrack/reason.h>
#include <conntrack/table_memory.h>
#include <packet/lane_isa.h>
#include <packet/packet.h>
#include <packet/tcp_lite.h>
#include <protostate/proto_state.h>
#include <tcpstate/tcp_state.h>
#include <tcpstate/window.h>
#include <timerwheel/timer_wheel.h>

#include <rte_prefetch.h>

#include <rte_spinlock.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace flowcop::events {
class Producer;
struct Event;
enum class Kind : uint8_t;
} // namespace flowcop::events

namespace flowcop::conntrack {

// Packets per submit()/process_burst() call.
inline constexpr unsigned kMaxBurst = 64;
// Bursts in flight in the pipeline: the one being hashed, the one being probed, the one being tracked.
inline constexpr unsigned kPipelineDepth = 3;
inline constexpr unsigned kShardShift = 10;
inline constexpr uint32_t kShardSize = 1u << kShardShift;
inline constexpr unsigned kEarlyDropSamples = 8;
// The cop ends due flows at once but removes them from the index in batches of this many (and at the
// end of every pass): a delete's bucket read is a cache miss that depends on the key's own, and done
// back to back without the fire path's locked instructions in between, those misses overlap.
inline constexpr unsigned kDeleteBatch = 32;
// The largest capacity: positions and the wheel's element indices are 32-bit with two values reserved.
inline constexpr uint32_t kMaxCapacity = 1u << 30;

struct TableConfig {
    std::string name;             // for error messages
    uint32_t capacity = 1u << 20; // flows; the table never holds more
    int socket_id = -1;           // where the memory is allocated (SOCKET_ID_ANY)
    TableMemory memory = heap_memory();
    uint16_t lcore = 0; // reported in events
    timerwheel::Config wheel;
    tcpstate::Timeouts timeouts = tcpstate::Timeouts::netfilter_defaults();
    uint32_t active_timeout_s = 0; // 0 = none
    // Interim reports of long flows (flowcop's --ipfix-active-timeout): an `interim` event every this
    // many seconds after a flow's first packet, which does not end it; 0 = none. See "Interim reports".
    uint32_t interim_s = 0;
    bool loose_pickup = true;      // track flows first seen mid-stream
    tcpstate::WindowPolicy window; // TCP window tracking: liberal, invalid RSTs, retransmissions
    protostate::Timeouts proto_timeouts = protostate::Timeouts::netfilter_defaults(); // UDP, ICMP, other
    TrackMask track = kTrackAll; // the families tracked (--track); packets of the others are only counted
    // Update events for invalid TCP segments, per second (EventBudget; --events-invalid-rate); 0 = none.
    uint32_t invalid_event_rate = kDefaultInvalidEventRate;
    uint64_t seed = 0x5eed; // early drop's sampling (deterministic per seed)
};

struct CopResult {
    timerwheel::ExpireResult wheel; // fired / visited / deferred / budget_exhausted
};

class FlowTable {
public:
    // The bytes create() asks its TableMemory for at this capacity.
    static size_t block_bytes(uint32_t capacity) noexcept;
    // Allocates everything the table will ever use from config.memory (one block) and the wheel's
    // heads from the heap. On failure returns nullptr and a one-sentence reason in `error`.
    static std::unique_ptr<FlowTable> create(const TableConfig& config, std::string& error);
    ~FlowTable();
    FlowTable(const FlowTable&) = delete;
    FlowTable& operator=(const FlowTable&) = delete;

    // --- owner lcore only ---
    void set_events(events::Producer* producer) noexcept { _events = producer; }
    // The connection-state policy (ct_judge.h): with a Judge, every packet of the pipeline gets its
    // conntrack state and verdict, and under enforcement a dropped `new` packet creates no flow and a
    // dropped `invalid` one changes nothing. nullptr (the default): no policy, no cost. Between bursts.
    // Call it after the judge's enforcement is set (it decides who notes an ignored segment: refuse()).
    void set_judge(Judge* judge) noexcept
    {
        _judge = judge;
        _window_policy.note_ignored = judge == nullptr || !judge->enforce();
    }
    // The packet path: counts every packet by verdict and tracks the packets of tracked families; every
    // packet is tracked on return. n <= kMaxBurst.
    void process_burst(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept;
    // The same with one time per packet (the packet clock: each packet's own timestamp).
    void process_burst(const packet::Packet* const* pkts, unsigned n, const uint64_t* times_ns) noexcept;
    // The steady lane (issue 29, flow_pipeline.cpp): a burst of IPv4 TCP segments read by
    // packet::parse_tcp_lite() (or given by packet::lite_of(): of kind packet::kLiteKindAck, which is not
    // tested again), all at now_ns, with what process_burst() would do with the Packets parse() gives the
    // same frames, in the same order: counted as TCP, a steady segment of a steady flow tracked by the
    // fused path from the compact key (hashed and compared in registers, no FlowKey built), every other one
    // (a miss, a flow not steady, a segment outside a bound) handed to the ordinary path as the Packet
    // full(ctx, i) returns (the caller parses frame i then: parse() is needed only there). Only without a
    // policy (set_judge(nullptr)) and with TCP tracked (lite_ready()); n <= kMaxBurst.
    using FullPacket = const packet::Packet& (*)(void* ctx, unsigned i) noexcept;
    void process_lite(const packet::TcpLite* segs, unsigned n, uint64_t now_ns, FullPacket full, void* ctx) noexcept;
    // The lane's first step for one segment, for a caller's reader loop to run as it reads each (the worker
    // does: no loop of its own, no second read of the segment): the segment's home bucket and signature
    // kept at i, the bucket asked for. process_lite() then takes the burst's probes with its segments.
    struct LiteProbes {
        const Bucket* home[kMaxBurst]; // FlowIndex::home(): the address, which the prefetch computed anyway
        uint16_t sig[kMaxBurst];
    };
    // A copy of what the step reads (the index's bucket array and count, the hash's base), taken before the
    // loop: read through the table, they were loaded again for every segment (the loop's stores could
    // alias them as far as the compiler knows). Valid while the table lives (its index is attached once).
    class LiteProber {
    public:
        void operator()(const packet::TcpLite& seg, LiteProbes& out, unsigned i) const noexcept
        {
            const Probe p = _index.probe(flow_hash(lite_words(seg), _base));
            const Bucket* const home = _index.home(p);
            out.home[i] = home;
            out.sig[i] = p.sig;
            rte_prefetch0(home);
        }

    private:
        friend class FlowTable;
        LiteProber(const FlowIndex& index, uint64_t base) noexcept : _index(index), _base(base) {}
        const FlowIndex _index;
        const uint64_t _base;
    };
    LiteProber probe_lite() const noexcept { return {_index, _lite_hash_base}; }
    // process_lite() with each segment j's probe_lite() at homes[j], sigs[j].
    void process_lite(const packet::TcpLite* segs, const Bucket* const* homes, const uint16_t* sigs, unsigned n,
                      uint64_t now_ns, FullPacket full, void* ctx) noexcept;
    // Which compiled copy of the lane process_lite() runs (packet/lane_isa.h): the baseline's until set.
    // False, leaving the baseline's, when this CPU cannot run isa's copy.
    bool set_lane_isa(packet::LaneIsa isa) noexcept
    {
        _lane_isa = packet::lane_isa_runs(isa) ? isa : packet::LaneIsa::baseline;
        return _lane_isa == isa;
    }
    packet::LaneIsa lane_isa() const noexcept { return _lane_isa; }
    // Packets the fused steady path has taken since the table was created (finish_burst and process_lite
    // add each burst's once): the worker compares it around a burst to learn whether the lane pays.
    uint64_t steady_taken() const noexcept { return _steady_taken; }
    bool lite_ready() const noexcept
    {
        return _judge == nullptr && _admit[static_cast<uint8_t>(packet::Verdict::tcp)] == 1; // TCP tracked
    }
    // Later fragments that came before their first fragment (what lib/fragattr held and returned for
    // `first`): once `first` was tracked (process_burst() returned), counts `packets`
    // frames and `bytes` IP bytes on its flow in its direction (fragments_late), with no state step
    // and last seen unchanged (the first fragment moved it); with no flow (its first fragment was
    // refused, or the flow ended) counts them fragments_no_flow. A family not tracked counts nothing,
    // as its attributed fragments do not. Rare (out-of-order fragments): one lookup, never per packet.
    void count_held_fragments(const packet::Packet& first, uint32_t packets, uint64_t bytes) noexcept;
    // One inactivity-cop pass over the wheel buckets due at now_ns (after tracking any packet a test
    // left pending through TableInspector::submit()).
    CopResult run_cop(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept;
    // Records how long a run_cop() call took (the caller owns the clock).
    void observe_pass_ns(uint64_t ns) noexcept { _counters.cop_pass_ns.observe(ns); }
    // Ends now, at now_ns, the flows kill() or kill_id() marked, without waiting for the next tick (the
    // timer wheel's expire_ahead over the bucket they wait in): for an owner whose clock may stand still
    // (a replay whose capture ended). Nothing else ends. Budgets as run_cop(); budget_exhausted: call again.
    CopResult reap_killed(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget) noexcept;
    // Marks the flow due on the next tick (reason killed). False if it is not here.
    bool kill(const packet::FlowKey& key) noexcept;
    // The same for the flow with this id (FlowSnapshot::flow_id), O(1): false if that flow has ended
    // (its position is free or holds a later flow) or the id names no position of this table.
    bool kill_id(uint64_t flow_id) noexcept;
    // Copies the flow with this key into `out` (O(1): one index probe). False if it is not here.
    bool get(const packet::FlowKey& key, FlowSnapshot& out) const noexcept;
    // conntrack -U --timeout (flowcopctl -U): the flow's deadline becomes now_ns + seconds until its next
    // accepted packet (Deadlines, 6), and `out` its copy (deadline_ns that deadline, or earlier if the
    // active timeout comes first). An RST- or kill-marked flow still ends on the next tick. `full` when
    // kMaxTimeoutUpdates other flows of this table hold an update that no packet or end has cleared yet.
    // O(1), or O(kMaxTimeoutUpdates) when no slot is free.
    enum class TimeoutUpdate : uint8_t { set, absent, full };
    static constexpr unsigned kMaxTimeoutUpdates = 255; // slots, numbered 1..255 (FlowRecord::timeout_slot)
    TimeoutUpdate set_flow_timeout(const packet::FlowKey& key, uint32_t seconds, uint64_t now_ns,
                                   FlowSnapshot& out) noexcept;
    // New timeouts take effect for every flow's next deadline computation; a rebase
    // sweep (rebase_step) then re-arms flows so shortened timeouts fire on time.
    void set_timeouts(const tcpstate::Timeouts& timeouts, uint32_t active_timeout_s) noexcept;
    // TCP window tracking's choices from the next packet on (--tcp-be-liberal, ...). Deadlines do not
    // move: a cap a flow already has stays until its next accepted packet.
    void set_window_policy(const tcpstate::WindowPolicy& policy) noexcept
    {
        const bool note = _window_policy.note_ignored; // the judge's (set_judge), not the options'
        _window_policy = policy;
        _window_policy.note_ignored = note;
        _steady_rules = tcpstate::steady_rules(_window_policy, _timeouts);
    }
    // The same for the UDP, ICMP and generic timeouts (--udp-timeout, ...).
    void set_proto_timeouts(const protostate::Timeouts& timeouts) noexcept;
    // Re-arms the flows among the next max_records records of a pending rebase sweep, stopping
    // early once max_moves of them had to move to an earlier wheel bucket (the costly case: a
    // shortened timeout; a lengthened one moves nothing, so a lengthening sweep is a cheap scan).
    // Returns how many records it looked at (0 when no sweep is pending). Call it between bursts
    // with budgets like the cop's, so that one step's time stays within what an RX ring absorbs.
    uint32_t rebase_step(uint32_t max_records, uint32_t max_moves = UINT32_MAX) noexcept;
    bool rebase_pending() const noexcept { return _rebase_cursor < _capacity; }
    // drain(), then ends every flow with `reason` (flowcop's shutdown), emitting destroy events.
    void destroy_all(uint64_t now_ns, Reason reason) noexcept;
    // Restarts (issue 32; flow_image.h has the id rule, flow_image.cpp the conversion). Before the first
    // packet, on a new table: restore_flow() puts one flow back with its state, counters, times (base:
    // the file's time base) and id, and arms its deadline against now_ns (a deadline that passed while
    // flowcop was down fires at the first cop pass, with its usual reason: inactivity). First pass:
    // renumber_generation 0, every flow into its own slot (slot_taken when another flow holds it or it
    // is beyond the capacity); then finish_restore(); then the slot_taken ones again with
    // renumber_generation above every generation restored. A restored flow counts as created (the
    // counters' invariant) and emits no event. Times after now_ns (a clock that went back) are taken as
    // now_ns; a set timeout's deadline is kept within [1 ns, now_ns + 2^32 s], what set_flow_timeout() sets.
    // `flow_id`, when given, receives the flow's id in this table (restored or renumbered).
    RestoreOutcome restore_flow(const FlowImage& image, const TimeBase& base, uint64_t now_ns,
                                uint32_t renumber_generation, uint64_t* flow_id = nullptr) noexcept;
    void finish_restore() noexcept;
    // --- any thread ---
    const Counters& counters() const noexcept { return _counters; }
    // Whether process_burst() takes this packet into its pipeline (a tracked family; a later fragment only
    // when attributed): the packets a Judge sees (ct_judge.h). Owner lcore.
    bool takes(const packet::Packet& pkt) const noexcept { return admit_class(pkt) != 0; }
    uint64_t active() const noexcept { return _counters.active(); }
    uint32_t capacity() const noexcept { return _capacity; }
    uint16_t lcore() const noexcept { return _lcore; }
    TrackMask tracked() const noexcept { return _track; }
    uint32_t shards() const noexcept { return _n_shards; }
    static uint32_t shard_of(uint32_t position) noexcept { return position >> kShardShift; }
    // Copies up to `max` flows matching `filter`, most recently seen first. Takes one
    // shard lock at a time; never blocks the owner's per-packet path.
    size_t snapshot(const SnapshotFilter& filter, FlowSnapshot* out, size_t max) const;
    // A whole-table walk in bounded slices (issue 17's listing): copies the flows at positions
    // [start, end) into out[0..n) and returns `end`, the next slice's start, or kNoPosition once no
    // position at or after `start` was ever used. The slice stays inside one shard and spans at most
    // max_records positions (out must hold that many), read under that shard's lock alone. A flow that
    // lives through a whole walk (start 0 until kNoPosition) is copied exactly once: a flow keeps its
    // position for life. Flows created or ended during the walk may or may not be.
    uint32_t read_slice(uint32_t start, uint32_t max_records, FlowSnapshot* out, size_t& n) const;
    // read_slice() for a restart: the same slices under the same lock, each flow as a FlowImage
    // (flow_image.h) with its times in `base`. On a live table a flow may be mid-update (as a listing's).
    uint32_t export_slice(uint32_t start, uint32_t max_records, const TimeBase& base, FlowImage* out, size_t& n) const;
    // Bytes this table allocated at create(): its block and the wheel's bucket heads.
    size_t memory_bytes() const noexcept { return _memory_bytes; }

private:
    // Tests and fuzzing look inside through TableInspector (table_inspector.h): lookups by key,
    // true deadlines, the index's invariants and holding a shard as a reader would.
    friend class TableInspector;
    // The cross-burst pipeline (see Structure): counts every packet by verdict, starts the lookups of the
    // packets of tracked families and tracks those of the submit() two calls earlier. n <= kMaxBurst. The
    // Packets (not the pointer array) are read until the (kPipelineDepth - 1)-th submit() after this one,
    // or drain(), returns. process_burst() is submit() then drain().
    void submit(const packet::Packet* const* pkts, unsigned n, const uint64_t* times_ns) noexcept;
    void submit(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept;
    void advance() noexcept; // submit()'s probe and finish of the earlier bursts
    void drain() noexcept;   // tracks every packet submitted so far; cheap when nothing is pending
    bool pending() const noexcept { return _finished != _prepared; }
    int32_t find(const packet::FlowKey& key) const noexcept; // a key's record position, or -1
    uint32_t home_bucket(uint32_t pos) const noexcept;
    // Blocks until the shard is held (readers hold one while they copy it; the owner's cop defers every
    // due flow of a held shard, and lifetime changes on the data path wait for it).
    void hold_shard(uint32_t shard) const noexcept;
    void release_shard(uint32_t shard) const noexcept;
    struct HookOf {
        FlowCold* cold;
        timerwheel::Hook& operator()(uint32_t i) const noexcept { return cold[i].hook; }
    };
    using Wheel = timerwheel::TimerWheel<HookOf>;
    struct CopCallbacks;
    struct alignas(64) Shard {
        mutable rte_spinlock_t lock;
    };
    // A timeout update's slot (set_flow_timeout): the flow's position while the flow holds it (its
    // timeout_slot names it), kNoPosition when free. Written by the owner under the flow's
    // shard lock, read by readers holding it.
    struct SetDeadline {
        uint32_t pos = kNoPosition;
        uint64_t deadline_ns = 0;
    };
    // One burst in the pipeline: its tracked packets (every tracked family), their times and index
    // probes, and (once probed) each one's candidate position. A burst at one time (the tsc clock) keeps
    // it once (`latest`); only the packet clock's bursts copy a time per packet (`when`).
    struct Stage {
        unsigned n = 0;
        bool per_packet = false; // when[] holds each packet's time; else every packet is at `latest`
        uint64_t latest = 0;     // the latest time in the burst
        uint64_t at(unsigned j) const noexcept { return per_packet ? when[j] : latest; }
        const packet::Packet* pkt[kMaxBurst];
        uint64_t when[kMaxBurst];
        Probe probe[kMaxBurst];
        uint32_t candidate[kMaxBurst];
    };

    FlowTable() = default;

    // The pipeline's three steps (flow_pipeline.cpp).
    // times: one per packet, or nullptr: every packet at now_ns.
    void prepare(Stage& s, const packet::Packet* const* pkts, unsigned n, const uint64_t* times,
                 uint64_t now_ns) noexcept;
    void probe(Stage& s) noexcept;
    void finish(const Stage& s) noexcept;
    // finish()'s loop, picked once per burst: kPerPacket, the packet clock's bursts (Stage::when), or one
    // time per burst; kJudge, with the policy's judge, or (false) judging nothing.
    template <bool kPerPacket, bool kJudge>
    void finish_burst(const Stage& s) noexcept;
    // A slow branch's decision (ct_judge.h): judges pkt in state s when there is a judge. True when the
    // packet is dropped under enforcement: the caller leaves no trace of it. Cold.
    bool judge_drop(const packet::Packet& pkt, CtState s) noexcept
    {
        if (_judge == nullptr)
            return false;
        _judged_now = true;
        return _judge->judge(pkt, s);
    }
    // A TCP segment the state machine or the window check refused (outcome ignored or out_of_window) of
    // the flow at pos, direction d: judged invalid before it changes anything, then counted on the flow
    // unless dropped, and counted and reported as refused either way.
    void refuse(uint32_t pos, const packet::Packet& pkt, unsigned d, tcpstate::TrackResult result,
                uint64_t now_ns) noexcept;

    // read_slice()'s and export_slice()'s slice from start: its end (at most max_records positions, within
    // start's shard, below the positions ever used), or kNoPosition when start is past them.
    uint32_t slice_end(uint32_t start, uint32_t max_records) const noexcept;

    // The wheel's cursor starts at the first time the owner passes in (the first
    // packet's, under --clock packet), so early flows are not clamped against 0.
    void start_clock(uint64_t now_ns) noexcept;
    // The steady established TCP segment of a live flow (flow_pipeline.cpp, inline in finish()): taken
    // when it tracked the packet exactly as track() would have, except tcp_tracked, which the caller
    // counts once per burst, and the re-arm of a changed cap. `horizon`:
    // a flow last seen after it cannot have timed out by now_ns (steady_horizon()).
    // `rules`: _steady_rules, copied once per burst.
    // steady_horizon()'s times, by timeout cap.
    struct SteadyHorizon {
        uint64_t at[tcpstate::kCapCount];
        uint64_t latest; // the latest of at[]: a flow seen after it is live under any cap
    };
    // Seg: packet::Packet, or packet::TcpLite (the steady lane): the same field names.
    // Returns kNotTaken (nothing written), kTaken, or kTakenRecap with steady_ack()'s change (of the cap,
    // kSteadyLost) or-ed in: tracked, and the flow's timeout cap changed, so the caller passes the result to
    // recap() (kept out of the steady loops: a call there costs their registers).
    static constexpr int kNotTaken = -1, kTaken = 0, kTakenRecap = 16;
    static_assert(kTakenRecap > (3 | tcpstate::detail::kSteadyLost));
    template <typename Seg>
    int track_steady(FlowRecord& r, const Seg& pkt, uint64_t now_ns, const SteadyHorizon& horizon,
                     const tcpstate::SteadyRules& rules) noexcept;
    // track_steady()'s tests before the window: the side (0 originator, 1 reply) the segment comes from
    // when the flow is steady, the segment a plain ACK and the flow seen after the horizon; -1 otherwise.
    template <typename Seg>
    static int steady_side(const FlowRecord& r, uint16_t flags, const Seg& pkt, const SteadyHorizon& horizon) noexcept;
    // The fused path's test of marks_of(): in use and steady (kSteady is only ever set on a record in use),
    // no RST or kill mark and no timeout update; for the lane (kLane) also kLiteKey, which its key test
    // needs. One compare; no_flow (all zero) fails it.
    template <bool kLane>
    static constexpr uint16_t steady_mask() noexcept
    {
        return FlowRecord::kInUse | FlowRecord::kSteady | kArrivalMarks | (kLane ? FlowRecord::kLiteKey : 0);
    }
    template <bool kLane>
    static constexpr uint16_t steady_want() noexcept
    {
        return FlowRecord::kInUse | FlowRecord::kSteady | (kLane ? FlowRecord::kLiteKey : 0);
    }
    template <unsigned kSide, typename Seg> // kSide 0: from the originator, 1: from the reply side
    int track_steady_side(FlowRecord& r, const Seg& pkt, uint64_t now_ns, const tcpstate::SteadyRules& rules) noexcept;
    // process_lite()'s body, compiled into each copy (flow_pipeline.cpp).
    [[gnu::always_inline]] inline void run_lite(const packet::TcpLite* segs, const Bucket* const* homes,
                                                const uint16_t* sigs, unsigned n, uint64_t now_ns, FullPacket full,
                                                void* ctx) noexcept;
    FLOWCOP_LANE_V3_CODE void process_lite_v3(const packet::TcpLite* segs, const Bucket* const* homes,
                                              const uint16_t* sigs, unsigned n, uint64_t now_ns, FullPacket full,
                                              void* ctx) noexcept;
    // process_lite()'s segment i that the steady run did not take (flow_pipeline.cpp); true when the
    // fused path took it after all.
    [[gnu::noinline]] bool finish_lite_one(const packet::TcpLite& seg, const Probe& probe, uint32_t candidate,
                                           uint64_t now_ns, const SteadyHorizon& horizon,
                                           const tcpstate::SteadyRules& rules, FullPacket full, void* ctx,
                                           unsigned i) noexcept;
    // Every other TCP packet of a flow in the table, out of line: expiry on arrival, the state machine and
    // the window check (tcpstate::track), counters, re-arm and events.
    [[gnu::cold]] void track(uint32_t pos, const packet::Packet& pkt, uint64_t now_ns) noexcept;
    // A steady packet changed the flow's timeout cap (retransmissions, a zero window, data in flight):
    // the window's meta.cap and the record's flags take it (track_steady()'s result) and the flow is
    // re-armed.
    [[gnu::cold]] void recap(FlowRecord& r, int taken) noexcept;
    // Per burst, by the record's timeout cap: a steady flow (kSteady: ESTABLISHED, no mark) last seen after
    // at[cap] has not timed out at `latest` (its deadline is its last_seen plus ESTABLISHED's timeout under
    // that cap, _steady_slack_ns[cap]); UINT64_MAX when an active timeout is set (the exact test reads the
    // cold entry then). Only ESTABLISHED's timeouts: a flow quiet for longer than the smallest timeout of
    // any state (CLOSE's 10 s) still takes the steady path, as most flows of a 10^7-flow host do.
    SteadyHorizon steady_horizon(uint64_t latest) const noexcept
    {
        SteadyHorizon h;
        for (size_t c = 0; c < tcpstate::kCapCount; ++c) {
            const uint64_t slack = _steady_slack_ns[c];
            h.at[c] = slack == 0 ? UINT64_MAX : latest > slack ? latest - slack : 0;
        }
        h.latest = *std::max_element(h.at, h.at + tcpstate::kCapCount);
        return h;
    }
    void create_flow(const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept;
    void init_record(uint32_t pos, const packet::Packet& pkt, L4State l4, uint64_t now_ns) noexcept;
    // A free position for a new flow with this probe, its key in the index (evicting an unassured flow
    // when the table or the probe window is full), or kNoPosition: refused.
    uint32_t admit(const Probe& probe, uint64_t now_ns) noexcept;
    // Every packet but TCP's, once its flow was looked up (pos, or kNoPosition) (flow_other.cpp).
    void finish_other(uint32_t pos, const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept;
    void track_other(uint32_t pos, const packet::Packet& pkt, uint64_t now_ns) noexcept;
    void create_other(const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept;
    // The flow at pos is past its timeout but not reaped (the cop runs between bursts): end it now.
    // False when it is still live (or RST/kill-marked: those wait for the next tick).
    bool end_if_timed_out(uint32_t pos, uint64_t now_ns) noexcept;
    // Later fragments' frames counted on the flow r, in the direction src_is_lo names (flow_other.cpp).
    void add_fragments(FlowRecord& r, bool src_is_lo, uint64_t packets, uint64_t bytes) noexcept;
    // 1 when the verdict's family is tracked (the pipeline takes the packet), 0 when not, 2 for
    // fragments (taken only when attributed and of a tracked family).
    uint8_t admit_class(const packet::Packet& pkt) const noexcept
    {
        const uint8_t a = _admit[static_cast<uint8_t>(pkt.verdict)];
        if (a <= 1) [[likely]]
            return a;
        return (pkt.extra.frag_flags & packet::kFragAttributed) &&
               (_track & track_bit(proto_of_ip(pkt.key.proto, packet::key_is_ipv4(pkt.key))));
    }
    // Early drop ("Table full"): a flow sampled for eviction, the best so far of a search.
    struct Candidate {
        uint32_t pos = kNoPosition;
        EarlyDrop cls = EarlyDrop::count; // count: none found yet
        uint64_t last_seen = UINT64_MAX;
    };
    // How early drop ranks the flow at pos (early_drop.h); EarlyDrop::count when not in use or not droppable.
    EarlyDrop drop_class(uint32_t pos, uint64_t now_ns) const noexcept;
    // Keeps in `best` the lower class, then the least recently seen, of `best` and the flow at pos.
    void consider(uint32_t pos, uint64_t now_ns, Candidate& best) const noexcept;
    // Ends the victim (its own expiry reason when timed out, else evicted) and counts it by class; false
    // when there is none or its shard lock is held.
    bool drop(const Candidate& victim, uint64_t now_ns) noexcept;
    // The table is full: drop the best of kEarlyDropSamples random records.
    bool early_drop(uint64_t now_ns) noexcept;
    // The probe window of `probe` is full: drop the best flow of its home bucket.
    bool evict_in_bucket(const Probe& probe, uint64_t now_ns) noexcept;
    // True when the flow moved to an earlier bucket (or was armed anew): see TimerWheel::schedule.
    bool rearm(uint32_t pos) noexcept;
    bool fire(uint32_t pos, uint64_t now_ns) noexcept;
    // The cop reached the flow's interim report boundary before its deadline: report, re-arm.
    void report_interim(uint32_t pos, uint64_t now_ns) noexcept;
    // Caller holds the shard lock. Emits the destroy event, removes the key and frees the position.
    void end_flow(uint32_t pos, Reason reason, uint64_t now_ns) noexcept;
    // end_flow() without the index delete, which the caller does or defers: the record is no longer
    // in use (readers skip it), but its key stays in the index and its position taken until the delete.
    void retire(uint32_t pos, Reason reason, uint64_t now_ns) noexcept;
    // Removes pos's key from the index and frees the position.
    void remove(uint32_t pos, const Probe& probe) noexcept;
    // Removes the flows the cop retired since the last call (see kDeleteBatch).
    void delete_deferred() noexcept;
    uint32_t allocate() noexcept;
    // `reason` is read for Kind::destroyed only.
    void emit(uint32_t pos, events::Kind kind, Reason reason, uint64_t now_ns) noexcept;
    // A TCP segment of the flow at pos was refused (invalid for its state: WindowReason::none; else out of
    // its window, and why): an update event saying so, if some subscriber takes TCP updates and the
    // lcore's EventBudget allows; withheld by the budget, counted in events_invalid_suppressed. Cold.
    void report_invalid(uint32_t pos, tcpstate::WindowReason why, uint64_t now_ns) noexcept;
    // The Event emit() and report_invalid() send: the flow's identity, state, status and counts.
    void fill_event(uint32_t pos, events::Kind kind, uint64_t now_ns, events::Event& e) const noexcept;
    // What a conntrack UPDATE event reports besides a state change: the first reply, assured.
    static bool status_changed(tcpstate::Tracker before, tcpstate::Tracker after) noexcept
    {
        return before.seen_reply() != after.seen_reply() || before.assured() != after.assured();
    }
    uint32_t lookup(const packet::FlowKey& key, const Probe& probe) const noexcept
    {
        return _index.find(probe, [&](uint32_t p) { return same_key(_records[p].key, key); });
    }
    // Inline: the packet path hashes every packet of a burst (prepare()).
    Probe probe_of(const packet::FlowKey& key) const noexcept { return _index.probe(flow_hash(key)); }
    uint64_t deadline_of(uint32_t pos) const noexcept
    {
        const FlowRecord& r = _records[pos];
        return record_deadline(
            _rules, r.flags, r.timeout_slot, r.l4.tcp.state, r.last_seen_ns, [&] { return _cold[pos].first_seen_ns; },
            [&](uint8_t slot) { return slot_deadline(slot); });
    }
    // What the wheel works to: deadline_of(), or the next interim report if that comes first.
    uint64_t wheel_deadline_of(uint32_t pos) const noexcept
    {
        if (_rules.interim_ns == 0) // without reports the cold entry is read only for an active timeout
            return deadline_of(pos);
        const FlowCold& c = _cold[pos];
        return wheel_deadline(_rules, deadline_of(pos), c.first_seen_ns, c.exports);
    }
    // The earliest of the inactivity (or set) and active deadlines, ignoring RST/kill marks.
    uint64_t timeout_deadline_of(uint32_t pos) const noexcept
    {
        const FlowRecord& r = _records[pos];
        return record_timeout_deadline(
            _rules, r.flags, r.timeout_slot, r.l4.tcp.state, r.last_seen_ns, [&] { return _cold[pos].first_seen_ns; },
            [&](uint8_t slot) { return slot_deadline(slot); });
    }
    // The packet path's expiry test (track(), end_if_timed_out()): one test of the flags for the steady
    // packet. Unmarked, the state's timeout_deadline(); RST- or kill-marked, never (they end on the next
    // tick); a timeout update, its deadline.
    uint64_t arrival_deadline_of(uint32_t pos) const noexcept
    {
        const uint16_t marks = marks_of(_records[pos]) & kArrivalMarks;
        if (marks == 0) [[likely]]
            return state_deadline_of(pos);
        return (marks & (FlowRecord::kReset | FlowRecord::kKilled)) ? UINT64_MAX : timeout_deadline_of(pos);
    }
    // The owner's view of a record's flags and timeout slot as one word (adjacent bytes: one load), so the
    // packet path tests the RST and kill marks and a timeout update (kArrivalMarks) in one compare.
    static uint16_t marks_of(const FlowRecord& r) noexcept
    {
        static_assert(offsetof(FlowRecord, timeout_slot) == offsetof(FlowRecord, flags) + 1);
        if constexpr (std::endian::native == std::endian::little) { // gcc does not merge the two byte loads
            uint16_t word;
            std::memcpy(&word, reinterpret_cast<const uint8_t*>(&r) + offsetof(FlowRecord, flags), sizeof word);
            return word;
        }
        return uint16_t(r.flags | r.timeout_slot << 8);
    }
    static constexpr uint16_t kArrivalMarks = FlowRecord::kReset | FlowRecord::kKilled | 0xff00;
    // timeout_deadline_of() of a flow with no timeout update.
    uint64_t state_deadline_of(uint32_t pos) const noexcept
    {
        const FlowRecord& r = _records[pos];
        return timeout_deadline(_rules, r.flags, r.l4.tcp.state, r.last_seen_ns,
                                [&] { return _cold[pos].first_seen_ns; });
    }
    // The deadline an operator set, kept in timeout slot `slot` (FlowRecord::timeout_slot).
    uint64_t slot_deadline(uint8_t slot) const noexcept { return _set_deadlines[slot].deadline_ns; }
    // A slot for a timeout update: a free one, else one whose flow has ended or cleared it (reclaimed
    // under that flow's shard lock); 0 if none.
    uint8_t claim_timeout_slot() noexcept;
    Reason final_reason(uint32_t pos, Reason reason, uint64_t now_ns) const noexcept;
    // Readers' copy of the deadline rules (relaxed loads) and of one in-use record (flow_snapshot.cpp).
    DeadlineRules reader_rules() const noexcept;
    void copy_flow(uint32_t pos, uint8_t flags, const DeadlineRules& rules, FlowSnapshot& snap) const noexcept;
    Reason reason_of(uint32_t pos, uint64_t now_ns) const noexcept;

    FlowRecord* _records = nullptr;
    FlowCold* _cold = nullptr;
    Shard* _shards = nullptr;
    FlowIndex _index;
    std::unique_ptr<Wheel> _wheel;
    void* _block = nullptr;
    TableMemory _memory;
    events::Producer* _events = nullptr;
    Judge* _judge = nullptr;  // the lcore's policy seam (set_judge), nullptr without a policy
    bool _judged_now = false; // finish_burst<., true>: a slow branch judged the current packet
    uint32_t _capacity = 0;
    uint32_t _n_shards = 0;
    uint32_t _fresh = 0;               // positions [0, _fresh) have been used; readers load it relaxed
    uint32_t _free_head = kNoPosition; // most recently freed position (FlowCold::next_free links them)
    uint32_t _rebase_cursor = 0;
    uint32_t _live = 0;                    // flows in the table (owner's own count)
    uint32_t _deferred[kDeleteBatch] = {}; // positions retired by the running cop pass, not yet removed
    unsigned _n_deferred = 0;              // 0 whenever run_cop() is not running
    uint64_t _pass_interims = 0;           // interim reports of the running cop pass (0 outside one)
    bool _clock_started = false;           // the wheel's cursor is placed at the first time seen
    uint16_t _lcore = 0;
    bool _loose_pickup = true;
    tcpstate::WindowPolicy _window_policy;
    tcpstate::Timeouts _timeouts = tcpstate::Timeouts::netfilter_defaults(); // what track() caps with
    const uint64_t _lite_hash_base = lite_hash_base(); // probe_lite()'s: every lane key's constant bytes hashed
    tcpstate::SteadyRules _steady_rules;               // of _window_policy, _timeouts
    // steady_horizon(): ESTABLISHED's timeout under each cap; 0 with an active timeout.
    uint64_t _steady_slack_ns[tcpstate::kCapCount] = {};
    TrackMask _track = kTrackAll;
    uint8_t _admit[packet::kVerdictCount] = {}; // admit_class() by verdict
    uint64_t _rng = 0;                          // early drop's sampling state (SplitMix64)
    EventBudget _invalid_budget;                // update events for invalid segments (report_invalid)
    size_t _memory_bytes = 0;
    // Pipeline: stages [_finished, _prepared) are in flight in _stages[i % kPipelineDepth];
    // [_finished, _probed) have their candidates.
    uint64_t _prepared = 0, _probed = 0, _finished = 0;
    uint64_t _steady_taken = 0;                            // steady_taken()
    packet::LaneIsa _lane_isa = packet::LaneIsa::baseline; // set_lane_isa()
    Stage _stages[kPipelineDepth];
    // Effective timeouts in ns (never 0), read by the owner on every deadline and by
    // snapshot() with relaxed loads.
    DeadlineRules _rules;
    Counters _counters;

    // Timeout updates by slot (set_flow_timeout); [0] is unused (timeout_slot 0: none). 4 KiB.
    SetDeadline _set_deadlines[kMaxTimeoutUpdates + 1];
};

} // namespace flowcop::conntrack
