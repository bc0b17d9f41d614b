// SPDX-License-Identifier: BSD-3-Clause
// Port: flowgen as an ethdev, polled with rte_eth_rx_burst like any port (EAL needed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include <flowgen/core.h>
#include <flowgen/port.h>
#include <flowgen/rss_dealer.h>

#include <unistd.h>

#include <cstdio>

#include "eal.h"
#include "run.h"

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;
using Clock = std::chrono::steady_clock;

namespace {

// What an application does with any port.
bool bring_up(uint16_t port, rte_mempool* rx_pool)
{
    rte_eth_conf conf;
    std::memset(&conf, 0, sizeof(conf));
    return rte_eth_dev_configure(port, 1, 1, &conf) == 0 &&
           rte_eth_rx_queue_setup(port, 0, 512, SOCKET_ID_ANY, nullptr, rx_pool) == 0 &&
           rte_eth_tx_queue_setup(port, 0, 512, SOCKET_ID_ANY, nullptr) == 0 && rte_eth_dev_start(port) == 0;
}

struct Received {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint64_t> ts;
    uint64_t missing_flag = 0;
};

// Polls until `want` frames arrived or the deadline; optionally sends each burst back (inline mode)
// and optionally dawdles between polls so the ring fills and the generator must wait.
Received poll(uint16_t port, size_t want, bool send_back, std::chrono::microseconds pause = {})
{
    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    const int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
    Received r;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    rte_mbuf* m[32];
    while (r.frames.size() < want && Clock::now() < deadline) {
        const uint16_t n = rte_eth_rx_burst(port, 0, m, 32);
        for (uint16_t i = 0; i < n; ++i) {
            const uint8_t* p = rte_pktmbuf_mtod(m[i], const uint8_t*);
            r.frames.emplace_back(p, p + m[i]->pkt_len);
            r.missing_flag += bit < 0 || (m[i]->ol_flags & (uint64_t{1} << bit)) == 0;
            r.ts.push_back(off < 0 ? 0 : *RTE_MBUF_DYNFIELD(m[i], off, rte_mbuf_timestamp_t*));
        }
        uint16_t sent = send_back ? rte_eth_tx_burst(port, 0, m, n) : 0;
        if (sent < n)
            rte_pktmbuf_free_bulk(m + sent, n - sent);
        if (pause.count() != 0)
            std::this_thread::sleep_for(pause);
    }
    return r;
}

bool same_as_core(const Config& cfg, const Received& r)
{
    Core core(cfg);
    std::vector<uint8_t> buf(core.max_frame_len());
    uint64_t ts = 0;
    for (size_t i = 0; i < r.frames.size(); ++i) {
        const uint32_t len = core.next(buf.data(), ts);
        if (len != r.frames[i].size() || std::memcmp(buf.data(), r.frames[i].data(), len) != 0 || ts != r.ts[i])
            return false;
    }
    return true;
}

struct Pool {
    explicit Pool(const char* name, unsigned n)
        : mp(rte_pktmbuf_pool_create(name, n, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY))
    {}
    ~Pool() { rte_mempool_free(mp); }
    rte_mempool* mp;
};

} // namespace

// The brief's core promise: flowcop polls it like any port and gets the generated stream, stamped.
TEST_CASE("rx_burst returns the generated frames with the timestamp dynflag and packets=N ends the stream",
          "[flowgen][port]")
{
    REQUIRE(eal_up());
    const Config cfg = config("flows=500,pps=1000000,lifetime=0.1,ipv6_pct=20,packets=20000");
    std::string err;
    auto port = Port::create(cfg, nullptr, SOCKET_ID_ANY, err);
    REQUIRE(err == "");
    REQUIRE(port != nullptr);
    CHECK(port->name().rfind("net_ring_net_flowgen", 0) == 0);
    Pool rx_pool("fg_t_rxq", 255); // rx queue setup wants a pool; the ring PMD never allocates from it
    REQUIRE(bring_up(port->port_id(), rx_pool.mp));
    port->start();
    const Received r = poll(port->port_id(), 20000, false);
    CHECK(r.frames.size() == 20000);
    CHECK(r.missing_flag == 0);
    CHECK(same_as_core(cfg, r));
    // Finished: nothing more arrives.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rte_mbuf* m[32];
    CHECK(rte_eth_rx_burst(port->port_id(), 0, m, 32) == 0);
    const Stats s = port->stats();
    CHECK(s.finished);
    CHECK(s.packets == 20000);
    port->stop();
    port->stop(); // idempotent
    CHECK(port->stats().packets == 20000);
}

