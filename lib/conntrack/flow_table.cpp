// SPDX-License-Identifier: BSD-3-Clause
// FlowTable construction and the per-packet path (see flow_table.h).
#include <conntrack/flow_table.h>

#include <events/events.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace flowcop::conntrack {

namespace {

// rte_hash_crc() reads the key through uint64_t pointers, which is undefined for a FlowKey (2-byte
// alignment; UBSan caught a telemetry kill's key at an address 2 mod 8). The same CRC with memcpy
// loads gives the same values (plain unaligned moves on x86). Only ever called with
// key_len == sizeof(FlowKey), a multiple of 8.
uint64_t key_word(const void* key, size_t i) noexcept
{
    uint64_t word;
    std::memcpy(&word, static_cast<const uint8_t*>(key) + 8 * i, sizeof word);
    return word;
}

// The table's hash: CRC32-C of the key's five 8-byte words. Inline, so that process_burst() hashes a
// burst's keys itself and hands rte_hash the signatures (rte_hash_lookup_with_hash_bulk) instead of
// an indirect call per key; rte_hash calls the same function (hash_flow_key) for everything else.
inline uint32_t flow_hash(const void* key, uint32_t h = 0) noexcept
{
    static_assert(sizeof(packet::FlowKey) == 40, "flow_hash hashes five 8-byte words");
    for (size_t i = 0; i < 5; ++i)
        h = rte_hash_crc_8byte(key_word(key, i), h);
    return h;
}

uint32_t hash_flow_key(const void* key, uint32_t key_len, uint32_t init_val) noexcept
{
    (void)key_len; // always sizeof(FlowKey)
    return flow_hash(key, init_val);
}

// rte_hash compares keys of 16, 32, 48, ... bytes with inline vector code and every other size with
// memcmp(); a FlowKey is 40. Five 8-byte words, compared without a branch per word. Returns 0 when equal.
int flow_keys_differ(const void* a, const void* b, size_t key_len) noexcept
{
    (void)key_len; // always sizeof(FlowKey): the only key length this hash is created with
    uint64_t diff = 0;
    for (size_t i = 0; i < 5; ++i)
        diff |= key_word(a, i) ^ key_word(b, i);
    return diff != 0;
}

size_t heap_allocated(int socket) noexcept
{
    rte_malloc_socket_stats st{};
    if (rte_malloc_get_socket_stats(socket, &st) != 0)
        return 0;
    return st.heap_allocsz_bytes;
}

// rte_hash keeps keys in a flat key store (position p at slot p + 1) but exposes
// it only through rte_hash_get_key_with_position(), which also runs a lookup — a
// bucket walk that is not safe while the owner lcore inserts. Readers therefore
// address keys directly. The layout is found with two probe keys and checked, so
// a DPDK that stores keys differently fails here, loudly, instead of corrupting.
bool locate_key_store(rte_hash* h, const uint8_t*& base, size_t& stride, std::string& error)
{
    packet::FlowKey probe[2];
    std::memset(probe, 0xff, sizeof(probe)); // proto 0xff: no parsed packet has it
    probe[1].port_lo = 0;
    int32_t pos[2];
    void* at[2];
    for (int i = 0; i < 2; ++i) {
        pos[i] = rte_hash_add_key(h, &probe[i]);
        if (pos[i] < 0 || rte_hash_get_key_with_position(h, pos[i], &at[i]) != 0) {
            error = "flow table: cannot insert a probe key into the new rte_hash";
            return false;
        }
    }
    bool ok = pos[0] != pos[1];
    if (ok) {
        const auto* a0 = static_cast<const uint8_t*>(at[0]);
        const auto* a1 = static_cast<const uint8_t*>(at[1]);
        const ptrdiff_t d = (a1 - a0) / (pos[1] - pos[0]);
        ok = d > 0 && (a1 - a0) % (pos[1] - pos[0]) == 0;
        if (ok) {
            stride = static_cast<size_t>(d);
            base = a0 - static_cast<ptrdiff_t>(pos[0]) * d;
            ok = std::memcmp(base + size_t(pos[0]) * stride, &probe[0], sizeof(packet::FlowKey)) == 0 &&
                 std::memcmp(base + size_t(pos[1]) * stride, &probe[1], sizeof(packet::FlowKey)) == 0;
        }
    }
    rte_hash_del_key(h, &probe[0]);
    rte_hash_del_key(h, &probe[1]);
    if (!ok)
        error = "flow table: this DPDK's rte_hash key store layout is not the one flowcop relies on";
    return ok;
}

} // namespace

