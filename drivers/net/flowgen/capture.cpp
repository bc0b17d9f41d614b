// SPDX-License-Identifier: BSD-3-Clause
#include <flowgen/capture.h>

#include <cstring>

#include <pcap/pcap.h>

namespace flowcop::flowgen {
namespace {

pcap_t* open_micro(const std::string& path, std::string& error)
{
    char err[PCAP_ERRBUF_SIZE] = {};
    pcap_t* h = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_MICRO, err);
    if (h == nullptr)
        error = "flowgen: replay: cannot read '" + path + "': " + err;
    return h;
}

} // namespace

Capture::~Capture()
{
    if (_handle != nullptr)
        pcap_close(_handle);
}

std::string Capture::open(const std::string& path)
{
    std::string error;
    pcap_t* h = open_micro(path, error);
    if (h == nullptr)
        return error;
    if (pcap_datalink(h) != DLT_EN10MB) {
        error = "flowgen: replay: '" + path + "' is a " + std::to_string(pcap_datalink(h)) +
                " capture, not Ethernet (link type 1)";
        pcap_close(h);
        return error;
    }
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc;
    while ((rc = pcap_next_ex(h, &hdr, &data)) == 1) {
        if (_frames == 0)
            _first_us = uint64_t(hdr->ts.tv_sec) * 1'000'000 + uint64_t(hdr->ts.tv_usec);
        ++_frames;
        if (hdr->caplen > _max_len)
            _max_len = hdr->caplen;
    }
    if (rc != PCAP_ERROR_BREAK) {
        error = "flowgen: replay: '" + path + "' is cut or corrupt after " + std::to_string(_frames) +
                " frames: " + pcap_geterr(h);
        pcap_close(h);
        return error;
    }
    pcap_close(h);
    _path = path;
    _handle = open_micro(path, error); // rewound: libpcap cannot seek an offline capture back
    return error;
}

uint32_t Capture::next(uint8_t* buf, uint32_t cap, uint64_t& timestamp_us) noexcept
{
    while (!finished()) {
        pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        if (pcap_next_ex(_handle, &hdr, &data) != 1) {
            _skipped = _frames - _read; // the file changed under us: stop where it ends
            return 0;
        }
        if (hdr->caplen == 0 || hdr->caplen > cap) {
            ++_skipped;
            continue;
        }
        std::memcpy(buf, data, hdr->caplen);
        timestamp_us = uint64_t(hdr->ts.tv_sec) * 1'000'000 + uint64_t(hdr->ts.tv_usec);
        ++_read;
        return hdr->caplen;
    }
    return 0;
}

} // namespace flowcop::flowgen