// Back-pressure, not loss: a slow consumer with a tiny ring still gets exactly Core's stream.
TEST_CASE("a slow consumer gets the whole stream unchanged", "[flowgen][port]")
{
    REQUIRE(eal_up());
    const Config cfg = config("flows=100,pps=100000,lifetime=0.1,packets=3000,ring=64,burst=16");
    std::string err;
    auto port = Port::create(cfg, nullptr, SOCKET_ID_ANY, err);
    REQUIRE(port != nullptr);
    Pool rx_pool("fg_t_rxq2", 255);
    REQUIRE(bring_up(port->port_id(), rx_pool.mp));
    port->start();
    const Received r = poll(port->port_id(), 3000, false, std::chrono::microseconds(200));
    CHECK(r.frames.size() == 3000);
    CHECK(same_as_core(cfg, r));
}

// Inline mode: what the application transmits on the port comes back to the pool, freed by the
// generator thread; with a caller's pool every mbuf is home once the Port is gone.
TEST_CASE("frames sent to the port are freed by the generator thread", "[flowgen][port]")
{
    REQUIRE(eal_up());
    Pool pool("fg_t_txpool", 8191);
    REQUIRE(pool.mp != nullptr);
    const Config cfg = config("flows=100,pps=100000,lifetime=0.1,packets=5000");
    std::string err;
    auto port = Port::create(cfg, pool.mp, SOCKET_ID_ANY, err);
    REQUIRE(port != nullptr);
    REQUIRE(bring_up(port->port_id(), pool.mp));
    port->start();
    const Received r = poll(port->port_id(), 5000, true);
    CHECK(r.frames.size() == 5000);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (port->stats().tx_freed < 5000 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(port->stats().tx_freed == 5000);
    port.reset();
    CHECK(rte_mempool_avail_count(pool.mp) == 8191);
}

// Bad input to create() is a sentence, not a crash or a half-made port.
TEST_CASE("create refuses a bad Config or a pool too small, with a sentence", "[flowgen][port]")
{
    REQUIRE(eal_up());
    const uint16_t ports_before = rte_eth_dev_count_avail();
    std::string err;
    Config bad;
    bad.idle_pct = 70;
    bad.rst_pct = 70;
    CHECK(Port::create(bad, nullptr, SOCKET_ID_ANY, err) == nullptr);
    CHECK(err == check_config(bad));
    Pool pool("fg_t_tiny", 255);
    CHECK(Port::create(config("pkt_size=9000"), pool.mp, SOCKET_ID_ANY, err) == nullptr);
    CHECK(err.find("has 2176-byte mbufs; frames need 9000 bytes") != std::string::npos);
    CHECK(rte_eth_dev_count_avail() == ports_before);
    // Its own pool is sized for jumbo frames.
    auto jumbo = Port::create(config("pkt_size=9000,packets=100"), nullptr, SOCKET_ID_ANY, err);
    CHECK(err == "");
    REQUIRE(jumbo != nullptr);
    Pool rx_pool("fg_t_rxq3", 255);
    REQUIRE(bring_up(jumbo->port_id(), rx_pool.mp));
    jumbo->start();
    const Received r = poll(jumbo->port_id(), 100, false);
    CHECK(r.frames.size() == 100);
}

// Lifecycle edges: stop() before start(), two ports side by side, destroying a running port.
TEST_CASE("ports have distinct names, stop before start is harmless, and a running port can be destroyed",
          "[flowgen][port]")
{
    REQUIRE(eal_up());
    Pool pool("fg_t_life", 8191);
    std::string err;
    auto a = Port::create(config("seed=1"), pool.mp, SOCKET_ID_ANY, err);
    auto b = Port::create(config("seed=2"), pool.mp, SOCKET_ID_ANY, err);
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a->name() != b->name());
    CHECK(a->port_id() != b->port_id());
    a->stop();
    a->start();
    a->start(); // no second thread
    b->start();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(a->stats().packets > 0); // the ring fills even before the port is polled
    const uint16_t a_id = a->port_id();
    a.reset(); // running, never stopped
    b.reset();
    CHECK_FALSE(rte_eth_dev_is_valid_port(a_id));
    CHECK(rte_mempool_avail_count(pool.mp) == 8191);
}

