// SPDX-License-Identifier: BSD-3-Clause
// The export thread end to end on loopback: events in on the lcore side, IPFIX datagrams out to a
// UDP socket this test reads, and the counters that account for every record.
#include <ipfix/exporter.h>

#include <conntrack/flow_id.h>
#include <events/stream.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <set>

#include "helpers.h"

using namespace flowcop;
using namespace flowcop::ipfix;
using namespace flowcop::ipfix::test;

namespace {

// A UDP socket bound to a free loopback port: a collector that only listens.
class Listener {
public:
    explicit Listener(bool v6 = false) : _v6(v6)
    {
        _fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
        const int big = 8 << 20;
        setsockopt(_fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big); // root in CI; else capped
        sockaddr_storage ss{};
        socklen_t len;
        if (v6) {
            auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
            a->sin6_family = AF_INET6;
            a->sin6_addr = in6addr_loopback;
            len = sizeof *a;
        } else {
            auto* a = reinterpret_cast<sockaddr_in*>(&ss);
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            len = sizeof *a;
        }
        bind(_fd, reinterpret_cast<sockaddr*>(&ss), len);
        getsockname(_fd, reinterpret_cast<sockaddr*>(&ss), &len);
        _port =
            ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    }
    ~Listener() { close(_fd); }
    uint16_t port() const { return _port; }
    Destination destination() const { return Destination{_v6 ? "::1" : "127.0.0.1", _port}; }
    // Reads every datagram that arrives within `quiet_ms` of the previous one.
    void drain_into(Decoder& d, int quiet_ms = 300)
    {
        std::vector<uint8_t> buf(65536);
        pollfd p{_fd, POLLIN, 0};
        while (poll(&p, 1, quiet_ms) == 1) {
            const ssize_t n = recv(_fd, buf.data(), buf.size(), 0);
            if (n > 0)
                d.feed(buf.data(), size_t(n));
        }
    }

private:
    int _fd;
    bool _v6;
    uint16_t _port = 0;
};

ExporterConfig config_for(std::vector<Destination> to, unsigned n)
{
    ExporterConfig c;
    c.collectors = std::move(to);
    c.ring_events = 4095;
    c.max_tracked_flows = 1024;
    for (unsigned i = 0; i < n; ++i) {
        c.domain_id.push_back(100 + i);
    }
    return c;
}

std::unique_ptr<events::Stream> stream_of(unsigned n)
{
    std::string error;
    auto s = events::Stream::create(n, error);
    REQUIRE(s);
    return s;
}

} // namespace

TEST_CASE("Every destroyed flow reaches every collector once; created events are not exported", "[ipfix][exporter]")
{
    Listener v4, v6(true);
    auto stream = stream_of(2);
    std::string error;
    auto x = Exporter::open(config_for({v4.destination(), v6.destination()}, 2), *stream, error);
    REQUIRE(x);
    CHECK(x->max_message_bytes() == 1500 - 48); // an IPv6 collector sets the bound for both
    x->start();
    constexpr unsigned kFlows = 3000;
    for (unsigned i = 0; i < kFlows; ++i) {
        for (unsigned p = 0; p < 2; ++p) {
            events::Event created = flow_event(i, i % 2 == 1);
            created.kind = events::Kind::created;
            stream->producer(p).emit(created);
            events::Event ended = flow_event(i, i % 2 == 1);
            if (p == 0) { // lcore slot 0's flows carry their port; slot 1's do not (none is sent)
                ended.in_port = 5;
                ended.present |= events::kHasInPort;
            }
            stream->producer(p).emit(ended);
        }
    }
    x->stop_and_flush();
    for (unsigned p = 0; p < 2; ++p) {
        const ExporterStats s = x->stats(p);
        CHECK(s.offered == kFlows);
        CHECK(s.records == kFlows);
        CHECK(s.dropped_full == 0);
    }
    for (Listener* l : {&v4, &v6}) {
        Decoder d;
        l->drain_into(d);
        INFO("collector port " << l->port());
        CHECK(d.errors.empty());
        REQUIRE(d.records.size() == 2 * kFlows);
        std::map<uint32_t, std::set<uint64_t>> ports_by_domain;
        unsigned with_port = 0;
        for (const Record& r : d.records) {
            ports_by_domain[r.domain].insert(r.num(7));
            with_port += r.has(10) && r.num(10) == 5;
        }
        CHECK(ports_by_domain[100].size() == kFlows); // once each, no duplicate
        CHECK(ports_by_domain[101].size() == kFlows);
        CHECK(with_port == kFlows); // slot 0's flows, each with its own port; slot 1's without
    }
    for (size_t c = 0; c < x->collectors(); ++c) {
        const CollectorStats cs = x->collector(c).stats();
        CHECK(cs.send_errors == 0);
        CHECK(cs.messages == x->stats(0).messages + x->stats(1).messages);
        CHECK(cs.bytes > 0);
    }
}

