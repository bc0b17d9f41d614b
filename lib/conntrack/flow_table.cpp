// SPDX-License-Identifier: BSD-3-Clause
// FlowTable construction, flow creation and ending, and the per-packet update (see flow_table.h).
#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>

#include <events/events.h>
#include <tcpstate/segment.h>

#include <rte_prefetch.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace flowcop::conntrack {

namespace {

// The block's layout: records, cold entries, buckets, shard locks, each at a 128-byte boundary.
struct Layout {
    size_t records, cold, buckets, shards, total;
};

size_t round_up(size_t n) noexcept
{
    return (n + kTableAlign - 1) / kTableAlign * kTableAlign;
}

Layout layout_of(uint32_t capacity) noexcept
{
    const uint32_t n_shards = (capacity + kShardSize - 1) / kShardSize;
    Layout l{};
    l.records = 0;
    l.cold = l.records + round_up(size_t(capacity) * sizeof(FlowRecord));
    l.buckets = l.cold + round_up(size_t(capacity) * sizeof(FlowCold));
    l.shards = l.buckets + round_up(size_t(FlowIndex::buckets_for(capacity)) * sizeof(Bucket));
    l.total = l.shards + round_up(size_t(n_shards) * 64);
    return l;
}

// SplitMix64 (Steele, Lea, Flood): early drop's random sample.
uint64_t next_random(uint64_t& state) noexcept
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace

size_t FlowTable::block_bytes(uint32_t capacity) noexcept
{
    return layout_of(capacity).total;
}

std::unique_ptr<FlowTable> FlowTable::create(const TableConfig& config, std::string& error)
{
    const std::string who = "flow table '" + config.name + "': ";
    if (config.capacity < 8 || config.capacity > kMaxCapacity) {
        error = who + "capacity " + std::to_string(config.capacity) + " is out of range (8 to " +
                std::to_string(kMaxCapacity) + " flows)";
        return nullptr;
    }
    if (const std::string e = timerwheel::validate(config.wheel); !e.empty()) {
        error = who + e;
        return nullptr;
    }
    if (config.memory.allocate == nullptr || config.memory.release == nullptr) {
        error = who + "no memory source given";
        return nullptr;
    }
    std::unique_ptr<FlowTable> t(new FlowTable());
    const Layout l = layout_of(config.capacity);
    t->_memory = config.memory;
    t->_block = config.memory.allocate(l.total, config.socket_id, config.memory.ctx);
    if (t->_block == nullptr) {
        error = who + "out of " + config.memory.kind + " for " + std::to_string(config.capacity) + " flows (" +
                std::to_string((l.total + (1u << 20) - 1) >> 20) +
                " MiB; raise EAL -m / hugepages, or lower --flows-per-lcore)";
        return nullptr;
    }
    auto* base = static_cast<uint8_t*>(t->_block);
    // Zeroed records are not in use; cold entries are initialised when a position starts a flow.
    t->_records = reinterpret_cast<FlowRecord*>(base + l.records);
    std::memset(static_cast<void*>(t->_records), 0, size_t(config.capacity) * sizeof(FlowRecord));
    t->_cold = reinterpret_cast<FlowCold*>(base + l.cold);
    std::memset(static_cast<void*>(t->_cold), 0, size_t(config.capacity) * sizeof(FlowCold));
    t->_index.attach(reinterpret_cast<Bucket*>(base + l.buckets), FlowIndex::buckets_for(config.capacity));
    t->_n_shards = (config.capacity + kShardSize - 1) / kShardSize;
    t->_shards = reinterpret_cast<Shard*>(base + l.shards);
    for (uint32_t s = 0; s < t->_n_shards; ++s)
        rte_spinlock_init(&t->_shards[s].lock);
    try {
        t->_wheel = std::make_unique<Wheel>(config.wheel, HookOf{t->_cold}, 0);
    } catch (const std::exception& e) {
        error = who + e.what();
        return nullptr;
    }
    t->_capacity = config.capacity;
    t->_lcore = config.lcore;
    t->_loose_pickup = config.loose_pickup;
    t->_window_policy = config.window;
    t->_rng = config.seed;
    t->_invalid_budget = EventBudget(std::min(config.invalid_event_rate, kMaxInvalidEventRate));
    t->_track = config.track & kTrackAll;
    for (unsigned v = 0; v < packet::kVerdictCount; ++v) {
        const Proto p = proto_of_verdict(static_cast<packet::Verdict>(v));
        t->_admit[v] = p != Proto::count && (t->_track & track_bit(p)) ? 1 : 0;
    }
    t->_admit[static_cast<unsigned>(packet::Verdict::fragment)] = t->_track != 0 ? 2 : 0;
    t->set_timeouts(config.timeouts, config.active_timeout_s);
    t->_rules.interim_ns = uint64_t(config.interim_s) * 1'000'000'000;
    t->set_proto_timeouts(config.proto_timeouts);
    t->_rebase_cursor = t->_capacity; // nothing to rebase yet
    t->_memory_bytes = l.total + t->_wheel->memory_bytes();
    return t;
}

FlowTable::~FlowTable()
{
    if (_block != nullptr)
        _memory.release(_block, _memory.ctx);
}

void FlowTable::hold_shard(uint32_t shard) const noexcept
{
    rte_spinlock_lock(&_shards[shard].lock);
}
void FlowTable::release_shard(uint32_t shard) const noexcept
{
    rte_spinlock_unlock(&_shards[shard].lock);
}

uint32_t FlowTable::home_bucket(uint32_t pos) const noexcept
{
    return probe_of(_records[pos].key).bucket;
}

int32_t FlowTable::find(const packet::FlowKey& key) const noexcept
{
    const uint32_t pos = lookup(key, probe_of(key));
    return pos == kNoPosition ? -1 : int32_t(pos);
}

void FlowTable::track(uint32_t pos, const packet::Packet& pkt, uint64_t now_ns) noexcept
{
    FlowRecord& r = _records[pos];
    const bool from_orig = ((r.flags & FlowRecord::kOrigIsLo) != 0) == pkt.src_is_lo;
    const tcpstate::Dir dir = from_orig ? tcpstate::Dir::orig : tcpstate::Dir::reply;
    // Its timeout ran out but the cop has not reaped it yet (it runs between
    // bursts, once per check interval): the flow is over, and this packet starts
    // a new one — as in netfilter, where an expired entry no longer matches.
    // RST- or kill-marked flows are excluded: packets between the RST and the
    // next tick still belong to the closing flow. A flow whose timeout was set
    // (flowcopctl -U) is over at the deadline set.
    if (arrival_deadline_of(pos) <= now_ns) [[unlikely]] {
        const uint32_t shard = shard_of(pos);
        const Probe p = probe_of(r.key);
        hold_shard(shard);
        _counters.timeout_lag_ns.observe(now_ns - timeout_deadline_of(pos));
        end_flow(pos, reason_of(pos, now_ns), now_ns);
        release_shard(shard);
        create_flow(pkt, p, now_ns);
        return;
    }
    // The state machine and the window check together (tcpstate::track, window.h): an out-of-window
    // segment changes neither the tracker nor the deadline.
    tcpstate::Tracker tracker = r.l4.tcp;
    const tcpstate::State before = tracker.state;
    tcpstate::WindowState& w = r.window.tcp;
    const tcpstate::TrackResult result =
        tcpstate::track(tcpstate::FlowRef{tracker, w.seq, w.meta}, dir, tcpstate::segment_of(pkt), _window_policy,
                        _timeouts, _steady_rules);
    const tcpstate::Outcome outcome = result.outcome;

    if (outcome == tcpstate::Outcome::reopen) {
        // Port reuse of a finished flow: the old one ends and this SYN starts a new
        // one, possibly at the same position. It ended "closed" unless an RST or a
        // kill, waiting for the next tick, had already decided how it ended.
        const uint32_t shard = shard_of(pos);
        const Probe p = probe_of(r.key);
        hold_shard(shard);
        end_flow(pos, (r.flags & (FlowRecord::kReset | FlowRecord::kKilled)) ? reason_of(pos, now_ns) : Reason::closed,
                 now_ns);
        release_shard(shard);
        create_flow(pkt, p, now_ns);
        return;
    }
    const unsigned d = static_cast<unsigned>(dir);
    // Refused (invalid for the state, or out of the window): before anything of the flow changes, since
    // the policy may drop it (refuse()).
    if (outcome == tcpstate::Outcome::ignored || outcome == tcpstate::Outcome::out_of_window) [[unlikely]] {
        refuse(pos, pkt, d, result, now_ns);
        return;
    }
    bump(r.packets[d]);
    bump(r.bytes[d], uint64_t(pkt.ip_len));
    store_relaxed(r.tcp_flags_seen[d], uint8_t(r.tcp_flags_seen[d] | pkt.tcp_flags));
    bump(_counters.tcp_tracked);
    store_relaxed(r.last_seen_ns, now_ns);
    // An accepted packet clears a timeout update (timeout_slot): the state's timeout counts from it again,
    // and the flow takes the re-arm below, since the deadline set may have been later. kSteady follows
    // the tracker (flow_record.h).
    const bool steady = tcpstate::steady(tracker, packet::kTcpAck) && tcpstate::steady_window(w.seq, w.meta);
    const uint8_t flags = uint8_t((r.flags & ~(FlowRecord::kCapMask | FlowRecord::kSteady)) |
                                  (w.meta.cap << FlowRecord::kCapShift) | (steady ? FlowRecord::kSteady : 0));
    // marks_of(): a timeout update (its slot, the high byte) differs from `flags` too.
    if (tracker.state == before && outcome == tcpstate::Outcome::ok &&
        ((flags ^ marks_of(r)) & ~FlowRecord::kSteady) == 0) [[likely]] {
        // The hot path: same state and cap mean a plain extension, no wheel work. The tracker's flag
        // bits may still have changed (a first reply, the handshake's assurance): an update event then.
        if (flags != r.flags)
            store_relaxed(r.flags, flags); // kSteady alone: no deadline moves
        if (tracker.flags != r.l4.tcp.flags) {
            const bool status = status_changed(r.l4.tcp, tracker);
            store_relaxed(r.l4.tcp, tracker);
            if (status)
                emit(pos, events::Kind::updated, Reason::count, now_ns);
        }
        return;
    }
    // A new state, timeout cap or a cleared update: re-arm (the wheel moves the flow only if its deadline
    // got earlier).
    const bool update = tracker.state != before || status_changed(r.l4.tcp, tracker);
    store_relaxed(r.timeout_slot, uint8_t(0));
    store_relaxed(r.l4.tcp, tracker);
    store_relaxed(r.flags, uint8_t(flags | (outcome == tcpstate::Outcome::reset ? FlowRecord::kReset : 0)));
    rearm(pos);
    if (update)
        emit(pos, events::Kind::updated, Reason::count, now_ns);
}

void FlowTable::recap(FlowRecord& r, int taken) noexcept
{
    const auto pos = uint32_t(&r - _records);
    // After the fused path: a new cap, or (kSteadyLost) a window that no longer meets steady_window().
    tcpstate::WindowState& w = r.window.tcp;
    tcpstate::detail::note_cap(w.meta, taken);
    const uint8_t lost = tcpstate::steady_window(w.seq, w.meta) ? 0 : FlowRecord::kSteady;
    store_relaxed(r.flags, uint8_t((r.flags & ~(FlowRecord::kCapMask | lost)) | (w.meta.cap << FlowRecord::kCapShift)));
    rearm(pos);
}

void FlowTable::refuse(uint32_t pos, const packet::Packet& pkt, unsigned d, tcpstate::TrackResult result,
                       uint64_t now_ns) noexcept
{
    // A segment the policy drops as invalid leaves no trace on its flow (netfilter never lets an
    // INVALID packet touch its conntrack). One it lets through counts in the flow's packets and bytes,
    // but neither extends the deadline nor changes state, so garbage cannot keep a flow alive.
    if (judge_drop(pkt, CtState::invalid)) {
        bump(_counters.policy_untraced[1]);
    } else {
        FlowRecord& r = _records[pos];
        // Under a judge track() left an ignored segment's note to here (WindowPolicy::note_ignored).
        if (!_window_policy.note_ignored && result.outcome == tcpstate::Outcome::ignored)
            tcpstate::note_ignored(tcpstate::FlowRef{r.l4.tcp, r.window.tcp.seq, r.window.tcp.meta},
                                   d == 0 ? tcpstate::Dir::orig : tcpstate::Dir::reply, tcpstate::segment_of(pkt));
        bump(r.packets[d]);
        bump(r.bytes[d], uint64_t(pkt.ip_len));
        store_relaxed(r.tcp_flags_seen[d], uint8_t(r.tcp_flags_seen[d] | pkt.tcp_flags));
    }
    if (result.outcome == tcpstate::Outcome::ignored) {
        bump(_counters.tcp_invalid); // not valid for the state
        report_invalid(pos, tcpstate::WindowReason::none, now_ns);
        return;
    }
    // Outside the window (a forged or stale segment): counted by why.
    bump(_counters.tcp_out_of_window[static_cast<unsigned>(result.reason) % tcpstate::kWindowReasonCount]);
    report_invalid(pos, result.reason, now_ns);
}

uint32_t FlowTable::allocate() noexcept
{
    if (_free_head != kNoPosition) {
        const uint32_t pos = _free_head;
        _free_head = _cold[pos].next_free;
        return pos;
    }
    const uint32_t pos = _fresh;
    store_relaxed(_fresh, _fresh + 1);
    return pos;
}

void FlowTable::create_flow(const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept
{
    const tcpstate::State state = tcpstate::initial_state(pkt.tcp_flags, _loose_pickup);
    if (state == tcpstate::State::none) {
        // netfilter's tcp_new() refuses it (an RST, a FIN, ... of no flow): INVALID.
        judge_drop(pkt, CtState::invalid);
        bump(_counters.tcp_no_flow);
        return;
    }
    // NEW, judged before the flow exists: a dropped one creates nothing (no flow, no event, no eviction).
    if (judge_drop(pkt, CtState::new_)) {
        bump(_counters.tcp_no_flow); // the policy did not let it start one
        bump(_counters.policy_untraced[0]);
        return;
    }
    const uint32_t pos = admit(probe, now_ns);
    if (pos == kNoPosition) {
        bump(_counters.tcp_table_full);
        return;
    }
    L4State l4;
    l4.tcp = tcpstate::Tracker{state, 0};
    init_record(pos, pkt, l4, now_ns);
    bump(_counters.tcp_tracked);
}

uint32_t FlowTable::admit(const Probe& probe, uint64_t now_ns) noexcept
{
    if (_live >= _capacity && !early_drop(now_ns))
        return kNoPosition;
    // Below capacity a position is always free (positions in use == _live outside a cop pass).
    const uint32_t pos = allocate();
    if (!_index.insert(probe, pos)) [[unlikely]] {
        bump(_counters.probe_window_full);
        if (!evict_in_bucket(probe, now_ns) || !_index.insert(probe, pos)) {
            _cold[pos].next_free = _free_head; // give the position back
            _free_head = pos;
            return kNoPosition;
        }
    }
    return pos;
}

void FlowTable::init_record(uint32_t pos, const packet::Packet& pkt, L4State l4, uint64_t now_ns) noexcept
{
    FlowRecord& r = _records[pos];
    FlowCold& c = _cold[pos];
    timerwheel::init_hook(c.hook);
    c.generation += 1;
    c.first_seen_ns = now_ns;
    c.related = 0;
    c.in_port = pkt.in_port;
    c.exports = 0;
    std::memcpy(&r.key, &pkt.key, sizeof r.key);
    r.l4 = l4;
    r.tcp_flags_seen[0] = pkt.tcp_flags;
    r.tcp_flags_seen[1] = 0;
    r.timeout_slot = 0;
    r.last_seen_ns = now_ns;
    r.packets[0] = 1;
    r.packets[1] = 0;
    r.bytes[0] = pkt.ip_len;
    r.bytes[1] = 0;
    // The creating packet teaches the window (and may cap the timeout: a one-sided pickup). Only TCP has
    // one: another protocol's L4State is not a tcpstate::Tracker, and its flags carry no cap.
    uint8_t cap = 0;
    if (r.key.proto == kIpProtoTcp) [[likely]] {
        tcpstate::window_create(tcpstate::FlowRef{r.l4.tcp, r.window.tcp.seq, r.window.tcp.meta},
                                tcpstate::segment_of(pkt), _timeouts);
        cap = uint8_t(r.window.tcp.meta.cap << FlowRecord::kCapShift);
    } else {
        r.window = WindowSpan{};
    }
    // Publish: a reader that sees kInUse sees the fields and the key above.
    store_release(r.flags, uint8_t(FlowRecord::kInUse | (pkt.src_is_lo ? FlowRecord::kOrigIsLo : 0) |
                                   (packet::is_lite_key(pkt.key) ? FlowRecord::kLiteKey : 0) | cap));
    ++_live;
    bump(_counters.flows_created);
    bump(_counters.flows_created_by_proto[static_cast<size_t>(record_proto(r))]);
    _wheel->schedule(pos, wheel_deadline_of(pos));
    emit(pos, events::Kind::created, Reason::count, now_ns);
}

[[gnu::always_inline]] inline EarlyDrop FlowTable::drop_class(uint32_t pos, uint64_t now_ns) const noexcept
{
    const FlowRecord& r = _records[pos];
    if (!(r.flags & FlowRecord::kInUse))
        return EarlyDrop::count;
    // Checked first: a flow whose timeout ran out but which the cop has not reaped yet is over, whatever
    // its state (netfilter's early drop reaps the expired entries it meets too). RST- and kill-marked
    // flows, whose reason is already decided, are ranked by their state instead (an RST's is CLOSE).
    if (!(r.flags & (FlowRecord::kReset | FlowRecord::kKilled)) && timeout_deadline_of(pos) <= now_ns)
        return EarlyDrop::timed_out;
    if (r.key.proto == kIpProtoTcp && tcpstate::is_closing(r.l4.tcp.state))
        return EarlyDrop::closing;
    // The assured bit is the same bit for every protocol (flow_record.h).
    return r.l4.tcp.assured() ? EarlyDrop::count : EarlyDrop::unassured;
}

bool FlowTable::early_drop(uint64_t now_ns) noexcept
{
    bump(_counters.early_drop_attempts);
    // The samples are random records, each a cache miss: ask for all of them before reading any, so the
    // misses overlap instead of following one another.
    uint32_t sample[kEarlyDropSamples];
    for (unsigned k = 0; k < kEarlyDropSamples; ++k) {
        sample[k] = uint32_t((next_random(_rng) >> 32) * _capacity >> 32);
        rte_prefetch0(&_records[sample[k]]);
    }
    Candidate best;
    for (unsigned k = 0; k < kEarlyDropSamples; ++k)
        consider(sample[k], now_ns, best);
    return drop(best, now_ns);
}

bool FlowTable::evict_in_bucket(const Probe& probe, uint64_t now_ns) noexcept
{
    const Bucket& b = *_index.home(probe);
    Candidate best;
    for (uint32_t m = FlowIndex::occupied(b); m != 0; m &= m - 1)
        consider(b.pos[__builtin_ctz(m)], now_ns, best);
    return drop(best, now_ns);
}

[[gnu::always_inline]] inline void FlowTable::consider(uint32_t pos, uint64_t now_ns, Candidate& best) const noexcept
{
    const EarlyDrop c = drop_class(pos, now_ns);
    const uint64_t seen = _records[pos].last_seen_ns;
    if (c < best.cls || (c == best.cls && c != EarlyDrop::count && seen < best.last_seen))
        best = Candidate{pos, c, seen};
}

bool FlowTable::drop(const Candidate& victim, uint64_t now_ns) noexcept
{
    if (victim.cls == EarlyDrop::count)
        return false;
    Shard& s = _shards[shard_of(victim.pos)];
    if (!rte_spinlock_trylock(&s.lock))
        return false;
    Reason reason = Reason::evicted;
    if (victim.cls == EarlyDrop::timed_out) {
        // As when a packet finds its flow timed out (track()): its own reason, and the lag of an end the
        // cop had not made yet.
        reason = reason_of(victim.pos, now_ns);
        _counters.timeout_lag_ns.observe(now_ns - timeout_deadline_of(victim.pos));
    }
    end_flow(victim.pos, reason, now_ns);
    rte_spinlock_unlock(&s.lock);
    bump(_counters.early_dropped[static_cast<unsigned>(victim.cls)]);
    return true;
}

bool FlowTable::rearm(uint32_t pos) noexcept
{
    return _wheel->schedule(pos, wheel_deadline_of(pos));
}

Reason FlowTable::reason_of(uint32_t pos, uint64_t now_ns) const noexcept
{
    const FlowRecord& r = _records[pos];
    if (r.flags & FlowRecord::kReset)
        return Reason::reset;
    if (r.flags & FlowRecord::kKilled)
        return Reason::killed;
    // A timeout update's deadline stands for the inactivity deadline: its expiry is a timeout too.
    const uint64_t inactivity = r.timeout_slot != 0
                                    ? slot_deadline(r.timeout_slot)
                                    : r.last_seen_ns + inactivity_timeout_ns(_rules, r.flags, r.l4.tcp.state);
    if (_rules.active_timeout_ns) {
        const uint64_t active = _cold[pos].first_seen_ns + _rules.active_timeout_ns;
        if (active <= now_ns && active <= inactivity)
            return Reason::active;
    }
    return tcpstate::expiry_is_closed(r.l4.tcp.state) ? Reason::closed : Reason::inactivity;
}

void FlowTable::end_flow(uint32_t pos, Reason reason, uint64_t now_ns) noexcept
{
    retire(pos, reason, now_ns);
    remove(pos, probe_of(_records[pos].key));
}

void FlowTable::retire(uint32_t pos, Reason reason, uint64_t now_ns) noexcept
{
    emit(pos, events::Kind::destroyed, reason, now_ns);
    bump(_counters.flows_expired[static_cast<unsigned>(reason)]);
    const FlowRecord& r = _records[pos];
    const auto family = static_cast<size_t>(record_proto(r));
    bump(_counters.flows_expired_by_proto[family]);
    bump(_counters.ended_packets[family], r.packets[0] + r.packets[1]);
    bump(_counters.ended_bytes[family], r.bytes[0] + r.bytes[1]);
    --_live;
    _wheel->cancel(pos);
    store_release(_records[pos].flags, uint8_t(0));
}

void FlowTable::remove(uint32_t pos, const Probe& probe) noexcept
{
    _index.erase(probe, pos);
    _cold[pos].next_free = _free_head;
    _free_head = pos;
}

void FlowTable::emit(uint32_t pos, events::Kind kind, Reason reason, uint64_t now_ns) noexcept
{
    // No subscriber wants this kind now (a live follower's subscription while nobody follows): build nothing.
    if (_events == nullptr || !_events->wants(kind))
        return;
    events::Event e{};
    fill_event(pos, kind, now_ns, e);
    if (kind == events::Kind::destroyed) {
        e.reason_code = static_cast<uint8_t>(reason);
        e.reason = reason_name(reason);
    }
    _events->emit(e);
}

void FlowTable::report_invalid(uint32_t pos, tcpstate::WindowReason why, uint64_t now_ns) noexcept
{
    // Checked before the budget, so tokens and suppressions count only events someone would take.
    if (_events == nullptr || !_events->wants(events::Kind::updated, kIpProtoTcp))
        return;
    if (!_invalid_budget.take(now_ns)) {
        bump(_counters.events_invalid_suppressed);
        return;
    }
    events::Event e{};
    fill_event(pos, events::Kind::updated, now_ns, e);
    e.present |= events::kHasInvalid;
    e.reason_code = static_cast<uint8_t>(why);
    e.reason = why == tcpstate::WindowReason::none ? kInvalidForStateName : tcpstate::window_reason_name(why);
    _events->emit(e);
}

void FlowTable::fill_event(uint32_t pos, events::Kind kind, uint64_t now_ns, events::Event& e) const noexcept
{
    const FlowRecord& r = _records[pos];
    const FlowCold& c = _cold[pos];
    e.time_ns = now_ns;
    e.first_seen_ns = c.first_seen_ns;
    e.flow_id = make_flow_id(c.generation, pos); // as snapshot() reports it
    e.interims = c.exports;
    e.last_seen_ns = r.last_seen_ns;
    e.packets[0] = r.packets[0];
    e.packets[1] = r.packets[1];
    e.bytes[0] = r.bytes[0];
    e.bytes[1] = r.bytes[1];
    packet::key_endpoints(r.key, (r.flags & FlowRecord::kOrigIsLo) != 0, e.src, e.sport, e.dst, e.dport);
    e.vlan_outer = packet::key_vlan_outer(r.key);
    e.vlan_inner = packet::key_vlan_inner(r.key);
    e.lcore = _lcore;
    e.proto = r.key.proto;
    e.kind = kind;
    e.tcp_flags[0] = r.tcp_flags_seen[0];
    e.tcp_flags[1] = r.tcp_flags_seen[1];
    e.in_port = c.in_port;
    e.present = events::kHasFlowId | events::kHasTcpFlags | events::kHasInPort | events::kHasStatus;
    // The same bits for every protocol (flow_record.h asserts it).
    e.status = uint8_t((r.l4.tcp.seen_reply() ? events::kStatusSeenReply : 0) |
                       (r.l4.tcp.assured() ? events::kStatusAssured : 0));
    const bool tcp = r.key.proto == kIpProtoTcp;
    // TCP: tcpstate::State's value; the other protocols: protostate::Tracker's bits (family, replied, assured).
    e.state_code = tcp ? static_cast<uint8_t>(r.l4.tcp.state) : r.l4.other.bits;
    e.state = tcp ? tcpstate::state_name(r.l4.tcp.state) : protostate::state_name(r.l4.other.tracker());
    e.timeout_cap = static_cast<uint8_t>(cap_of(r.flags)); // with the state, what the flow's timeout was
    static_assert(uint8_t(tcpstate::Cap::max_retrans) == 1 && uint8_t(tcpstate::Cap::unacknowledged) == 2 &&
                      uint8_t(tcpstate::Cap::close) == 3,
                  "events::timeout_cap_name() numbers the caps as tcpstate::Cap does");
}

} // namespace flowcop::conntrack