// realtime=1: 400 frames at 2000 pps take 0.2 s of wall time, not microseconds.
TEST_CASE("realtime paces frames to wall time", "[flowgen][port]")
{
    REQUIRE(eal_up());
    const Config cfg = config("flows=10,pps=2000,lifetime=1,packets=400,realtime=1,burst=8");
    std::string err;
    auto port = Port::create(cfg, nullptr, SOCKET_ID_ANY, err);
    REQUIRE(port != nullptr);
    Pool rx_pool("fg_t_rxq4", 255);
    REQUIRE(bring_up(port->port_id(), rx_pool.mp));
    const auto t0 = Clock::now();
    port->start();
    const Received r = poll(port->port_id(), 400, false);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    CHECK(r.frames.size() == 400);
    CHECK(ms >= 150);
    CHECK(ms < 5000);
    CHECK(same_as_core(cfg, r));
}

namespace {

// True if r's frames appear, in order and with their timestamps, in Core's stream (frames lost
// between them are allowed): what a consumer of a dropping port must see.
bool in_order_from_core(const Config& cfg, const Received& r)
{
    Core core(cfg);
    std::vector<uint8_t> buf(core.max_frame_len());
    uint64_t ts = 0;
    size_t i = 0;
    for (uint32_t len; i < r.frames.size() && (len = core.next(buf.data(), ts)) != 0;)
        if (len == r.frames[i].size() && std::memcmp(buf.data(), r.frames[i].data(), len) == 0 && ts == r.ts[i])
            ++i;
    return i == r.frames.size();
}

// Polls until the port has finished and its ring is empty, or 20 s passed.
Received drain(Port& port)
{
    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    Received r;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    rte_mbuf* m[32];
    while (Clock::now() < deadline) {
        const bool finished = port.stats().finished; // read before the poll: nothing can follow it
        const uint16_t n = rte_eth_rx_burst(port.port_id(), 0, m, 32);
        for (uint16_t i = 0; i < n; ++i) {
            const uint8_t* p = rte_pktmbuf_mtod(m[i], const uint8_t*);
            r.frames.emplace_back(p, p + m[i]->pkt_len);
            r.ts.push_back(off < 0 ? 0 : *RTE_MBUF_DYNFIELD(m[i], off, rte_mbuf_timestamp_t*));
        }
        rte_pktmbuf_free_bulk(m, n);
        if (finished && n == 0)
            break;
    }
    return r;
}

} // namespace

// overflow=drop: a consumer that stops polling loses what does not fit in the ring, counted, and the
// timeline goes on at wall-clock pace (a NIC's full descriptor ring), instead of being held back.
TEST_CASE("overflow=drop loses and counts what a full rx ring cannot take", "[flowgen][port]")
{
    REQUIRE(eal_up());
    const Config cfg =
        config("flows=100,pps=100000,lifetime=0.1,packets=20000,realtime=1,overflow=drop,ring=64,burst=32");
    std::string err;
    auto port = Port::create(cfg, nullptr, SOCKET_ID_ANY, err);
    REQUIRE(port != nullptr);
    Pool rx_pool("fg_t_rxq5", 255);
    REQUIRE(bring_up(port->port_id(), rx_pool.mp));
    port->start();
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // ~10000 frames due, 64 fit
    const Received r = drain(*port);
    const Stats s = port->stats();
    CHECK(s.finished);
    CHECK(s.rx_dropped > 0);
    CHECK(s.packets == r.frames.size());
    CHECK(s.packets + s.rx_dropped == 20000);
    CHECK(in_order_from_core(cfg, r));
}

