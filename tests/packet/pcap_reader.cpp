// SPDX-License-Identifier: BSD-3-Clause
#include "pcap_reader.h"

namespace flowcop::test {

uint32_t PcapReader::get32(const uint8_t* p) const
{
    const uint32_t le = uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
    return _swapped ? __builtin_bswap32(le) : le;
}

bool PcapReader::open(const std::string& path)
{
    _file.reset(std::fopen(path.c_str(), "rb"));
    if (!_file) {
        _error = "cannot open " + path;
        return false;
    }
    uint8_t h[24];
    if (std::fread(h, 1, sizeof h, _file.get()) != sizeof h) {
        _error = "short global header in " + path;
        return false;
    }
    // The magic is written in the writer's byte order; read it little-endian first.
    _swapped = false;
    uint32_t magic = get32(h);
    if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
        _swapped = true;
        magic = get32(h);
    }
    if (magic != 0xa1b2c3d4 && magic != 0xa1b23c4d) {
        _error = "not a classic pcap file: " + path;
        return false;
    }
    _nanos = magic == 0xa1b23c4d;
    _linktype = get32(h + 20) & 0x0fffffff; // upper bits carry FCS info (pcap-savefile(5))
    return true;
}

bool PcapReader::next(PcapRecord& rec)
{
    if (!_file)
        return false;
    uint8_t h[16];
    const size_t got = std::fread(h, 1, sizeof h, _file.get());
    if (got == 0)
        return false;
    if (got != sizeof h) {
        _error = "truncated record header";
        return false;
    }
    const uint32_t caplen = get32(h + 8);
    if (caplen > kMaxRecordLen) {
        _error = "record caplen " + std::to_string(caplen) + " too large";
        return false;
    }
    rec.ts_ns = uint64_t{get32(h)} * 1000000000u + uint64_t{get32(h + 4)} * (_nanos ? 1u : 1000u);
    rec.orig_len = get32(h + 12);
    rec.data.resize(caplen);
    if (caplen != 0 && std::fread(rec.data.data(), 1, caplen, _file.get()) != caplen) {
        _error = "truncated record data";
        return false;
    }
    return true;
}

} // namespace flowcop::test
