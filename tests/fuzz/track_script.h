// SPDX-License-Identifier: BSD-3-Clause
// The input language of the tracking fuzz target (fuzz_track.cpp): a byte string read as a
// script of frames and control operations for one FlowTable on a virtual clock.
//
// Contract. Every byte string is a valid script (a fuzzer's mutation is never rejected): the
// first byte selects the table setup (TrackSetup), the rest is a sequence of ops, each starting
// with one op byte c; an op cut short by the end of the input reads what is there (a frame gets
// fewer header bytes, a missing length byte is 0). ScriptWriter produces exactly what
// ScriptReader reads, for the seed corpus (make_corpus.cpp) and for tests.
//
//   c < 0x80  frame: then p0 p1 h and h header bytes. The packet clock first advances by
//             (c >> 1) & 0x3f ms (per-packet times inside one burst), then the frame is the h
//             header bytes followed by pad = (c & 1) << 16 | p1 << 8 | p0 zero bytes (so a large
//             frame, even a > 64 KiB BIG TCP one, costs 4 + h input bytes, and mutations land in
//             headers, not in payload).
//   0x80-0xbf advance the clock by advance_ns(c & 0x3f), then run the cop with unlimited budgets.
//   0xc0-0xdf advance the clock by ((c >> 3) & 3) s, then run the cop with fire budget
//             1 << (c & 3) and visit budget equal to it (c & 4) or 16 times it (the flow table's
//             default factor): passes cut short by a budget.
//   0xe0-0xef kill the flow of the (c & 0x0f)-th most recent TCP packet (a miss is fine).
//   0xf0-0xf7 set_timeouts(preset c & 3, active timeout on if c & 4).
//   0xf8-0xfb rebase_step(1, 8, 64 or 512 records).
//   0xfc      the frames after it arrive on the next port (0, 1, 2, 3, then 0 again; the first frame
//             on port 0): not a control op, the burst goes on (a worker's handed-off bursts mix
//             ports). Each frame is keyed as the worker keys it: --vlan-key (TrackSetup::vlan_key),
//             then its port's zone (port_zone(): --port-zone 1:7 2:7 3:9).
//   0xfe      destroy_all(now, shutdown) (the table is then reused).
//   other     end the current burst.
// Frames accumulate into a burst that ends at any control op, at kMaxBurst frames, or when its
// time span would exceed kMaxBurstSpanNs; every control op ends the burst first.
#pragma once

#include <conntrack/flow_table.h>
#include <packet/key_policy.h>
#include <tcpstate/tcp_state.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowcop::fuzz {

inline constexpr uint64_t kSecNs = 1'000'000'000ull;
inline constexpr uint64_t kMsNs = 1'000'000ull;
// Half a second past a whole second, so deadlines are not all on tick boundaries.
inline constexpr uint64_t kStartNs = 1'700'000'000ull * kSecNs + 500 * kMsNs;
// Below every timeout preset's shortest timeout (1 s), so no flow can be created and then expire
// on arrival within one burst: the oracle's burst rules rely on it.
inline constexpr uint64_t kMaxBurstSpanNs = 500 * kMsNs;

// Clock steps of the 0x80 ops: 100 ms steps up to 3.9 s (around the 1 s tick and the short
// timeouts), then 4 s steps up to 96 s (past the 16-tick ring and the 25 s active timeout).
inline constexpr uint64_t advance_ns(unsigned v) noexcept
{
    return v < 40 ? uint64_t(v) * 100 * kMsNs : uint64_t(v - 39) * 4 * kSecNs;
}

// Timeout presets. 0: short timeouts; 1: zeros, so the default catch-all applies; 2: everything
// 1 s (the most expiry traffic); 3: longer than the wheel's 16-tick range (clamping, revisits).
tcpstate::Timeouts timeout_preset(unsigned i) noexcept;
inline constexpr uint32_t kActiveTimeoutS = 25;
// UDP unreplied 3 s, UDP stream 6 s, ICMP 2 s, other 4 s: each above the burst span and the 2 s UDP
// stream age, within the wheel's 16 s, so every rule shows within a few clock steps.
inline constexpr protostate::Timeouts kProtoTimeouts{{3, 6, 2, 4}};
// A small attributor (so its buckets fill and evict) whose entries outlive a burst.
inline constexpr uint32_t kFragmentSlots = 16;
inline constexpr uint64_t kFragmentHoldNs = kSecNs;

