// SPDX-License-Identifier: BSD-3-Clause
#include "packet_ring_drops.h"

#include <text/decimal.h>

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <algorithm>

namespace flowcop::app {

namespace {

// The interface an AF_PACKET socket is bound to, or 0 for any other fd.
int packet_socket_ifindex(int fd) noexcept
{
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET)
        return 0;
    sockaddr_ll addr{};
    socklen_t addr_len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0)
        return 0;
    return addr.sll_ifindex;
}

} // namespace

std::unique_ptr<PacketRingDrops> PacketRingDrops::discover(std::span<const PortInterface> ports)
{
    std::unique_ptr<PacketRingDrops> d(new PacketRingDrops());
    for (const PortInterface& p : ports)
        d->_totals.push_back({p.port, 0});
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr)
        return d;
    const int own_fd = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
        uint64_t fd = 0;
        if (!text::parse_decimal_in(e->d_name, 0, INT32_MAX, fd) || int(fd) == own_fd)
            continue;
        const int ifindex = packet_socket_ifindex(int(fd));
        if (ifindex == 0)
            continue;
        const PortInterface* owner = nullptr;
        for (const PortInterface& p : ports)
            if (p.ifindex == ifindex && (owner == nullptr || p.port < owner->port))
                owner = &p;
        if (owner != nullptr)
            d->_sockets.push_back({int(fd), owner->port});
    }
    closedir(dir);
    // No first read to clear the counts: the PMD's sockets receive from their probe on, and what
    // the kernel dropped before the lcores polled is a loss flowcop must show too.
    return d;
}

void PacketRingDrops::poll_locked() const noexcept
{
    for (const Socket& s : _sockets) {
        tpacket_stats st{};
        socklen_t len = sizeof st;
        if (getsockopt(s.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0)
            continue;
        for (Total& t : _totals)
            if (t.port == s.port)
                t.drops += st.tp_drops;
    }
}

uint64_t PacketRingDrops::drops(uint16_t port) const noexcept
{
    std::lock_guard lock(_mutex);
    poll_locked();
    for (const Total& t : _totals)
        if (t.port == port)
            return t.drops;
    return 0;
}

unsigned PacketRingDrops::sockets(uint16_t port) const noexcept
{
    std::lock_guard lock(_mutex);
    return unsigned(
        std::count_if(_sockets.begin(), _sockets.end(), [port](const Socket& s) { return s.port == port; }));
}

void PacketRingDrops::release() noexcept
{
    std::lock_guard lock(_mutex);
    poll_locked();
    _sockets.clear();
}

} // namespace flowcop::app