// A collector that is down answers with ICMP port unreachable: the exporter counts send errors and
// keeps going, and the lcore side sees nothing of it.
TEST_CASE("A collector that is down costs only counted send errors", "[ipfix][exporter]")
{
    uint16_t closed_port;
    {
        Listener gone;
        closed_port = gone.port();
    } // closed: nothing listens there now
    Listener alive;
    auto stream = stream_of(1);
    std::string error;
    auto x = Exporter::open(config_for({{"127.0.0.1", closed_port}, alive.destination()}, 1), *stream, error);
    REQUIRE(x);
    x->start();
    for (unsigned i = 0; i < 500; ++i) {
        CHECK(stream->producer(0).emit(flow_event(i)));
        if (i % 100 == 99)
            usleep(150'000); // let the hold time send a message now and then, so ICMP errors come back
    }
    x->stop_and_flush();
    CHECK(x->stats(0).records == 500);
    CHECK(x->collector(0).stats().send_errors > 0);
    CHECK(x->collector(1).stats().send_errors == 0);
    Decoder d;
    alive.drain_into(d);
    CHECK(d.errors.empty());
    CHECK(d.records.size() == 500);
}

TEST_CASE("When the exporter's ring is full, records are dropped and counted, never waited for", "[ipfix][exporter]")
{
    Listener l;
    auto stream = stream_of(1);
    ExporterConfig c = config_for({l.destination()}, 1);
    c.ring_events = 63;
    std::string error;
    auto x = Exporter::open(c, *stream, error);
    REQUIRE(x);
    unsigned accepted = 0;
    for (unsigned i = 0; i < 100; ++i) // not started: nothing drains
        accepted += stream->producer(0).emit(flow_event(i));
    CHECK(accepted == 63);
    x->stop_and_flush();
    const ExporterStats s = x->stats(0);
    CHECK(s.offered == 100);
    CHECK(s.dropped_full == 37);
    CHECK(s.records == 63);
    CHECK(s.records + s.dropped_full == s.offered);
    Decoder d;
    l.drain_into(d);
    CHECK(d.records.size() == 63);
}

TEST_CASE("An interim record the delta tracker has no room for is dropped and counted; the flow's final record "
          "carries its counts",
          "[ipfix][exporter]")
{
    Listener l;
    auto stream = stream_of(1);
    ExporterConfig c = config_for({l.destination()}, 1);
    c.max_tracked_flows = 1;
    std::string error;
    auto x = Exporter::open(c, *stream, error);
    REQUIRE(x);
    // Flow i, slot i, generation 1, with `interims` boundaries passed and these totals.
    auto flow = [](uint32_t i, events::Kind kind, uint16_t interims, uint64_t packets) {
        events::Event e = flow_event(i);
        e.kind = kind;
        e.flow_id = conntrack::make_flow_id(1, i);
        e.present |= events::kHasFlowId;
        e.interims = interims;
        e.packets[0] = packets;
        return e;
    };
    stream->producer(0).emit(flow(1, events::Kind::interim, 1, 10));   // tracked: the tracker is full
    stream->producer(0).emit(flow(2, events::Kind::interim, 1, 20));   // no room: dropped, counted
    stream->producer(0).emit(flow(1, events::Kind::interim, 2, 15));   // tracked already: a delta of 5
    stream->producer(0).emit(flow(2, events::Kind::destroyed, 1, 26)); // its totals: 26
    stream->producer(0).emit(flow(1, events::Kind::destroyed, 2, 16)); // a delta of 1
    x->stop_and_flush();
    const ExporterStats s = x->stats(0);
    CHECK(s.offered == 5);
    CHECK(s.dropped_untracked == 1);
    CHECK(s.records == 4);
    CHECK(s.interim == 2);
    CHECK(s.records + s.dropped_full + s.dropped_untracked == s.offered);
    Decoder d;
    l.drain_into(d);
    CHECK(d.errors.empty());
    std::map<uint64_t, uint64_t> packets_by_port;
    for (const Record& r : d.records)
        packets_by_port[r.num(7)] += r.num(2);
    CHECK(packets_by_port == std::map<uint64_t, uint64_t>{{1001, 16}, {1002, 26}});
}

TEST_CASE("open refuses what cannot work, in one sentence", "[ipfix][exporter]")
{
    auto stream = stream_of(1);
    std::string error;
    CHECK(Exporter::open(config_for({}, 1), *stream, error) == nullptr);
    CHECK(error == "IPFIX export needs at least one collector");
    CHECK(Exporter::open(config_for({{"collector.example", 4739}}, 1), *stream, error) == nullptr);
    CHECK(error == "collector 'collector.example': not an IPv4 or IPv6 address");
    ExporterConfig c = config_for({{"127.0.0.1", 4739}}, 1);
    c.path_mtu = 200;
    CHECK(Exporter::open(c, *stream, error) == nullptr);
    CHECK(error.find("IPFIX path MTU 200 is below") == 0);
    CHECK(Exporter::open(config_for({{"127.0.0.1", 4739}}, 2), *stream, error) == nullptr);
    CHECK(error.find("1 lcores but 2 domain ids") != std::string::npos);
    c = config_for({{"127.0.0.1", 4739}}, 1);
    c.max_tracked_flows = 0;
    CHECK(Exporter::open(c, *stream, error) == nullptr);
    CHECK(error.find("max_tracked_flows is 0") != std::string::npos);
}