// The zones of the script's ports, as `--port-zone 1:7 --port-zone 2:7 --port-zone 3:9` sets them:
// port 0 has none (zone 0), ports 1 and 2 share zone 7 (one flow whichever of them a packet comes
// in on), port 3 is zone 9 (the same tuple there is another flow).
inline constexpr unsigned kScriptPorts = 4;
inline constexpr uint16_t kPortZones[kScriptPorts] = {0, 7, 7, 9};
inline constexpr uint16_t port_zone(unsigned port) noexcept
{
    return kPortZones[port % kScriptPorts];
}

// The table every input starts with, from its first byte: bit 0 loose pickup, bits 1-2 the
// timeout preset, bit 3 the active timeout, bit 4 the smallest table (8 flows, full at once)
// instead of 256 flows (eviction and table-full paths without thousands of frames), bit 5 every
// protocol tracked (UDP, ICMP/ICMPv6, other; kProtoTimeouts) with the frames' fragments through a
// fragment attributor as the worker runs one (kFragmentSlots datagrams, kFragmentHoldNs), instead
// of TCP only. Bits 6-7 the --vlan-key mode: 0 both, 1 outer, 2 none, 3 both.
struct TrackSetup {
    bool loose_pickup = true;
    unsigned preset = 0;
    bool active = false;
    uint32_t capacity = 256;
    bool all_protocols = false;
    packet::VlanKey vlan_key = packet::VlanKey::both;
    static TrackSetup from_byte(uint8_t b) noexcept;
    uint8_t to_byte() const noexcept;
    conntrack::TableConfig table_config() const;
};
// 16 one-second buckets: deadlines beyond 15 s are clamped and revisited.
inline constexpr uint32_t kWheelBuckets = 16;
inline constexpr uint64_t kTickNs = kSecNs;

enum class OpKind { frame, next_port, advance_cop, budget_cop, kill, set_timeouts, rebase, destroy_all, flush, end };

struct Op {
    OpKind kind = OpKind::end;
    const uint8_t* bytes = nullptr; // frame: the header bytes (inside the input)
    uint32_t header_len = 0;
    uint32_t pad_len = 0;
    uint64_t dt_ns = 0; // frame: packet clock advance; advance_cop: clock advance
    uint64_t fire_budget = 0, visit_budget = 0;
    unsigned index = 0;  // kill: which recent key; set_timeouts: preset; rebase: records
    bool active = false; // set_timeouts
};

class ScriptReader {
public:
    ScriptReader(const uint8_t* data, size_t size) noexcept : _p(data), _end(data + size) {}
    // The next op; OpKind::end when the input is used up.
    Op next() noexcept;

private:
    uint8_t byte() noexcept { return _p < _end ? *_p++ : 0; }
    const uint8_t* _p;
    const uint8_t* _end;
};

class ScriptWriter {
public:
    explicit ScriptWriter(const TrackSetup& setup) { _out.push_back(setup.to_byte()); }
    // The frame's first min(size, keep, 255) bytes are carried; the rest becomes zero padding
    // (the parser never reads payload), the frame capped at the format's 128 KiB. dt_ms <= 63.
    ScriptWriter& frame(const std::vector<uint8_t>& f, unsigned dt_ms = 0, size_t keep = 255);
    ScriptWriter& advance(unsigned v) { return op(uint8_t(0x80 | (v & 0x3f))); }
    // fire_log2 in 0..3 (budget 1, 2, 4, 8), seconds in 0..3.
    ScriptWriter& budget_cop(unsigned fire_log2, bool tight, unsigned seconds = 0)
    {
        return op(uint8_t(0xc0 | (seconds & 3) << 3 | (tight ? 4 : 0) | (fire_log2 & 3)));
    }
    ScriptWriter& kill(unsigned recent) { return op(uint8_t(0xe0 | (recent & 0x0f))); }
    ScriptWriter& set_timeouts(unsigned preset, bool active)
    {
        return op(uint8_t(0xf0 | (active ? 4 : 0) | (preset & 3)));
    }
    ScriptWriter& rebase(unsigned which) { return op(uint8_t(0xf8 | (which & 3))); }
    ScriptWriter& destroy_all() { return op(0xfe); }
    ScriptWriter& next_port() { return op(0xfc); }
    ScriptWriter& flush() { return op(0xff); }
    const std::vector<uint8_t>& bytes() const { return _out; }
    size_t size() const { return _out.size(); }

private:
    ScriptWriter& op(uint8_t c)
    {
        _out.push_back(c);
        return *this;
    }
    std::vector<uint8_t> _out;
};

} // namespace flowcop::fuzz