// ...and a consumer that keeps up loses nothing: the same stream as with overflow=wait.
TEST_CASE("overflow=drop loses nothing while the consumer keeps up", "[flowgen][port]")
{
    REQUIRE(eal_up());
    // 0.2 s of traffic into a ring that holds 0.5 s of it: only a consumer stalled that long could lose.
    const Config cfg = config("flows=10,pps=2000,lifetime=1,packets=400,realtime=1,overflow=drop,ring=1024,burst=8");
    std::string err;
    auto port = Port::create(cfg, nullptr, SOCKET_ID_ANY, err);
    REQUIRE(port != nullptr);
    Pool rx_pool("fg_t_rxq6", 255);
    REQUIRE(bring_up(port->port_id(), rx_pool.mp));
    port->start();
    const Received r = poll(port->port_id(), 400, false);
    CHECK(r.frames.size() == 400);
    CHECK(port->stats().rx_dropped == 0);
    CHECK(same_as_core(cfg, r));
}

namespace {

// A pcap file (microsecond, Ethernet) of Core's first `n` frames; returns their timestamps. late_every:
// every late_every-th frame is written 700 us in the past (a capture whose timestamps go backwards).
std::vector<std::vector<uint8_t>> write_capture(const std::string& path, const Config& cfg, size_t n,
                                                std::vector<uint64_t>& ts, size_t late_every = 0)
{
    Core core(cfg);
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint8_t> buf(core.max_frame_len());
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
    std::fwrite(hdr, 4, 6, f);
    for (size_t i = 0; i < n; ++i) {
        uint64_t t = 0;
        const uint32_t len = core.next(buf.data(), t);
        REQUIRE(len != 0);
        if (late_every != 0 && i % late_every == late_every - 1)
            t -= 700;
        const uint32_t rec[4] = {uint32_t(t / 1'000'000), uint32_t(t % 1'000'000), len, len};
        std::fwrite(rec, 4, 4, f);
        std::fwrite(buf.data(), 1, len, f);
        frames.emplace_back(buf.begin(), buf.begin() + len);
        ts.push_back(t);
    }
    std::fclose(f);
    return frames;
}

bool bring_up_queues(uint16_t port, uint16_t queues, rte_mempool* rx_pool)
{
    rte_eth_conf conf;
    std::memset(&conf, 0, sizeof(conf));
    if (rte_eth_dev_configure(port, queues, queues, &conf) != 0)
        return false;
    for (uint16_t q = 0; q < queues; ++q)
        if (rte_eth_rx_queue_setup(port, q, 512, SOCKET_ID_ANY, nullptr, rx_pool) != 0 ||
            rte_eth_tx_queue_setup(port, q, 512, SOCKET_ID_ANY, nullptr) != 0)
            return false;
    return rte_eth_dev_start(port) == 0;
}

// Every queue's frames, each with its position in the capture (frames are told apart by content: Core
// never repeats a frame byte for byte within a run this short).
std::vector<std::vector<size_t>> poll_queues(uint16_t port, uint16_t queues,
                                             const std::vector<std::vector<uint8_t>>& want,
                                             const std::vector<uint64_t>& want_ts, size_t& wrong_ts)
{
    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    std::vector<std::vector<size_t>> got(queues);
    size_t n = 0;
    wrong_ts = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    rte_mbuf* m[32];
    while (n < want.size() && Clock::now() < deadline)
        for (uint16_t q = 0; q < queues; ++q) {
            const uint16_t k = rte_eth_rx_burst(port, q, m, 32);
            for (uint16_t i = 0; i < k; ++i, ++n) {
                const uint8_t* p = rte_pktmbuf_mtod(m[i], const uint8_t*);
                const std::vector<uint8_t> frame(p, p + m[i]->pkt_len);
                size_t at = want.size();
                for (size_t j = got[q].empty() ? 0 : got[q].back() + 1; j < want.size() && at == want.size(); ++j)
                    if (want[j] == frame)
                        at = j;
                got[q].push_back(at);
                if (at < want.size() &&
                    (off < 0 || *RTE_MBUF_DYNFIELD(m[i], off, rte_mbuf_timestamp_t*) != want_ts[at]))
                    ++wrong_ts;
            }
            rte_pktmbuf_free_bulk(m, k);
        }
    return got;
}

} // namespace

