// SPDX-License-Identifier: BSD-3-Clause
// Contract: Capture reads an Ethernet pcap file (libpcap, either byte order, microsecond or
// nanosecond files) frame by frame, for flowgen's replay=FILE: the frames and timestamps a NIC would
// have delivered, in the file's order. EAL-free.
//
// open() reads the file once through to learn its frame count and longest frame (so a pool too small
// for it is refused before a frame is read, as Generator::check_pool does for the model), then
// rewinds; next() copies the next frame's captured bytes into the caller's buffer and returns its
// length with its timestamp in microseconds since the Unix epoch (the unit of the Rx timestamp
// dynfield and of net_pcap), 0 once every frame was read. A frame is delivered as captured (a
// snaplen-cut frame stays cut, as net_pcap delivers it).
// Errors: open() returns one sentence (no such file, not a pcap, a link type other than Ethernet, a
// file cut inside a record) and the Capture delivers nothing; a frame longer than the caller's buffer
// (never, after check against max_frame_len()) is skipped and counted in skipped().
// Threading: one thread at a time.
#pragma once

#include <cstdint>
#include <string>

struct pcap;

namespace flowcop::flowgen {

class Capture {
public:
    Capture() = default;
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    std::string open(const std::string& path);
    // Returns the frame's length (0: no more frames) and its timestamp.
    uint32_t next(uint8_t* buf, uint32_t cap, uint64_t& timestamp_us) noexcept;

    uint64_t frames() const noexcept { return _frames; }         // in the file
    uint32_t max_frame_len() const noexcept { return _max_len; } // the longest captured frame
    uint64_t first_timestamp_us() const noexcept { return _first_us; }
    uint64_t read() const noexcept { return _read; } // frames next() delivered
    uint64_t skipped() const noexcept { return _skipped; }
    bool finished() const noexcept { return _handle == nullptr || _read + _skipped >= _frames; }

private:
    std::string _path;
    pcap* _handle = nullptr;
    uint64_t _frames = 0, _read = 0, _skipped = 0, _first_us = 0;
    uint32_t _max_len = 0;
};

} // namespace flowcop::flowgen
