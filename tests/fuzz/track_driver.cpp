// SPDX-License-Identifier: BSD-3-Clause
// run_track(): one script through parse -> FlowTable, checked by the Oracle (see track_driver.h).
#include "track_driver.h"

#include "track_oracle.h"
#include "track_script.h"

#include <conntrack/flow_table.h>
#include <fragattr/fragment_attributor.h>
#include <packet/packet.h>
#include <packet/tcp_lite.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace flowcop::fuzz {

namespace {

// The largest frame a script can describe: 255 header bytes and 2^17 - 1 bytes of padding.
constexpr size_t kMaxFrame = 255 + (1u << 17) - 1;
constexpr uint64_t kFinalPassNs = 2 * 3600 * kSecNs;
constexpr unsigned kRecentKeys = 16;

// A zeroed buffer the frame is placed at the end of, so the frame's end is the allocation's end.
class FrameBuffer {
public:
    FrameBuffer() : _buf(new uint8_t[kMaxFrame]()) {}
    // Returns the frame: `header` bytes then zeros, ending at the buffer's end.
    const uint8_t* place(const uint8_t* header, uint32_t header_len, uint32_t pad_len)
    {
        _len = header_len;
        _at = _buf.get() + kMaxFrame - (header_len + pad_len);
        if (header_len)
            std::memcpy(_at, header, header_len);
        return _at;
    }
    // Restores the all-zero buffer (only the header bytes were written).
    void clear() { std::memset(_at, 0, _len); }

private:
    std::unique_ptr<uint8_t[]> _buf;
    uint8_t* _at = nullptr;
    uint32_t _len = 0;
};

const packet::Packet& lane_full(void* pkts, unsigned i) noexcept
{
    return static_cast<const packet::Packet*>(pkts)[i];
}

struct Burst {
    packet::Packet pkts[conntrack::kMaxBurst];
    const packet::Packet* ptrs[conntrack::kMaxBurst];
    uint64_t times[conntrack::kMaxBurst];
    fragattr::Held held[conntrack::kMaxBurst]; // what the attributor held for each first fragment
    unsigned n = 0;
};

// The fragment attributor of an all-protocols input, in its own aligned memory.
struct Fragments {
    struct Free {
        void operator()(void* p) const { std::free(p); }
    };
    explicit Fragments(const fragattr::Config& c)
        : memory(std::aligned_alloc(64, fragattr::FragmentAttributor::bytes_for(c))), attributor(c, memory.get())
    {}
    std::unique_ptr<void, Free> memory;
    fragattr::FragmentAttributor attributor;
};

const char* op_name(OpKind k)
{
    switch (k) {
    case OpKind::frame: return "frame";
    case OpKind::next_port: return "next_port";
    case OpKind::advance_cop: return "advance+cop";
    case OpKind::budget_cop: return "advance+budget cop";
    case OpKind::kill: return "kill";
    case OpKind::set_timeouts: return "set_timeouts";
    case OpKind::rebase: return "rebase_step";
    case OpKind::destroy_all: return "destroy_all";
    case OpKind::flush: return "flush";
    case OpKind::end: break;
    }
    return "end";
}

std::string endpoint(const uint8_t addr[16], uint16_t port)
{
    char buf[packet::kAddrStrLen];
    packet::format_addr(addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
}

void trace_frame(std::FILE* t, const packet::Packet& p, uint64_t now)
{
    std::fprintf(t, "    frame t=%.3f %u bytes %s", double(now - kStartNs) / kSecNs, p.ip_len,
                 packet::verdict_name(p.verdict));
    if (p.ip_version != 0) {
        uint8_t src[16], dst[16];
        uint16_t sport, dport;
        packet::key_endpoints(p.key, p.src_is_lo, src, sport, dst, dport);
        std::fprintf(t, " proto %u %s > %s flags 0x%02x vlan %u/%u port %u zone %u", p.key.proto,
                     endpoint(src, sport).c_str(), endpoint(dst, dport).c_str(), p.tcp_flags, p.vlan_outer,
                     p.vlan_inner, p.in_port, p.key.zone);
        if (p.extra.frag_flags)
            std::fprintf(t, " fragment id %u offset %u%s%s", p.extra.frag_id, p.extra.frag_offset,
                         (p.extra.frag_flags & packet::kFragMore) ? " more" : "",
                         (p.extra.frag_flags & packet::kFragAttributed) ? " attributed" : "");
    }
    std::fprintf(t, "\n");
}

void trace_flows(std::FILE* t, const conntrack::FlowTable& table, uint64_t now)
{
    std::vector<conntrack::FlowSnapshot> flows(table.capacity() + 1);
    flows.resize(table.snapshot(conntrack::SnapshotFilter{}, flows.data(), flows.size()));
    const conntrack::Counters& c = table.counters();
    std::fprintf(t, "    now t=%.3f, %zu flows, created %lu, expired %lu, cop passes %lu\n",
                 double(now - kStartNs) / kSecNs, flows.size(), c.flows_created, c.expired_total(), c.cop_passes);
    for (const conntrack::FlowSnapshot& f : flows) {
        uint8_t a[16], b[16];
        uint16_t pa, pb;
        packet::key_endpoints(f.key, f.orig_is_lo, a, pa, b, pb);
        std::fprintf(t,
                     "      %s %s > %s vlan %u/%u zone %u %s%s%s%s first %.3f last %.3f deadline %.3f pkts %lu/%lu\n",
                     conntrack::proto_name(f.proto), endpoint(a, pa).c_str(), endpoint(b, pb).c_str(),
                     packet::key_vlan_outer(f.key), packet::key_vlan_inner(f.key), f.key.zone, conntrack::state_name(f),
                     f.assured ? " assured" : "", f.reset ? " reset" : "", f.killed ? " killed" : "",
                     double(f.first_seen_ns - kStartNs) / kSecNs, double(f.last_seen_ns - kStartNs) / kSecNs,
                     (double(f.deadline_ns) - double(kStartNs)) / kSecNs, f.packets[0], f.packets[1]);
    }
}

} // namespace

std::string run_track(const uint8_t* data, size_t size, conntrack::Counters* final_counters, std::FILE* trace)
{
    if (size == 0)
        return {};
    const TrackSetup setup = TrackSetup::from_byte(data[0]);
    std::string error;
    std::unique_ptr<conntrack::FlowTable> table = conntrack::FlowTable::create(setup.table_config(), error);
    if (!table)
        return "cannot create the flow table: " + error;
    std::unique_ptr<Fragments> fragments;
    if (setup.all_protocols)
        fragments =
            std::make_unique<Fragments>(fragattr::Config{.capacity = kFragmentSlots, .hold_ns = kFragmentHoldNs});
    Oracle oracle(*table, setup, fragments ? &fragments->attributor.counters() : nullptr);
    static FrameBuffer frames; // 128 KiB, zeroed once per process
    Burst b;
    packet::FlowKey recent[kRecentKeys] = {};
    unsigned n_recent = 0;
    uint64_t now = kStartNs;
    unsigned port = 0; // the port the next frame arrives on
    unsigned bursts = 0;

    auto flush = [&] {
        if (b.n == 0)
            return;
        bool one_time = true;
        for (unsigned i = 1; i < b.n; ++i)
            one_time = one_time && b.times[i] == b.times[0];
        // Both entry points: one time for the burst (TSC clock), one per packet (packet clock); every other
        // one-time burst as the worker's steady lane feeds it (without held fragments: the lane has none),
        // in runs of lane packets through process_lite() and runs of others through process_burst().
        bool held = false;
        for (unsigned i = 0; i < b.n && fragments; ++i)
            held = held || b.held[i].packets != 0;
        if (one_time && (++bursts & 1) && !held && table->lite_ready()) {
            packet::TcpLite segs[conntrack::kMaxBurst];
            bool lite[conntrack::kMaxBurst];
            for (unsigned i = 0; i < b.n; ++i)
                lite[i] = packet::lite_of(b.pkts[i], segs[i]);
            // Every other lane burst in the other compiled copy of the lane (packet/lane_isa.h; the baseline
            // where the CPU runs only that one): the oracle holds for both.
            table->set_lane_isa((bursts & 2) != 0 ? packet::LaneIsa::v3 : packet::LaneIsa::baseline);
            for (unsigned start = 0, end = 0; start < b.n; start = end) {
                for (end = start + 1; end < b.n && lite[end] == lite[start];)
                    ++end;
                if (lite[start])
                    table->process_lite(segs + start, end - start, b.times[0], &lane_full, b.pkts + start);
                else
                    table->process_burst(b.ptrs + start, end - start, b.times[0]);
            }
        } else if (one_time) {
            table->process_burst(b.ptrs, b.n, b.times[0]);
        } else {
            table->process_burst(b.ptrs, b.n, b.times);
        }
        // As the worker does: what waited for a first fragment joins its flow once that was tracked.
        if (fragments)
            for (unsigned i = 0; i < b.n; ++i)
                if (b.held[i].packets != 0)
                    table->count_held_fragments(b.pkts[i], b.held[i].packets, b.held[i].bytes);
        if (trace) {
            std::fprintf(trace, "  burst of %u (%s)\n", b.n, one_time ? "one time" : "per-packet times");
            for (unsigned i = 0; i < b.n; ++i)
                trace_frame(trace, b.pkts[i], b.times[i]);
            trace_flows(trace, *table, b.times[b.n - 1]);
        }
        oracle.after_burst(b.ptrs, b.times, b.n, fragments ? b.held : nullptr);
        b.n = 0;
    };
    auto cop = [&](uint64_t fire_budget, uint64_t visit_budget) {
        if (fragments) // the worker sweeps the attributor before each cop pass
            fragments->attributor.expire(now, fragments->attributor.capacity());
        const conntrack::CopResult r = table->run_cop(now, fire_budget, visit_budget);
        if (trace) {
            std::fprintf(trace, "  cop at t=%.3f budgets %lu/%lu: fired %u visited %u%s\n",
                         double(now - kStartNs) / kSecNs, fire_budget, visit_budget, unsigned(r.wheel.fired),
                         unsigned(r.wheel.visited), r.wheel.budget_exhausted ? " budget exhausted" : "");
            trace_flows(trace, *table, now);
        }
        oracle.after_cop(now, fire_budget, visit_budget, r);
    };

    ScriptReader script(data + 1, size - 1);
    unsigned index = 0; // 1-based number of the op being run
    for (Op op = script.next(); op.kind != OpKind::end; op = script.next()) {
        ++index;
        if (op.kind != OpKind::frame && op.kind != OpKind::next_port)
            flush();
        if (trace && op.kind != OpKind::frame)
            std::fprintf(trace, "op %u: %s (dt %.3f s, index %u)\n", index, op_name(op.kind), double(op.dt_ns) / kSecNs,
                         op.index);
        switch (op.kind) {
        case OpKind::frame: {
            const uint64_t t = now + op.dt_ns;
            if (b.n == conntrack::kMaxBurst || (b.n > 0 && t - b.times[0] > kMaxBurstSpanNs))
                flush();
            now = t;
            const uint8_t* f = frames.place(op.bytes, op.header_len, op.pad_len);
            packet::Packet& p = b.pkts[b.n];
            packet::parse(f, op.header_len + op.pad_len, p);
            frames.clear();
            // Keyed as the worker keys it (Worker::handle): its port, --vlan-key, then the port's zone.
            p.in_port = uint16_t(port);
            packet::apply_vlan_key(p, setup.vlan_key);
            p.key.zone = port_zone(port);
            // Attributed in arrival order at its own time, before its burst is tracked, as the worker does.
            b.held[b.n] = fragments ? fragments->attributor.attribute(p, now) : fragattr::Held{};
            b.ptrs[b.n] = &p;
            b.times[b.n++] = now;
            if (p.verdict == packet::Verdict::tcp)
                recent[n_recent++ % kRecentKeys] = p.key;
            break;
        }
        case OpKind::next_port: port = (port + 1) % kScriptPorts; break;
        case OpKind::advance_cop:
            now += op.dt_ns;
            cop(UINT64_MAX, UINT64_MAX);
            break;
        case OpKind::budget_cop:
            now += op.dt_ns;
            cop(op.fire_budget, op.visit_budget);
            break;
        case OpKind::kill: {
            packet::FlowKey key{};
            if (n_recent > 0)
                key = recent[(n_recent - 1 - op.index % std::min(n_recent, kRecentKeys)) % kRecentKeys];
            const bool found = table->kill(key);
            oracle.after_kill(key, found);
            break;
        }
        case OpKind::set_timeouts: {
            const uint32_t active_s = op.active ? kActiveTimeoutS : 0;
            table->set_timeouts(timeout_preset(op.index), active_s);
            oracle.after_set_timeouts(timeout_preset(op.index), active_s);
            break;
        }
        case OpKind::rebase: {
            const uint32_t seen = table->rebase_step(op.index);
            oracle.after_rebase(op.index, seen);
            break;
        }
        case OpKind::destroy_all:
            table->destroy_all(now, conntrack::Reason::shutdown);
            oracle.after_destroy_all(now);
            break;
        case OpKind::flush:
        case OpKind::end: break;
        }
        if (!oracle.ok())
            return "op " + std::to_string(index) + ": " + oracle.failure();
    }
    flush();
    if (trace)
        std::fprintf(trace, "end of input: rebase if pending, then a full pass 2 h later\n");
    while (oracle.ok() && table->rebase_pending()) {
        const uint32_t seen = table->rebase_step(UINT32_MAX);
        oracle.after_rebase(UINT32_MAX, seen);
    }
    now += kFinalPassNs;
    if (oracle.ok())
        cop(UINT64_MAX, UINT64_MAX);
    oracle.expect_empty();
    if (final_counters)
        *final_counters = table->counters();
    if (!oracle.ok())
        return "end of input (the last burst, rebase and final pass): " + oracle.failure();
    return {};
}

} // namespace flowcop::fuzz