// queues=N replay=FILE: the port a NIC's RSS fills, from a capture (the rss plan's test port in flowcop).
TEST_CASE("replay=FILE with queues=3 delivers every frame of the capture once, with its timestamp, on the queue the "
          "RSS dealer names, in the capture's order on each queue; a programmed table moves them",
          "[flowgen][port][rss]")
{
    REQUIRE(eal_up());
    const std::string path = "/tmp/flowgen_test_replay_" + std::to_string(getpid()) + ".pcap";
    std::vector<uint64_t> ts;
    const auto frames = write_capture(path, config("flows=300,pps=100000,lifetime=0.05,ipv6_pct=30"), 3000, ts);
    Pool rx_pool("fg_t_rssq", 255);
    {
        std::string err;
        auto port =
            Port::create(config(("queues=3,ring=64,burst=8,replay=" + path).c_str()), nullptr, SOCKET_ID_ANY, err);
        REQUIRE(err == "");
        CHECK(port->rss_caps().queues == 3);
        CHECK(port->rss_caps().reta_size == RssDealer::kRetaSize);
        REQUIRE(bring_up_queues(port->port_id(), 3, rx_pool.mp));
        port->start();
        size_t wrong_ts = 0;
        const auto got = poll_queues(port->port_id(), 3, frames, ts, wrong_ts);
        const RssDealer dealer(3);
        size_t total = 0, misplaced = 0, unknown = 0;
        for (uint16_t q = 0; q < 3; ++q) {
            CHECK(!got[q].empty()); // every queue gets flows
            for (size_t at : got[q]) {
                ++total;
                if (at == frames.size())
                    ++unknown; // not found in order after the queue's previous frame
                else if (dealer.queue(frames[at].data(), uint32_t(frames[at].size())) != q)
                    ++misplaced;
            }
        }
        CHECK(total == frames.size());
        CHECK(unknown == 0);
        CHECK(misplaced == 0);
        CHECK(wrong_ts == 0);
        CHECK(port->stats().finished);
        CHECK(port->stats().packets == frames.size());
        CHECK(port->stats().virtual_now_us == ts.back());
        CHECK(port->program_rss(nullptr, 0, 0, {}).find("running") != std::string::npos);
    }
    {
        std::string err;
        auto port = Port::create(config(("queues=3,replay=" + path).c_str()), nullptr, SOCKET_ID_ANY, err);
        REQUIRE(err == "");
        uint8_t key[40];
        for (unsigned i = 0; i < 40; ++i)
            key[i] = i % 2 == 0 ? 0x6d : 0x5a;
        REQUIRE(port->program_rss(key, 40, RssDealer::offloads(), std::vector<uint16_t>(128, 2)) == "");
        REQUIRE(bring_up_queues(port->port_id(), 3, rx_pool.mp));
        port->start();
        size_t wrong_ts = 0;
        const auto got = poll_queues(port->port_id(), 3, frames, ts, wrong_ts);
        CHECK(got[0].empty());
        CHECK(got[1].empty());
        CHECK(got[2].size() == frames.size());
    }
    std::remove(path.c_str());
    std::string err;
    CHECK(Port::create(config("replay=/nonexistent/x.pcap"), nullptr, SOCKET_ID_ANY, err) == nullptr);
    CHECK(err.find("flowgen: replay: cannot read '/nonexistent/x.pcap'") == 0);
}

