// SPDX-License-Identifier: BSD-3-Clause
// The kernel's RX ring drops of af_packet ports, which no ethdev counter shows.
//
// DPDK 22.11's af_packet PMD never reads its sockets' PACKET_STATISTICS, so a frame the kernel
// dropped because the PMD's mmap ring was full (flowcop not polling fast enough, or a ring too
// small for a burst) appears nowhere. PacketRingDrops finds, once after the ports started, every
// AF_PACKET socket this process holds that is bound to a given port's interface, and on each read
// adds the kernel's drop count of each (reading PACKET_STATISTICS resets it, so the totals live
// here and this must be the sockets' only reader). StatsView::port_samples() adds a port's total
// to its `imissed`, the counter a NIC uses for the same loss (flowcop_port_rx_missed_total).
//
// Threading: any control thread may call drops() at any time; a mutex orders the reads (never
// taken by a polling lcore). release() must run before the ports close (their fds could then be
// reused by another socket): afterwards drops() returns the totals without reading sockets.
// A socket that cannot be read (getsockopt fails) adds nothing; if two ports share an interface,
// each socket is counted for the lower port id only.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace flowcop::app {

struct PortInterface {
    uint16_t port = 0;
    int ifindex = 0; // the kernel interface the port's sockets are bound to
};

class PacketRingDrops {
public:
    // Scans /proc/self/fd for AF_PACKET sockets bound to one of `ports`' interfaces.
    static std::unique_ptr<PacketRingDrops> discover(std::span<const PortInterface> ports);

    // The frames the kernel dropped on `port`'s sockets since discover(); 0 for another port.
    uint64_t drops(uint16_t port) const noexcept;
    // How many sockets were found for `port` (for the start-up check and tests).
    unsigned sockets(uint16_t port) const noexcept;
    // Stops reading the sockets (call before the ports close); totals stay.
    void release() noexcept;

private:
    struct Socket {
        int fd;
        uint16_t port;
    };
    struct Total {
        uint16_t port;
        uint64_t drops;
    };
    void poll_locked() const noexcept;

    mutable std::mutex _mutex;
    std::vector<Socket> _sockets;
    mutable std::vector<Total> _totals; // one per port in `ports`, in that order
};

} // namespace flowcop::app
