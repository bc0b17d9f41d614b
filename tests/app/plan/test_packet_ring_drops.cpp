// SPDX-License-Identifier: BSD-3-Clause
// PacketRingDrops on a real AF_PACKET socket bound to loopback whose receive buffer holds about
// one frame: the kernel drops what does not fit and counts it in PACKET_STATISTICS. Needs
// CAP_NET_RAW (root, as the integration suite runs); without it the test says so and passes.
#include <catch2/catch.hpp>

#include <service/control/stats_view.h>
#include <service/plan/packet_ring_drops.h>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace flowcop::app;

namespace {

struct Fd {
    int fd;
    ~Fd()
    {
        if (fd >= 0)
            close(fd);
    }
};

// `n` 1000-byte UDP datagrams to a socket on 127.0.0.1 that nobody reads.
void send_loopback(int n)
{
    Fd rx{socket(AF_INET, SOCK_DGRAM, 0)};
    Fd tx{socket(AF_INET, SOCK_DGRAM, 0)};
    REQUIRE((rx.fd >= 0 && tx.fd >= 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(rx.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(rx.fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    static const char payload[1000] = {};
    for (int i = 0; i < n; ++i)
        REQUIRE(sendto(tx.fd, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&a), sizeof a) ==
                ssize_t(sizeof payload));
}

} // namespace

TEST_CASE("PacketRingDrops finds a port's AF_PACKET sockets and accumulates the kernel's drops across reads",
          "[ring_drops]")
{
    Fd tap{socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL))};
    if (tap.fd < 0) {
        WARN("skipped: an AF_PACKET socket needs CAP_NET_RAW");
        return;
    }
    const int lo = int(if_nametoindex("lo"));
    REQUIRE(lo > 0);
    sockaddr_ll bound{};
    bound.sll_family = AF_PACKET;
    bound.sll_protocol = htons(ETH_P_ALL);
    bound.sll_ifindex = lo;
    REQUIRE(bind(tap.fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0);
    const int smallest = 1; // the kernel raises it to its minimum, about one frame
    REQUIRE(setsockopt(tap.fd, SOL_SOCKET, SO_RCVBUF, &smallest, sizeof smallest) == 0);

    const PortInterface ports[] = {{3, lo}, {5, lo + 100000}};
    std::unique_ptr<PacketRingDrops> d = PacketRingDrops::discover(ports);
    REQUIRE(d->sockets(3) == 1);
    CHECK(d->sockets(5) == 0);

    send_loopback(64);
    const uint64_t first = d->drops(3);
    CHECK(first >= 60); // each datagram crosses lo once or twice; the buffer holds about one
    CHECK(d->drops(5) == 0);
    CHECK(d->drops(9) == 0); // a port it was not given

    // The kernel resets its count on each read: a second, smaller batch must add to the total.
    send_loopback(8);
    const uint64_t second = d->drops(3);
    CHECK(second >= first + 6);

    SECTION("after release() the totals stay and no socket is read")
    {
        d->release();
        const uint64_t kept = d->drops(3);
        CHECK(kept >= second);
        CHECK(d->sockets(3) == 0);
        send_loopback(16);
        CHECK(d->drops(3) == kept);

        SECTION("port_samples() adds a port's drops to the PMD's imissed")
        {
            StatsView view;
            view.ports = {{3, "net_af_packet0"}, {5, "net_af_packet1"}};
            view.read_port = [](uint16_t, rte_eth_stats& out) noexcept {
                out = {};
                out.imissed = 7;
                return true;
            };
            view.ring_drops = d.get();
            const std::vector<PortSample> samples = view.port_samples();
            REQUIRE(samples.size() == 2);
            CHECK(samples[0].counters.imissed == 7 + kept);
            CHECK(samples[1].counters.imissed == 7);
        }
    }
}