// Time marks (time_marks.h): what the rss plan's lcores follow under --clock packet (dataplane/clock.h).
TEST_CASE("time marks: each queue's reader, applying its marks between its frames, has at every frame the stream's "
          "time there (its running maximum), passes every time of the stream in order, and ends at the last",
          "[flowgen][port][rss]")
{
    REQUIRE(eal_up());
    const std::string path = "/tmp/flowgen_test_marks_" + std::to_string(getpid()) + ".pcap";
    std::vector<uint64_t> ts;
    // pps=20000: 50 us apart, so the late frames (700 us back) fall behind the stream's time.
    const auto frames = write_capture(path, config("flows=200,pps=20000,lifetime=0.5"), 3000, ts, 37);
    std::vector<uint64_t> running(ts.size());
    std::vector<uint64_t> distinct;
    for (size_t i = 0; i < ts.size(); ++i) {
        running[i] = std::max(ts[i], i == 0 ? 0 : running[i - 1]);
        if (distinct.empty() || distinct.back() != running[i])
            distinct.push_back(running[i]);
    }
    Pool rx_pool("fg_t_marks", 255);
    std::string err;
    auto port = Port::create(config(("queues=3,ring=64,burst=8,replay=" + path).c_str()), nullptr, SOCKET_ID_ANY, err);
    REQUIRE(err == "");
    CHECK(port->time_marks(0) == nullptr);
    REQUIRE(port->enable_time_marks() == "");
    REQUIRE(bring_up_queues(port->port_id(), 3, rx_pool.mp));
    port->start();
    CHECK(port->enable_time_marks().find("running") != std::string::npos);

    const int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    REQUIRE(off >= 0);
    struct Reader {
        uint64_t clock = 0, read = 0, last_at = 0;
        std::vector<uint64_t> passed; // each new clock value, in order
        void advance(uint64_t t)
        {
            if (t > clock) {
                clock = t;
                passed.push_back(t);
            }
        }
        void apply(TimeMarks& marks, uint64_t upto)
        {
            TimeMarks::Mark m{};
            while (marks.front(m) && m.before <= upto) {
                advance(m.time_us);
                marks.pop();
            }
        }
    };
    Reader r[3];
    size_t n = 0, unknown = 0, wrong_time = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    rte_mbuf* m[32];
    while (n < frames.size() && Clock::now() < deadline)
        for (uint16_t q = 0; q < 3; ++q) {
            TimeMarks& marks = *port->time_marks(q);
            const uint16_t k = rte_eth_rx_burst(port->port_id(), q, m, 32);
            for (uint16_t i = 0; i < k; ++i, ++n) {
                r[q].apply(marks, r[q].read); // the stream's times before this frame
                r[q].advance(*RTE_MBUF_DYNFIELD(m[i], off, rte_mbuf_timestamp_t*));
                ++r[q].read;
                const uint8_t* p = rte_pktmbuf_mtod(m[i], const uint8_t*);
                const std::vector<uint8_t> frame(p, p + m[i]->pkt_len);
                size_t at = frames.size();
                for (size_t j = r[q].last_at; j < frames.size() && at == frames.size(); ++j)
                    if (frames[j] == frame)
                        at = j;
                if (at == frames.size()) {
                    ++unknown;
                    continue;
                }
                r[q].last_at = at + 1;
                wrong_time += r[q].clock != running[at];
            }
            rte_pktmbuf_free_bulk(m, k);
            r[q].apply(marks, r[q].read); // the times dealt elsewhere after its last frame
        }
    // The marks after the last frames: pushed before the port finished.
    while (!port->stats().finished && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (uint16_t q = 0; q < 3; ++q) {
        r[q].apply(*port->time_marks(q), r[q].read);
        CHECK(r[q].read != 0);
        // Compared as one bool: Catch's TAP reporter would print both vectors on one line per check.
        const bool passed_every_time = r[q].passed == distinct;
        CHECK(passed_every_time);
        CHECK(port->time_marks(q)->size() == 0);
    }
    CHECK(n == frames.size());
    CHECK(unknown == 0);
    CHECK(wrong_time == 0);
    port.reset();
    std::remove(path.c_str());
    auto one = Port::create(config("queues=1"), nullptr, SOCKET_ID_ANY, err);
    REQUIRE(one);
    CHECK(one->enable_time_marks().find("one queue") != std::string::npos);
    auto drop = Port::create(config("queues=2,realtime=1,overflow=drop"), nullptr, SOCKET_ID_ANY, err);
    REQUIRE(drop);
    CHECK(drop->enable_time_marks().find("overflow=wait") != std::string::npos);
}
