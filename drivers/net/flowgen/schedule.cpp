// SPDX-License-Identifier: BSD-3-Clause
#include "schedule.h"

#include <algorithm>

namespace flowcop::flowgen::detail {
namespace {

// Flow::step values. 0 is "established" (in the round robin); the rest name the segment due next.
constexpr uint8_t kStepEstablished = 0;
constexpr uint8_t kStepSynAck = 1, kStepHandshakeAck = 2; // server SYN-ACK, client ACK
constexpr uint8_t kStepFinAck = 3, kStepFin2 = 4, kStepLastAck = 5;

constexpr uint16_t kWindow = 64240; // Linux's initial receive window with a 1460-byte MSS
constexpr uint64_t kMaxLifeSlots = uint64_t{1} << 62;

uint64_t slots_of_ms(uint64_t ms, uint64_t pps)
{
    return ms / 1000 * pps + ms % 1000 * pps / 1000;
}

uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

} // namespace

Schedule::Schedule(const Config& cfg, uint16_t payload_v4, uint16_t payload_v6)
    : _rng(cfg.seed), _pps(cfg.pps),
      _end_slot(cfg.duration_ms != 0 ? slots_of_ms(cfg.duration_ms, cfg.pps) : UINT64_MAX), _max_packets(cfg.packets),
      _key(mix64(cfg.seed + 0x7475706c65ULL)),
      _lifetime_slots(static_cast<double>(cfg.lifetime_ms) * static_cast<double>(cfg.pps) / 1000.0),
      _exp(cfg.lifetime_dist == LifetimeDist::exp), _idle_pct(cfg.idle_pct), _rst_pct(cfg.rst_pct),
      _ipv6_pct(cfg.ipv6_pct), _payload{payload_v4, payload_v6}, _prefill(cfg.flows), _next_arrival(0),
      // 1/16 slack over `flows`: exponential lifetimes make concurrency Poisson (sd sqrt(flows)), and
      // flows outlive `lifetime` by up to one round-robin cycle before their closing turn.
      _cap(cfg.flows + cfg.flows / 16 + 64), _rtt(std::max<uint64_t>(1, cfg.pps * kRttUs / 1'000'000)),
      _wave_armed(cfg.wave.has_value())
{
    // Arrival interval pps/rate slots, as the exact fraction num/den.
    const uint64_t num = cfg.new_flow_rate != 0 ? cfg.pps : cfg.pps * cfg.lifetime_ms;
    const uint64_t den = cfg.new_flow_rate != 0 ? cfg.new_flow_rate : cfg.flows * 1000;
    _arr_whole = num / den;
    _arr_rem = num % den;
    _arr_den = den;
    _prefill = 0;
    advance_arrival(); // first arrival after the initial ones
    _prefill = cfg.flows;

    _rr.reset(new Flow[_cap]); // default-initialised: pages are touched as flows arrive
    const uint64_t fifo_cap = pow2_at_least(_rtt + 2);
    _fifo.reset(new Pending[fifo_cap]);
    _fifo_mask = fifo_cap - 1;
    if (cfg.wave) {
        _wave_slot = cfg.wave->at_s * cfg.pps;
        _wave_end = _wave_slot + cfg.pps;
        _wave_flows = cfg.wave->flows;
    }
}

bool Schedule::next(Segment& seg, uint64_t& slot) noexcept
{
    while (!_finished) {
        if ((_max_packets != 0 && _stats.packets >= _max_packets) || _slot >= _end_slot) {
            _finished = _stats.finished = true;
            break;
        }
        if (_wave_armed && _slot >= _wave_slot) {
            _wave_armed = false;
            _wave_left = _wave_flows;
        }
        if (_wave_left != 0 && _slot >= _wave_end)
            _wave_left = 0; // too few established flows: the wave is over with its second
        if (emit(seg)) {
            slot = _slot++;
            ++_stats.packets;
            // Say so as soon as it is known, so a consumer need not ask for one more frame to learn it.
            if ((_max_packets != 0 && _stats.packets >= _max_packets) || _slot >= _end_slot)
                _finished = _stats.finished = true;
            return true;
        }
        _slot = next_event();
    }
    return false;
}

bool Schedule::emit(Segment& seg) noexcept
{
    if (fast_lane(seg))
        return true;
    while (_prefill != 0 || _next_arrival <= _slot) {
        if (_stats.active_flows < _cap) {
            arrive(seg);
            return true;
        }
        ++_stats.arrivals_dropped;
        advance_arrival();
    }
    return data_turn(seg);
}

uint64_t Schedule::next_event() const noexcept
{
    uint64_t t = std::min(_end_slot, _next_arrival); // _prefill is 0 here: arrivals would be due now
    if (_fifo_size != 0)
        t = std::min(t, _fifo[_fifo_head].due);
    if (_wave_armed)
        t = std::min(t, _wave_slot);
    return std::max(t, _slot + 1);
}

void Schedule::advance_arrival() noexcept
{
    if (_prefill != 0) {
        --_prefill;
        return;
    }
    _next_arrival += _arr_whole;
    _arr_acc += _arr_rem;
    if (_arr_acc >= _arr_den) {
        _arr_acc -= _arr_den;
        ++_next_arrival;
    }
}

void Schedule::arrive(Segment& seg) noexcept
{
    const bool initial = _prefill != 0;
    advance_arrival();
    Flow f;
    assign_tuple(f, _serial++, _key);
    const uint64_t isn = _rng.next();
    f.client_next = static_cast<uint32_t>(isn);
    f.server_next = static_cast<uint32_t>(isn >> 32);
    const uint32_t p = _rng.percent();
    const Fate fate = p < _idle_pct ? Fate::idle : p < _idle_pct + _rst_pct ? Fate::rst : Fate::fin;
    const bool server_closes = (_rng.next() & 1) != 0;
    const bool ipv6 = _rng.percent() < _ipv6_pct;
    f.bits = static_cast<uint8_t>(static_cast<uint8_t>(fate) | (server_closes ? kBitServerCloses : 0) |
                                  (ipv6 ? kBitIpv6 : 0));
    double life = _lifetime_slots;
    if (_exp)
        life = _rng.exponential(_lifetime_slots); // memoryless: residual life of a running flow too
    else if (initial)
        life = _rng.unit() * _lifetime_slots; // residual life of a flow already running
    f.end_slot = _slot + (life >= static_cast<double>(kMaxLifeSlots) ? kMaxLifeSlots : static_cast<uint64_t>(life));
    f.data_sent = 0;
    f.step = kStepSynAck;
    f.unused = 0;
    segment(f, true, kTcpSyn, 0, seg);
    push(f);
    ++_stats.flows_started;
    ++_stats.active_flows;
}

bool Schedule::fast_lane(Segment& seg) noexcept
{
    if (_fifo_size == 0 || _fifo[_fifo_head].due > _slot)
        return false;
    Flow f = _fifo[_fifo_head].flow;
    _fifo_head = (_fifo_head + 1) & _fifo_mask;
    --_fifo_size;
    const bool closer_is_client = !f.server_closes();
    switch (f.step) {
    case kStepSynAck:
        segment(f, false, kTcpSyn | kTcpAck, 0, seg);
        f.step = kStepHandshakeAck;
        push(f);
        break;
    case kStepHandshakeAck:
        segment(f, true, kTcpAck, 0, seg);
        f.step = kStepEstablished;
        _rr[_rr_size++] = f; // _rr_size <= active_flows <= _cap
        break;
    case kStepFinAck:
        segment(f, !closer_is_client, kTcpAck, 0, seg);
        f.step = kStepFin2;
        push(f);
        break;
    case kStepFin2:
        segment(f, !closer_is_client, kTcpFin | kTcpAck, 0, seg);
        f.step = kStepLastAck;
        push(f);
        break;
    default: // step_last_ack
        segment(f, closer_is_client, kTcpAck, 0, seg);
        ++_stats.flows_fin;
        --_stats.active_flows;
        break;
    }
    return true;
}

bool Schedule::data_turn(Segment& seg) noexcept
{
    while (_rr_size != 0) {
        if (_cursor >= _rr_size)
            _cursor = 0;
        Flow& f = _rr[_cursor];
        const bool from_client = (f.bits & kBitServerData) == 0;
        if (_wave_left != 0) {
            segment(f, from_client, kTcpPsh | kTcpAck, _payload[f.ipv6() ? 1 : 0], seg);
            remove_turn();
            --_wave_left;
            ++_stats.wave_flows;
            --_stats.active_flows;
            return true;
        }
        if (_slot >= f.end_slot && f.data_sent >= 2) {
            switch (f.fate()) {
            case Fate::idle:
                remove_turn();
                ++_stats.flows_idle;
                --_stats.active_flows;
                continue; // silent: this slot goes to the next flow
            case Fate::rst:
                segment(f, !f.server_closes(), kTcpRst | kTcpAck, 0, seg);
                remove_turn();
                ++_stats.flows_rst;
                --_stats.active_flows;
                return true;
            case Fate::fin:
                segment(f, !f.server_closes(), kTcpFin | kTcpAck, 0, seg);
                f.step = kStepFinAck;
                push(f);
                remove_turn();
                return true;
            }
        }
        segment(f, from_client, kTcpPsh | kTcpAck, _payload[f.ipv6() ? 1 : 0], seg);
        f.bits ^= kBitServerData;
        if (f.data_sent < 255)
            ++f.data_sent;
        ++_cursor;
        return true;
    }
    return false;
}

void Schedule::push(const Flow& f) noexcept
{
    // Never full: see the bound in schedule.h (capacity >= rtt + 2).
    Pending& p = _fifo[(_fifo_head + _fifo_size) & _fifo_mask];
    p.flow = f;
    p.due = _slot + _rtt;
    ++_fifo_size;
}

void Schedule::remove_turn() noexcept
{
    _rr[_cursor] = _rr[--_rr_size];
}

void Schedule::segment(Flow& f, bool from_client, uint8_t flags, uint16_t payload, Segment& seg) const noexcept
{
    uint32_t& own_next = from_client ? f.client_next : f.server_next;
    seg.src_ip = from_client ? f.client_ip : f.server_ip;
    seg.dst_ip = from_client ? f.server_ip : f.client_ip;
    seg.sport = from_client ? f.client_port : f.server_port;
    seg.dport = from_client ? f.server_port : f.client_port;
    seg.seq = own_next;
    seg.ack = (flags & kTcpAck) != 0 ? (from_client ? f.server_next : f.client_next) : 0;
    seg.payload = payload;
    seg.window = (flags & kTcpRst) != 0 ? 0 : kWindow;
    seg.flags = flags;
    seg.ipv6 = f.ipv6();
    seg.from_client = from_client;
    own_next += payload + ((flags & (kTcpSyn | kTcpFin)) != 0 ? 1u : 0u);
}

} // namespace flowcop::flowgen::detail
