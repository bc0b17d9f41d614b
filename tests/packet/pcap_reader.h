// SPDX-License-Identifier: BSD-3-Clause
// Test-only reader of classic libpcap files (not pcapng), so tests replay real
// captures without a libpcap dependency.
// Contract: open() validates the global header (either byte order, microsecond or
// nanosecond magic); next() returns one record at a time with its captured bytes,
// the original wire length and the timestamp in nanoseconds. A truncated or absurd
// record (caplen > max_record_len) ends the file with error() set, never a crash.
// Single-threaded; owns its FILE*.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace flowcop::test {

struct PcapRecord {
    std::vector<uint8_t> data; // caplen bytes
    uint32_t orig_len = 0;     // length on the wire
    uint64_t ts_ns = 0;
};

class PcapReader {
public:
    static constexpr uint32_t kLinktypeEthernet = 1;
    // Bounds a record's allocation; the largest real frame we replay is 80 kB.
    static constexpr uint32_t kMaxRecordLen = 16u << 20;

    // Returns false (and sets error()) when the file cannot be read as a pcap.
    bool open(const std::string& path);
    // Returns false at end of file or on a bad record (error() non-empty then).
    bool next(PcapRecord& rec);

    uint32_t linktype() const { return _linktype; }
    const std::string& error() const { return _error; }

private:
    uint32_t get32(const uint8_t* p) const;

    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::unique_ptr<std::FILE, Closer> _file;
    bool _swapped = false;
    bool _nanos = false;
    uint32_t _linktype = 0;
    std::string _error;
};

} // namespace flowcop::test
