// SPDX-License-Identifier: BSD-3-Clause
#include <ipfix/collector.h>

#include <stats/relaxed.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace flowcop::ipfix {
namespace {

// Datagrams handed to one sendmmsg() call.
constexpr unsigned kSendBatch = 64;
// A send buffer that absorbs a burst of full messages (a few ms at 10^6 records/s) instead of
// failing with EAGAIN; the kernel caps it at net.core.wmem_max.
constexpr int kSendBufferBytes = 4 << 20;

} // namespace

std::unique_ptr<Collector> Collector::open(const std::string& host, uint16_t port, std::string& error)
{
    sockaddr_storage ss{};
    socklen_t len = 0;
    std::unique_ptr<Collector> c(new Collector());
    if (auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss); inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        len = sizeof(*a6);
        c->_ipv6 = true;
        c->_name = "[" + host + "]:" + std::to_string(port);
    } else if (auto* a4 = reinterpret_cast<sockaddr_in*>(&ss); inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        len = sizeof(*a4);
        c->_name = host + ":" + std::to_string(port);
    } else {
        error = "collector '" + host + "': not an IPv4 or IPv6 address";
        return nullptr;
    }
    c->_fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->_fd < 0) {
        error = "collector " + c->_name + ": cannot create a UDP socket: " + std::strerror(errno);
        return nullptr;
    }
    setsockopt(c->_fd, SOL_SOCKET, SO_SNDBUF, &kSendBufferBytes, sizeof kSendBufferBytes);
    // Connected: the kernel picks the source address once, and reports a collector's ICMP port
    // unreachable to us as ECONNREFUSED on a later send (counted) instead of dropping it silently.
    if (connect(c->_fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
        error = "collector " + c->_name + ": " + std::strerror(errno);
        return nullptr;
    }
    return c;
}

Collector::~Collector()
{
    if (_fd >= 0)
        close(_fd);
}

void Collector::send(const iovec* messages, unsigned n) noexcept
{
    mmsghdr batch[kSendBatch];
    unsigned done = 0;
    while (done < n) {
        const unsigned k = n - done < kSendBatch ? n - done : kSendBatch;
        for (unsigned i = 0; i < k; ++i) {
            batch[i] = mmsghdr{};
            batch[i].msg_hdr.msg_iov = const_cast<iovec*>(&messages[done + i]);
            batch[i].msg_hdr.msg_iovlen = 1;
        }
        const int sent = sendmmsg(_fd, batch, k, MSG_DONTWAIT);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0) {
            // The first datagram failed (its error is reported only for it); count it and go on
            // with the next, so one refused datagram does not cost the whole batch.
            stats::bump(_send_errors);
            ++done;
            continue;
        }
        uint64_t bytes = 0;
        for (int i = 0; i < sent; ++i)
            bytes += messages[done + unsigned(i)].iov_len;
        stats::bump(_messages, uint64_t(sent));
        stats::bump(_bytes, bytes);
        done += unsigned(sent);
    }
}

CollectorStats Collector::stats() const noexcept
{
    return CollectorStats{stats::load_relaxed(_messages), stats::load_relaxed(_bytes),
                          stats::load_relaxed(_send_errors)};
}

} // namespace flowcop::ipfix
