// SPDX-License-Identifier: BSD-3-Clause
// The fragment attributor's table (fragment_attributor.h).
#include <fragattr/fragment_attributor.h>

#include <packet/mix.h>
#include <stats/relaxed.h>

#include <cstddef>
#include <cstring>

namespace flowcop::fragattr {

using packet::FlowKey;
using stats::bump;

// One datagram, one cache line. `state` packs the held-frame count with two flags so that the entry
// stays one line with a key of up to 42 bytes.
struct alignas(64) FragmentAttributor::Entry {
    static constexpr uint16_t kCountMask = 0x3fff; // frames held (a datagram has at most 8192 fragments)
    static constexpr uint16_t kResolved = 0x4000;  // the first fragment was seen: key's ports are the flow's
    static constexpr uint16_t kSrcIsLo = 0x8000;   // the datagram's direction

    uint64_t expires_ns; // 0: free
    uint32_t id;
    uint32_t held_bytes; // IP bytes held (Packet::ip_len, saturating)
    FlowKey key;         // ports 0 until resolved
    uint16_t covered;    // fragmentable-part bytes seen (saturating)
    uint16_t total;      // the datagram's fragmentable-part length once its last fragment came, else 0
    uint16_t state;

    uint16_t held() const noexcept { return state & kCountMask; }
    bool resolved() const noexcept { return (state & kResolved) != 0; }
    // Every byte of a resolved datagram was seen (by count): its slot is free for any insert, and until
    // one takes it a duplicate or late fragment still finds its flow.
    bool complete() const noexcept { return resolved() && total != 0 && covered >= total; }
};
static_assert(sizeof(FragmentAttributor::Entry) == 64, "an entry is one cache line");

namespace {

// The key bytes that name a datagram: everything but the ports.
constexpr size_t kPortsAt = offsetof(FlowKey, port_lo);
constexpr size_t kAfterPorts = offsetof(FlowKey, proto);
constexpr size_t kTailBytes = sizeof(FlowKey) - kAfterPorts;
static_assert(kPortsAt % 8 == 0 && kAfterPorts == kPortsAt + 4 && kTailBytes <= 8,
              "addresses in whole words, then the ports, then at most 8 bytes of protocol, VLAN and zone");

bool same_datagram(const FlowKey& a, const FlowKey& b) noexcept
{
    const auto* x = reinterpret_cast<const uint8_t*>(&a);
    const auto* y = reinterpret_cast<const uint8_t*>(&b);
    return std::memcmp(x, y, kPortsAt) == 0 && std::memcmp(x + kAfterPorts, y + kAfterPorts, kTailBytes) == 0;
}

uint64_t datagram_hash(const FlowKey& k, uint32_t id, bool src_is_lo, uint64_t seed) noexcept
{
    const auto* b = reinterpret_cast<const uint8_t*>(&k);
    uint64_t h = seed ^ ((uint64_t{id} << 1) | (src_is_lo ? 1 : 0));
    for (size_t i = 0; i < kPortsAt; i += 8) {
        uint64_t w;
        std::memcpy(&w, b + i, 8);
        h = packet::fmix64(h ^ w) + i;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, b + kAfterPorts, kTailBytes);
    return packet::fmix64(h ^ tail);
}

uint32_t buckets_for(uint32_t capacity) noexcept
{
    const uint32_t want = capacity / kWays + (capacity % kWays != 0);
    uint32_t n = 1;
    while (n < want && n < (1u << 30))
        n <<= 1;
    return n;
}

uint16_t saturate16(uint32_t v) noexcept
{
    return v > 0xffff ? 0xffff : static_cast<uint16_t>(v);
}

} // namespace

size_t FragmentAttributor::bytes_for(const Config& config) noexcept
{
    return size_t{buckets_for(config.capacity)} * kWays * sizeof(Entry);
}

FragmentAttributor::FragmentAttributor(const Config& config, void* memory) noexcept
    : _entries(static_cast<Entry*>(memory)), _mask(buckets_for(config.capacity) - 1),
      _hold_ns(config.hold_ns != 0 ? config.hold_ns : 1), _seed(config.seed)
{
    std::memset(memory, 0, bytes_for(config));
}

FragmentAttributor::Entry* FragmentAttributor::bucket_of(const FlowKey& key, uint32_t id, bool src_is_lo) const noexcept
{
    return _entries + size_t(datagram_hash(key, id, src_is_lo, _seed) & _mask) * kWays;
}

FragmentAttributor::Entry* FragmentAttributor::find(Entry* bucket, const packet::Packet& p,
                                                    uint64_t now_ns) const noexcept
{
    const uint16_t dir = p.src_is_lo ? Entry::kSrcIsLo : 0;
    for (unsigned w = 0; w < kWays; ++w) {
        Entry& e = bucket[w];
        if (e.expires_ns > now_ns && e.id == p.extra.frag_id && (e.state & Entry::kSrcIsLo) == dir &&
            same_datagram(e.key, p.key))
            return &e;
    }
    return nullptr;
}

void FragmentAttributor::release(Entry& e, bool evicted) noexcept
{
    if (const uint16_t n = e.held(); n != 0) {
        bump(_counters.unattributed, uint64_t{n});
        bump(_counters.pending, uint64_t(0) - n);
    }
    if (evicted)
        bump(_counters.evicted);
    e.expires_ns = 0;
    e.state = 0;
}

// A bucket entry to (re)use: a free one, else an expired or completed one (released), else the least
// recently touched one this caller may evict (released, counted evicted); nullptr if none may be taken.
FragmentAttributor::Entry* FragmentAttributor::take(Entry* bucket, uint64_t now_ns, bool may_evict_resolved) noexcept
{
    for (unsigned w = 0; w < kWays; ++w) {
        Entry& e = bucket[w];
        if (e.expires_ns == 0)
            return &e;
        if (e.expires_ns <= now_ns || e.complete()) {
            release(e, false);
            return &e;
        }
    }
    Entry* oldest = nullptr;
    for (unsigned w = 0; w < kWays; ++w) {
        Entry& e = bucket[w];
        if ((may_evict_resolved || !e.resolved()) && (oldest == nullptr || e.expires_ns < oldest->expires_ns))
            oldest = &e;
    }
    if (oldest != nullptr)
        release(*oldest, true);
    return oldest;
}

// Adds p's bytes to its datagram and extends the entry. A resolved datagram whose every byte was seen
// is counted completed once; its slot is then free for the next insert that needs one (take()), but
// it stays findable until then, so a duplicate that arrives after the count completed still finds
// its flow. A pending datagram never completes: duplicates can inflate its count, and its first
// fragment is still due.
void FragmentAttributor::account(Entry& e, const packet::Packet& p, uint64_t now_ns, bool was_complete) noexcept
{
    e.covered = saturate16(uint32_t{e.covered} + p.extra.frag_data_len);
    if (!(p.extra.frag_flags & packet::kFragMore))
        e.total = saturate16(uint32_t{p.extra.frag_offset} + p.extra.frag_data_len);
    e.expires_ns = now_ns + _hold_ns;
    if (!was_complete && e.complete())
        bump(_counters.completed);
}

Held FragmentAttributor::first(const packet::Packet& p, uint64_t now_ns) noexcept
{
    bump(_counters.first_fragments);
    Entry* bucket = bucket_of(p.key, p.extra.frag_id, p.src_is_lo);
    Entry* e = find(bucket, p, now_ns);
    Held held;
    // Only a duplicate first fragment finds its datagram complete already (a pending one never is).
    const bool was_complete = e != nullptr && e->complete() && e->key == p.key;
    if (e != nullptr && !e->resolved()) {
        // Its later fragments came first: they join the flow, and their bytes count towards completion.
        held = {e->held(), e->held_bytes};
        bump(_counters.attributed_late, uint64_t{held.packets});
        bump(_counters.pending, uint64_t(0) - held.packets);
    } else if (e == nullptr || !(e->key == p.key)) {
        // New, or the id reused by a new datagram of another flow: this one's ports, and its byte
        // count from here. (A duplicate first fragment keeps the entry and its count.)
        if (e == nullptr)
            e = take(bucket, now_ns, true); // never nullptr: a first fragment may evict anything
        e->id = p.extra.frag_id;
        e->covered = 0;
        e->total = 0;
    }
    e->key = p.key;
    e->held_bytes = 0;
    e->state = static_cast<uint16_t>(Entry::kResolved | (p.src_is_lo ? Entry::kSrcIsLo : 0));
    account(*e, p, now_ns, was_complete);
    return held;
}

bool FragmentAttributor::later(packet::Packet& p, uint64_t now_ns) noexcept
{
    Entry* bucket = bucket_of(p.key, p.extra.frag_id, p.src_is_lo);
    Entry* e = find(bucket, p, now_ns);
    if (e != nullptr && e->resolved()) {
        p.key.port_lo = e->key.port_lo;
        p.key.port_hi = e->key.port_hi;
        p.sport = p.src_is_lo ? p.key.port_lo : p.key.port_hi;
        p.dport = p.src_is_lo ? p.key.port_hi : p.key.port_lo;
        bump(_counters.attributed);
        account(*e, p, now_ns, e->complete());
        return true;
    }
    if (e == nullptr) {
        e = take(bucket, now_ns, false);
        if (e == nullptr) {
            bump(_counters.unattributed);
            return false;
        }
        e->id = p.extra.frag_id;
        e->key = p.key;
        e->key.port_lo = e->key.port_hi = 0;
        e->held_bytes = 0;
        e->covered = 0;
        e->total = 0;
        e->state = p.src_is_lo ? Entry::kSrcIsLo : 0;
    } else if (e->held() == Entry::kCountMask) {
        bump(_counters.unattributed); // more frames than a datagram can have: not held
        return false;
    }
    ++e->state; // one more frame held (the count is the low bits)
    e->held_bytes = e->held_bytes + p.ip_len < e->held_bytes ? UINT32_MAX : e->held_bytes + p.ip_len;
    bump(_counters.pending);
    account(*e, p, now_ns, false); // pending: never complete
    return false;
}

uint32_t FragmentAttributor::expire(uint64_t now_ns, uint32_t max_entries) noexcept
{
    const uint32_t n = (_mask + 1) * kWays;
    const uint32_t visits = max_entries < n ? max_entries : n;
    for (uint32_t i = 0; i < visits; ++i) {
        Entry& e = _entries[_cursor];
        if (e.expires_ns != 0 && e.expires_ns <= now_ns)
            release(e, false);
        _cursor = _cursor + 1 == n ? 0 : _cursor + 1;
    }
    return visits;
}

uint32_t FragmentAttributor::live(uint64_t now_ns) const noexcept
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < (_mask + 1) * kWays; ++i)
        n += _entries[i].expires_ns > now_ns && !_entries[i].complete();
    return n;
}

} // namespace flowcop::fragattr
