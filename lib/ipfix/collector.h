// SPDX-License-Identifier: BSD-3-Clause
// One IPFIX collector reached over UDP: a connected, non-blocking socket and its counters.
//
// Ownership: Collector::open() returns the only owner of the socket. Threading: send() is called by
// the exporter thread only; stats() may be read from any thread (relaxed loads of single-writer
// fields, stats/relaxed.h). Degraded behaviour: sending never blocks and never fails loudly. A message the kernel
// refuses (ECONNREFUSED after an ICMP port unreachable from a collector that is down, EAGAIN when the
// socket buffer is full, ENETUNREACH, ...) is lost and counted in send_errors; the next messages are
// tried as usual, so a collector that comes back receives again without a restart. UDP gives no
// delivery guarantee beyond that: a datagram the network or the collector's buffer drops after a
// successful send shows only as a gap in the sequence numbers the collector sees.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>

namespace flowcop::ipfix {

struct CollectorStats {
    uint64_t messages;    // messages the kernel accepted
    uint64_t bytes;       // their IPFIX octets (without IP/UDP headers)
    uint64_t send_errors; // messages lost because a send failed
};

class Collector {
public:
    // host: an IPv4 or IPv6 literal (no brackets, no name: nothing here depends on a resolver).
    // nullptr + one sentence in `error` if it is not an address or the socket cannot be made.
    static std::unique_ptr<Collector> open(const std::string& host, uint16_t port, std::string& error);
    ~Collector();
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    // Sends each of the n messages as one datagram (sendmmsg, so a burst costs few system calls).
    void send(const iovec* messages, unsigned n) noexcept;

    CollectorStats stats() const noexcept;
    bool ipv6() const noexcept { return _ipv6; }
    // "HOST:PORT" ("[v6]:PORT"), as metrics label it.
    const std::string& name() const noexcept { return _name; }

private:
    Collector() = default;
    int _fd = -1;
    bool _ipv6 = false;
    std::string _name;
    uint64_t _messages = 0; // written by the export thread only
    uint64_t _bytes = 0;
    uint64_t _send_errors = 0;
};

} // namespace flowcop::ipfix
