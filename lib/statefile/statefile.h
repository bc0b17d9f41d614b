// SPDX-License-Identifier: BSD-3-Clause
// The state file (issue 32): every flow of every lcore, written on a clean stop (and every
// --state-checkpoint-s) and read back on start. This library knows bytes and FlowImages
// (conntrack/flow_image.h), never the flow table's record.
//
// Format, version 1. All integers little-endian; every byte defined (reserved bytes are 0).
//   Header, kHeaderBytes (128):
//     0   magic "FLOWCOPS"                 8 bytes
//     8   u32 format version (kFormatVersion)
//     12  u32 header bytes (128)           a reader of this version refuses any other
//     16  u32 entry bytes (kEntryBytes)
//     20  u32 time base: 0 wall clock (--clock tsc: Unix ns), 1 a replay's packet time (--clock packet)
//     24  u64 flows                        entries that follow
//     32  u64 written_ns                   wall-clock Unix ns when the file was written
//     40  u64 base_now_ns                  the time base's "now" at the save (the replay's time under
//                                          --clock packet; written_ns again under tsc)
//     48  u32 CRC32-C of the entries       rte_hash_crc over the whole body, seed kCrcSeed
//     52  u32 reserved
//     56  build id, 64 bytes               "VERSION COMMIT", NUL-padded (build_info.h)
//     120 u32 reserved
//     124 u32 CRC32-C of bytes 0..123
//   Then `flows` entries of kEntryBytes (216) each; statefile.cpp's encode_entry() has the byte map.
//   Nothing follows the last entry.
// A new field, or a changed meaning, is a new version: a reader refuses other versions (Status::version)
// rather than guess. Checksums: CRC32-C (DPDK's rte_hash_crc, SSE4.2 where the CPU has it): it detects
// every burst of damage up to 32 bits long, and other damage (a torn write, a stale block) with
// probability 1 - 2^-32; it is no protection against an attacker who can write the file (the state
// directory must be flowcop's alone). A size that is not the header's count is caught before the CRC.
//
// Size: 128 + 216 bytes per flow (10^6 flows: 216 MB). Speed: tests/benchmarks.md ("Issue 32: the state
// file"): 10^6 flows saved in 0.3-0.6 s and restored in 0.4-0.7 s on a loaded 2-core VM.
//
// Writing is atomic (Writer): a temporary file in the same directory, written (O_DIRECT where the file
// system takes it: no copy through the page cache), fsync'd, renamed over the path, and the directory
// fsync'd, so a crash at any moment leaves the old file or the new one, whole.
// Reading (Reader) maps the file, checks the header and the body's checksum before handing out a single
// entry, and decodes entries one at a time. Both are single-threaded objects; any thread.
#pragma once

#include <conntrack/flow_image.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace flowcop::statefile {

inline constexpr char kMagic[8] = {'F', 'L', 'O', 'W', 'C', 'O', 'P', 'S'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 128;
inline constexpr size_t kEntryBytes = 216;
inline constexpr size_t kBuildBytes = 64;
inline constexpr uint32_t kCrcSeed = 0xffffffffu;

enum class TimeBase : uint32_t { wall = 0, packet = 1 };

struct Header {
    uint32_t version = kFormatVersion;
    TimeBase base = TimeBase::wall;
    uint64_t flows = 0;
    uint64_t written_ns = 0;
    uint64_t base_now_ns = 0;
    std::string build; // at most kBuildBytes - 1 characters are kept
};

// One entry's bytes <-> one image. decode_entry() fills every field from the bytes as they are; whether
// the values make sense is the table's question (FlowTable::restore_flow refuses what does not fit).
void encode_entry(const conntrack::FlowImage& image, uint8_t out[kEntryBytes]) noexcept;
void decode_entry(const uint8_t in[kEntryBytes], conntrack::FlowImage& image) noexcept;

// Why a file was not read. `missing` is a first start (or a removed file), not an error.
enum class Status : uint8_t {
    ok,
    missing,          // no file at the path
    unreadable,       // open/stat/mmap failed (permissions, a directory, I/O)
    not_a_state_file, // too short for a header, or another magic
    version,          // another format version (or header size): written by another flowcop
    header_checksum,  // the header's CRC does not match: damaged
    truncated,        // shorter than its header says (a torn write, a full disk)
    trailing,         // longer than its header says
    checksum,         // the entries' CRC does not match: damaged
    count
};
inline constexpr size_t kStatusCount = static_cast<size_t>(Status::count);
const char* status_name(Status s) noexcept; // "ok", "missing", ... (metric label values)

// Parses a whole file's bytes (the Reader maps the file and calls this; the fuzz target calls it on
// its input). On ok, entries [0, header.flows) are at bytes + kHeaderBytes. `header` is filled as far
// as it could be read (flows is known from Status::truncated on).
Status parse(const uint8_t* bytes, size_t len, Header& header, std::string& why) noexcept;

class Reader {
public:
    // Opens and checks the file. Never throws; status() says what happened, why() in a sentence.
    explicit Reader(const std::string& path);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    Status status() const noexcept { return _status; }
    const std::string& why() const noexcept { return _why; }
    const Header& header() const noexcept { return _header; }
    // Decodes entry i (< header().flows) of a file whose status() is ok.
    void entry(uint64_t i, conntrack::FlowImage& out) const noexcept;

private:
    Status _status = Status::unreadable;
    std::string _why;
    Header _header;
    const uint8_t* _map = nullptr;
    size_t _len = 0;
};

// Removes the temporary files (PATH.tmp.PID) that saves of earlier processes left when they died
// mid-save, never this process's own; returns how many. Call at start, before any save.
unsigned remove_stale_temporaries(const std::string& path) noexcept;

class Writer {
public:
    // Creates PATH.tmp.PID beside the file; nullptr and a sentence in `error` on failure.
    static std::unique_ptr<Writer> create(const std::string& path, std::string& error);
    ~Writer(); // removes the temporary file unless commit() succeeded
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    // Appends flows (buffered); false on a write error (then commit() fails too).
    bool append(const conntrack::FlowImage* images, size_t n);
    // Writes the header (flows = everything appended), fsyncs, renames over the path and fsyncs the
    // directory. False, with a sentence in `error`, when any step failed: the old file is then intact.
    bool commit(const Header& header, std::string& error);
    uint64_t flows() const noexcept { return _flows; }
    uint64_t bytes() const noexcept { return kHeaderBytes + _flows * kEntryBytes; }

private:
    Writer() = default;
    // Writes the buffer at the stream's end (last: padded to whole blocks).
    bool flush(bool last);
    struct FreeBuffer {
        void operator()(uint8_t* p) const noexcept;
    };
    std::string _path, _tmp;
    int _fd = -1;
    bool _failed = false;
    int _errno = 0;
    bool _committed = false;
    uint64_t _flows = 0;
    uint32_t _crc = kCrcSeed;
    std::unique_ptr<uint8_t, FreeBuffer> _buf;   // block-aligned (O_DIRECT)
    std::unique_ptr<uint8_t, FreeBuffer> _first; // the stream's first block, rewritten with the header
    size_t _used = 0;                            // bytes in _buf
    uint64_t _written = 0;                       // bytes of the stream written (whole blocks)
};

} // namespace flowcop::statefile
