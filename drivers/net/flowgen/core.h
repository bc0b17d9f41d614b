// SPDX-License-Identifier: BSD-3-Clause
// Contract: Core is the flowgen generator without DPDK: it decides every frame (which flow, which
// segment, when) and writes it into a caller buffer. Generator and Port wrap it for mbufs; tests and
// benchmarks use it directly, without EAL.
//
// Output: next() writes one complete Ethernet frame (correct IPv4 header and TCP checksums, zero
// payload) and returns its length with its virtual timestamp (microseconds since the Unix epoch:
// start*10^6 + floor(slot*10^6/pps), non-decreasing, strictly increasing while pps <= 10^6). It returns
// 0 once finished (packets= or duration= reached), and from then on always.
// Determinism: the sequence of frames and timestamps is a pure function of the Config (seed included);
// nothing depends on wall time, addresses or the platform beyond IEEE doubles and std::log (used for
// exponential lifetimes).
// Invalid Config (check_config() not ""): error() says why, nothing is allocated, next() returns 0 and
// stats().finished is true.
// Cost and memory: next() is noexcept, allocates nothing and does O(1) amortised work plus the copy
// of the frame; the constructor allocates ~34 bytes per configured flow (32-byte records, 1/16 slack)
// plus 40 bytes per slot of virtual RTT (100 us of slots, at least 1) for flows in handshake or close.
// Measured (tests/flowgen/bench_flowgen, drivers/net/flowgen/flowgen.md): ~3.9x the cost of merely copying a
// 128-byte frame, flat across 10^3..10^5 flows (+18%), IPv6/VLAN (+7%) and frame sizes; 32.0 resident
// bytes per flow at 10^6 flows.
// Threading: one owner thread; stats() may be called only by that thread (Port publishes copies).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <flowgen/config.h>
#include <flowgen/stats.h>

namespace flowcop::flowgen {

class Core {
public:
    explicit Core(const Config& cfg);
    ~Core();
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;

    // "" or why this Core generates nothing (the check_config() sentence).
    const std::string& error() const noexcept;

    // Bytes next() may write into buf: the largest frame, and at least 80 (templates are copied whole).
    uint32_t max_frame_len() const noexcept;

    // Writes the next frame into buf (max_frame_len() bytes of room); returns its length, or 0 when
    // finished. timestamp_us is set only when a frame is returned.
    uint32_t next(uint8_t* buf, uint64_t& timestamp_us) noexcept;

    bool finished() const noexcept;
    Stats stats() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> _impl;
};

} // namespace flowcop::flowgen