std::unique_ptr<FlowTable> FlowTable::create(const TableConfig& config, std::string& error)
{
    if (config.capacity < 8) {
        error = "flow table: capacity must be at least 8 flows";
        return nullptr;
    }
    if (const std::string e = timerwheel::validate(config.wheel); !e.empty()) {
        error = "flow table: " + e;
        return nullptr;
    }
    std::unique_ptr<FlowTable> t(new FlowTable());
    const int socket = config.socket_id >= 0 ? config.socket_id : int(rte_socket_id());
    const size_t heap_before = heap_allocated(socket);

    rte_hash_parameters hp{};
    hp.name = config.name.c_str();
    hp.entries = config.capacity;
    hp.key_len = sizeof(packet::FlowKey);
    hp.hash_func = hash_flow_key;
    hp.hash_func_init_val = 0; // process_burst() hashes with flow_hash(key), i.e. this 0
    hp.socket_id = socket;
    // No extendable buckets: they would cost 9 more bytes per flow (137 instead of
    // 128, measured). Without them an insert can fail on a bucket collision when
    // the table is nearly full (tests/conntrack measures the reachable load); that
    // case is handled exactly like a full table (create_flow).
    hp.extra_flag = 0;
    rte_errno = 0;
    t->_hash = rte_hash_create(&hp);
    if (t->_hash == nullptr) {
        // DPDK 22.11 leaves rte_errno unset, or ENOENT from an internal lookup, when
        // some of rte_hash_create's allocations fail.
        const bool oom = rte_errno == 0 || rte_errno == ENOENT || rte_errno == ENOMEM;
        error = "flow table '" + config.name + "': rte_hash_create failed for " + std::to_string(config.capacity) +
                " flows: " +
                (oom ? "out of DPDK memory (raise EAL -m / hugepages, or lower --flows-per-lcore)"
                     : rte_strerror(rte_errno));
        return nullptr;
    }
    rte_hash_set_cmp_func(t->_hash, flow_keys_differ);
    if (!locate_key_store(t->_hash, t->_key_store, t->_key_stride, error))
        return nullptr;

    t->_n_records = uint32_t(rte_hash_max_key_id(t->_hash)) + 1;
    t->_records = static_cast<FlowRecord*>(
        rte_zmalloc_socket("flowcop_flows", size_t(t->_n_records) * sizeof(FlowRecord), 64, socket));
    t->_n_shards = (t->_n_records + kShardSize - 1) / kShardSize;
    t->_shards =
        static_cast<Shard*>(rte_zmalloc_socket("flowcop_shards", size_t(t->_n_shards) * sizeof(Shard), 64, socket));
    if (t->_records == nullptr || t->_shards == nullptr) {
        error = "flow table '" + config.name + "': out of DPDK memory for " + std::to_string(config.capacity) +
                " flow records (raise EAL -m / hugepages, or lower --flows-per-lcore)";
        return nullptr;
    }
    for (uint32_t s = 0; s < t->_n_shards; ++s)
        rte_spinlock_init(&t->_shards[s].lock);
    for (uint32_t i = 0; i < t->_n_records; ++i)
        timerwheel::init_hook(t->_records[i].hook);

    try {
        t->_wheel = std::make_unique<Wheel>(config.wheel, HookOf{t->_records}, 0);
    } catch (const std::exception& e) {
        error = std::string("flow table: ") + e.what();
        return nullptr;
    }
    t->_capacity = config.capacity;
    t->_lcore = config.lcore;
    t->_loose_pickup = config.loose_pickup;
    t->set_timeouts(config.timeouts, config.active_timeout_s);
    t->_rebase_cursor = t->_n_records; // nothing to rebase yet
    t->_memory_bytes = heap_allocated(socket) - heap_before + t->_wheel->memory_bytes();
    return t;
}

FlowTable::~FlowTable()
{
    rte_hash_free(_hash);
    rte_free(_records);
    rte_free(_shards);
}

void FlowTable::hold_shard(uint32_t shard) const noexcept
{
    rte_spinlock_lock(&_shards[shard].lock);
}
void FlowTable::release_shard(uint32_t shard) const noexcept
{
    rte_spinlock_unlock(&_shards[shard].lock);
}

int32_t FlowTable::find(const packet::FlowKey& key) const noexcept
{
    return rte_hash_lookup(_hash, &key);
}

void FlowTable::process_burst(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
{
    uint64_t times[kMaxBurst];
    for (unsigned i = 0; i < n; ++i)
        times[i] = now_ns;
    process_burst(pkts, n, times);
}

void FlowTable::process_burst(const packet::Packet* const* pkts, unsigned n, const uint64_t* times) noexcept
{
    const void* keys[kMaxBurst];
    const packet::Packet* tcp[kMaxBurst];
    uint64_t when[kMaxBurst];
    unsigned nt = 0;
    for (unsigned i = 0; i < n; ++i) {
        const packet::Verdict v = pkts[i]->verdict;
        bump(_counters.packets_by_verdict[static_cast<unsigned>(v)]);
        if (v == packet::Verdict::tcp) {
            keys[nt] = &pkts[i]->key;
            when[nt] = times[i];
            tcp[nt++] = pkts[i];
        }
    }
    if (nt == 0)
        return;
    if (!_clock_started) [[unlikely]]
        start_clock(when[0]);
    uint32_t sig[kMaxBurst];
    for (unsigned j = 0; j < nt; ++j)
        sig[j] = flow_hash(keys[j]);
    int32_t pos[kMaxBurst];
    rte_hash_lookup_with_hash_bulk(_hash, keys, sig, nt, pos);
    for (unsigned j = 0; j < nt; ++j)
        if (pos[j] >= 0)
            rte_prefetch0(&_records[pos[j]]);
    const uint64_t ends_before = _ends;
    for (unsigned j = 0; j < nt; ++j) {
        int32_t p = pos[j];
        // A flow that ended earlier in this burst (reopen, eviction, expiry on
        // arrival) may have freed — and a new flow reused — a position looked up
        // before: check it still holds this key.
        if (p >= 0 && _ends != ends_before &&
            (!(_records[p].flags & FlowRecord::kInUse) || !(key_at(uint32_t(p)) == tcp[j]->key)))
            p = -1;
        // A miss may be a flow an earlier packet of this same burst created.
        if (p < 0)
            p = rte_hash_lookup(_hash, keys[j]);
        if (p >= 0)
            track(uint32_t(p), *tcp[j], when[j]);
        else
            create_flow(*tcp[j], when[j]);
    }
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
    // next tick still belong to the closing flow.
    if (!(r.flags & (FlowRecord::kReset | FlowRecord::kKilled)) && timeout_deadline(r) <= now_ns) [[unlikely]] {
        const uint32_t shard = shard_of(pos);
        hold_shard(shard);
        _counters.timeout_lag_ns.observe(now_ns - timeout_deadline(r));
        end_flow(pos, reason_of(r, now_ns), now_ns);
        release_shard(shard);
        create_flow(pkt, now_ns);
        return;
    }
    tcpstate::Tracker tracker = r.tcp;
    const tcpstate::State before = tracker.state;
    // steady(): the established flow's plain ACK, which step() would accept without a change.
    const tcpstate::Outcome outcome =
        tcpstate::steady(tracker, pkt.tcp_flags) ? tcpstate::Outcome::ok : tcpstate::step(tracker, dir, pkt.tcp_flags);

    if (outcome == tcpstate::Outcome::reopen) {
        // Port reuse of a finished flow: the old one ends and this SYN starts a new
        // one, possibly at the same position. It ended "closed" unless an RST or a
        // kill, waiting for the next tick, had already decided how it ended.
        const uint32_t shard = shard_of(pos);
        hold_shard(shard);
        end_flow(pos, (r.flags & (FlowRecord::kReset | FlowRecord::kKilled)) ? reason_of(r, now_ns) : Reason::closed,
                 now_ns);
        release_shard(shard);
        create_flow(pkt, now_ns);
        return;
    }
    const unsigned d = static_cast<unsigned>(dir);
    bump(r.packets[d]);
    bump(r.bytes[d], uint64_t(pkt.frame_len));
    if (outcome == tcpstate::Outcome::ignored) {
        // Not valid for the state: it counts in the flow's packets and bytes, but it
        // neither extends the deadline nor changes state, so garbage cannot keep a
        // flow alive.
        bump(_counters.tcp_invalid);
        return;
    }
    bump(_counters.tcp_tracked);
    store_relaxed(r.tcp, tracker);
    switch (outcome) {
    case tcpstate::Outcome::reset:
        store_relaxed(r.last_seen_ns, now_ns);
        store_relaxed(r.flags, uint8_t(r.flags | FlowRecord::kReset));
        rearm(pos);
        break;
    default:
        // The hot path: same state means a plain extension, no wheel work.
        store_relaxed(r.last_seen_ns, now_ns);
        if (tracker.state != before)
            rearm(pos);
        break;
    }
}

void FlowTable::create_flow(const packet::Packet& pkt, uint64_t now_ns) noexcept
{
    const tcpstate::State state = tcpstate::initial_state(pkt.tcp_flags, _loose_pickup);
    if (state == tcpstate::State::none) {
        bump(_counters.tcp_no_flow);
        return;
    }
    if (_live >= _capacity && !early_drop(now_ns)) {
        bump(_counters.tcp_table_full);
        return;
    }
    int32_t pos = rte_hash_add_key(_hash, &pkt.key);
    // A bucket collision in a nearly full table: make room as a full table would.
    for (unsigned retry = 0; pos == -ENOSPC && retry < kInsertRetries && early_drop(now_ns); ++retry)
        pos = rte_hash_add_key(_hash, &pkt.key);
    if (pos < 0) {
        bump(_counters.tcp_table_full);
        return;
    }
    init_record(uint32_t(pos), pkt, state, now_ns);
    bump(_counters.tcp_tracked);
}

void FlowTable::init_record(uint32_t pos, const packet::Packet& pkt, tcpstate::State state, uint64_t now_ns) noexcept
{
    FlowRecord& r = _records[pos];
    timerwheel::init_hook(r.hook);
    r.tcp = tcpstate::Tracker{state, 0};
    r.first_seen_ns = now_ns;
    r.last_seen_ns = now_ns;
    r.packets[0] = 1;
    r.packets[1] = 0;
    r.bytes[0] = pkt.frame_len;
    r.bytes[1] = 0;
    // Publish: a reader that sees kInUse sees the fields and the key above.
    store_release(r.flags, uint8_t(FlowRecord::kInUse | (pkt.src_is_lo ? FlowRecord::kOrigIsLo : 0)));
    ++_live;
    bump(_counters.flows_created);
    _wheel->schedule(pos, deadline_of(r));
    emit(pos, true, Reason::count, now_ns);
}

bool FlowTable::early_drop(uint64_t now_ns) noexcept
{
    bump(_counters.early_drop_attempts);
    int64_t victim = -1;
    uint64_t oldest = UINT64_MAX;
    for (unsigned k = 0; k < kEarlyDropSamples; ++k) {
        const uint32_t p = uint32_t(rte_rand_max(_n_records));
        const FlowRecord& r = _records[p];
        if ((r.flags & FlowRecord::kInUse) && !r.tcp.assured() && r.last_seen_ns < oldest) {
            victim = p;
            oldest = r.last_seen_ns;
        }
    }
    if (victim < 0)
        return false;
    Shard& s = _shards[shard_of(uint32_t(victim))];
    if (!rte_spinlock_trylock(&s.lock))
        return false;
    end_flow(uint32_t(victim), Reason::evicted, now_ns);
    rte_spinlock_unlock(&s.lock);
    return true;
}

void FlowTable::rearm(uint32_t pos) noexcept
{
    _wheel->schedule(pos, deadline_of(_records[pos]));
}

Reason FlowTable::reason_of(const FlowRecord& r, uint64_t now_ns) const noexcept
{
    if (r.flags & FlowRecord::kReset)
        return Reason::reset;
    if (r.flags & FlowRecord::kKilled)
        return Reason::killed;
    const uint64_t inactivity = r.last_seen_ns + _state_timeout_ns[static_cast<size_t>(r.tcp.state)];
    if (_active_timeout_ns && r.first_seen_ns + _active_timeout_ns <= now_ns &&
        r.first_seen_ns + _active_timeout_ns <= inactivity)
        return Reason::active;
    return tcpstate::expiry_is_closed(r.tcp.state) ? Reason::closed : Reason::inactivity;
}

void FlowTable::end_flow(uint32_t pos, Reason reason, uint64_t now_ns) noexcept
{
    retire(pos, reason, now_ns);
    delete_key(pos, flow_hash(&key_at(pos)));
}

void FlowTable::retire(uint32_t pos, Reason reason, uint64_t now_ns) noexcept
{
    emit(pos, false, reason, now_ns);
    bump(_counters.flows_expired[static_cast<unsigned>(reason)]);
    --_live;
    ++_ends;
    _wheel->cancel(pos);
    store_release(_records[pos].flags, uint8_t(0));
}

void FlowTable::delete_key(uint32_t pos, uint32_t sig) noexcept
{
    const packet::FlowKey key = key_at(pos); // the key store slot is freed by the delete
    rte_hash_del_key_with_hash(_hash, &key, sig);
}

void FlowTable::delete_deferred() noexcept
{
    // All the keys' hashes first, so that their loads are in flight together; then the deletes,
    // whose bucket reads nothing here serialises.
    uint32_t sig[kDeleteBatch];
    for (unsigned i = 0; i < _n_deferred; ++i)
        sig[i] = flow_hash(&key_at(_deferred[i]));
    for (unsigned i = 0; i < _n_deferred; ++i)
        delete_key(_deferred[i], sig[i]);
    _n_deferred = 0;
}

void FlowTable::emit(uint32_t pos, bool created, Reason reason, uint64_t now_ns) noexcept
{
    if (_events == nullptr)
        return;
    const FlowRecord& r = _records[pos];
    const packet::FlowKey& key = key_at(pos);
    events::Event e{};
    e.time_ns = now_ns;
    e.first_seen_ns = r.first_seen_ns;
    e.last_seen_ns = r.last_seen_ns;
    e.packets[0] = r.packets[0];
    e.packets[1] = r.packets[1];
    e.bytes[0] = r.bytes[0];
    e.bytes[1] = r.bytes[1];
    packet::key_endpoints(key, (r.flags & FlowRecord::kOrigIsLo) != 0, e.src, e.sport, e.dst, e.dport);
    e.vlan_outer = packet::key_vlan_outer(key);
    e.vlan_inner = packet::key_vlan_inner(key);
    e.lcore = _lcore;
    e.proto = key.proto;
    e.kind = created ? events::Kind::created : events::Kind::destroyed;
    e.state = tcpstate::state_name(r.tcp.state);
    e.reason = created ? nullptr : reason_name(reason);
    _events->emit(e);
}

} // namespace flowcop::conntrack
