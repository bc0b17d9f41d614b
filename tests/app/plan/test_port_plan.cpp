// SPDX-License-Identifier: BSD-3-Clause
// The ownership plan (app/service/plan/port_plan.h): capabilities in, plan out. Every flow has exactly one
// owner lcore and every queue a device delivers packets to is polled, whatever the ports can do. No EAL.
#include <service/plan/port_plan.h>

#include <rte_ethdev.h>
#include <rte_thash.h>

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <utility>

using namespace flowcop::app;

namespace {

constexpr uint64_t kNicFields = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;

PortCaps nic(uint16_t id, uint16_t queues = 16, uint16_t key = 40, uint16_t reta = 128)
{
    PortCaps c;
    c.id = id;
    c.name = "0000:0" + std::to_string(id) + ":00.0";
    c.max_rx_queues = c.max_tx_queues = queues;
    c.rss_offloads = kNicFields;
    c.hash_key_size = key;
    c.reta_size = reta;
    return c;
}

// A virtual device that made its own queues at probe and has no RSS: pcap (one queue per rx file),
// af_packet (qpairs sockets in one kernel fanout group), a ring vdev.
PortCaps vdev(uint16_t id, uint16_t own_queues = 1, const std::string& driver = "net_pcap")
{
    PortCaps c;
    c.id = id;
    c.name = driver + std::to_string(id);
    c.max_rx_queues = c.max_tx_queues = own_queues;
    c.own_rx_queues = own_queues;
    return c;
}

// (port, queue) -> the lcores polling it.
std::map<std::pair<uint16_t, uint16_t>, std::set<unsigned>> owners(const PortPlan& plan)
{
    std::map<std::pair<uint16_t, uint16_t>, std::set<unsigned>> m;
    for (const WorkerPlan& w : plan.workers)
        for (const RxQueueRef& q : w.rx)
            m[{q.port, q.queue}].insert(w.lcore);
    return m;
}

// Every configured RX queue of every port has exactly one poller, and a port configures at least the
// queues its device made itself.
void require_every_queue_polled_once(const PortPlan& plan, const std::vector<PortCaps>& caps)
{
    const auto m = owners(plan);
    REQUIRE(plan.ports.size() == caps.size());
    size_t queues = 0;
    for (size_t i = 0; i < caps.size(); ++i) {
        const PortSetup& ps = plan.ports[i];
        REQUIRE(ps.id == caps[i].id);
        CHECK(ps.rx_queues >= caps[i].own_rx_queues);
        CHECK(ps.rx_queues <= caps[i].max_rx_queues);
        CHECK(ps.tx_queues <= caps[i].max_tx_queues);
        queues += ps.rx_queues;
        for (uint16_t q = 0; q < ps.rx_queues; ++q) {
            INFO("port " << ps.id << " queue " << q);
            REQUIRE(m.count({ps.id, q}) == 1);
            CHECK(m.at({ps.id, q}).size() == 1);
        }
    }
    CHECK(m.size() == queues);
    CHECK(plan.rx_queues() == queues);
}

PortPlan make(const std::vector<PortCaps>& ports, const std::vector<unsigned>& lcores, Mode mode = Mode::monitor)
{
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports(ports, lcores, mode, plan, error));
    CHECK(error.empty());
    return plan;
}

// The Toeplitz hash a NIC computes (DPDK's software model of it) over addresses and ports.
uint32_t toeplitz_v4(const uint8_t* key, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport)
{
    uint32_t t[3] = {src, dst, uint32_t(sport) << 16 | dport};
    return rte_softrss(t, 3, key);
}

uint32_t toeplitz_v6(const uint8_t* key, const uint32_t src[4], const uint32_t dst[4], uint16_t sport, uint16_t dport)
{
    uint32_t t[9];
    for (int i = 0; i < 4; ++i) {
        t[i] = src[i];
        t[4 + i] = dst[i];
    }
    t[8] = uint32_t(sport) << 16 | dport;
    return rte_softrss(t, 9, key);
}

} // namespace

// Issue 20's first promise: where every port can, one RSS configuration serves all of them.
TEST_CASE("ports that can all hash symmetrically get one RSS configuration: the fields they share, the smallest "
          "table's period, and worker i polls queue i of every port",
          "[port_plan][rss]")
{
    PortCaps a = nic(0, 16, 40, 128);
    PortCaps b = nic(1, 64, 52, 512);
    b.rss_offloads = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP; // no UDP hashing on this one
    const std::vector<PortCaps> ports{a, b};
    const std::vector<unsigned> lcores{2, 4, 6};
    const PortPlan plan = make(ports, lcores);
    CHECK(plan.kind == OwnershipPlan::rss);
    CHECK(plan.reason == PlanReason::symmetric_rss);
    CHECK(plan.rss_hf == (wanted_rss_fields() & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP)));
    CHECK((plan.rss_hf & RTE_ETH_RSS_IPV6_EX) == 0); // a home address option is one direction's only
    // SCTP is keyed by addresses: hashing its ports would spread one flow over lcores.
    CHECK((wanted_rss_fields() & RTE_ETH_RSS_SCTP) == 0);
    CHECK(plan.reta_period == 128);
    CHECK(plan.warnings.empty());
    REQUIRE(plan.workers.size() == 3);
    for (unsigned w = 0; w < 3; ++w) {
        CHECK(plan.workers[w].lcore == lcores[w]);
        REQUIRE(plan.workers[w].rx.size() == 2);
        for (const RxQueueRef& q : plan.workers[w].rx) {
            CHECK(q.queue == w);
            CHECK(q.tx_port == q.port); // monitor mode: nothing is sent, tx_port is the port itself
        }
    }
    REQUIRE(plan.ports.size() == 2);
    for (const PortSetup& ps : plan.ports) {
        CHECK(ps.rx_queues == 3);
        CHECK(ps.tx_queues == 1); // monitor mode sends nothing
        CHECK(ps.spread);
        CHECK(ps.symmetric);
    }
    CHECK(plan.ports[0].key_bytes == 40);
    CHECK(plan.ports[1].key_bytes == 52);
    CHECK(plan.ports[1].reta_size == 512);
    require_every_queue_polled_once(plan, ports);
}

// Why the key and table make one owner: the NIC's Toeplitz hash of a flow is the same in both
// directions, with every port's key length, and both ports' tables send it to the same queue.
TEST_CASE("the symmetric key hashes both directions alike at every key length, and every port's table sends a hash "
          "to the same worker",
          "[port_plan][rss]")
{
    const PortPlan plan = make({nic(0, 16, 40, 64), nic(1, 16, 52, 512)}, {0, 1, 2});
    uint8_t key40[40], key52[52];
    symmetric_key(key40, sizeof key40);
    symmetric_key(key52, sizeof key52);
    const std::vector<uint16_t> t64 = redirection_table(plan, 64);
    const std::vector<uint16_t> t512 = redirection_table(plan, 512);
    std::set<uint16_t> used;
    uint32_t x = 12345;
    auto next = [&x] { return x = x * 1103515245u + 12345u; };
    for (int i = 0; i < 2000; ++i) {
        const uint32_t s = next(), d = next();
        const uint16_t sp = uint16_t(next() >> 8), dp = uint16_t(next() >> 8);
        const uint32_t h = toeplitz_v4(key40, s, d, sp, dp);
        REQUIRE(h == toeplitz_v4(key40, d, s, dp, sp));
        REQUIRE(h == toeplitz_v4(key52, d, s, dp, sp));
        uint32_t s6[4] = {next(), next(), next(), next()}, d6[4] = {next(), next(), next(), next()};
        const uint32_t h6 = toeplitz_v6(key40, s6, d6, sp, dp);
        REQUIRE(h6 == toeplitz_v6(key52, d6, s6, dp, sp));
        // A NIC indexes its table with the hash's low bits.
        REQUIRE(t64[h % 64] == t512[h % 512]);
        REQUIRE(t64[h6 % 64] == t512[h6 % 512]);
        used.insert(t64[h % 64]);
    }
    CHECK(used == std::set<uint16_t>{0, 1, 2});
}

// The fallbacks, one by one: each names the port and the rule, and the workers keep working.
TEST_CASE("a port that cannot take the RSS configuration makes the plan handoff, naming the port and the rule",
          "[port_plan][handoff]")
{
    PortCaps few = nic(1, 2);
    PortCaps no_ip_tcp = nic(1);
    no_ip_tcp.rss_offloads = RTE_ETH_RSS_L2_PAYLOAD;
    PortCaps no_tx = nic(1);
    no_tx.max_tx_queues = 1;
    PortCaps no_key = nic(1, 16, 0);
    PortCaps short_key = nic(1, 16, 16);
    PortCaps no_reta = nic(1, 16, 40, 0); // net_tap: RSS and a key, no table to program
    PortCaps small_reta = nic(1, 16, 40, 2);
    PortCaps own_queues = nic(1, 16);
    own_queues.own_rx_queues = 8;
    const struct {
        PortCaps caps;
        PlanReason reason;
        const char* says;
        Mode mode;
    } cases[] = {
        {vdev(1), PlanReason::no_rss, "has no RSS", Mode::monitor},
        {vdev(1, 2, "net_af_packet"), PlanReason::no_rss, "kernel's fanout", Mode::monitor},
        {no_ip_tcp, PlanReason::no_rss, "has no RSS", Mode::monitor},
        {few, PlanReason::too_few_queues, "not one for each of 3 workers", Mode::monitor},
        {no_tx, PlanReason::too_few_queues, "16 RX and 1 TX", Mode::monitor},
        {own_queues, PlanReason::too_few_queues, "8 of them its own", Mode::monitor},
        {no_key, PlanReason::key_not_settable, "cannot set the symmetric key", Mode::monitor},
        {short_key, PlanReason::key_not_settable, "16-byte hash key", Mode::monitor},
        {no_reta, PlanReason::no_reta, "0 redirection table entries", Mode::monitor},
        {small_reta, PlanReason::no_reta, "2 redirection table entries", Mode::monitor},
    };
    for (const auto& c : cases) {
        INFO(c.caps.name << " " << reason_name(c.reason));
        const std::vector<PortCaps> ports{nic(0), c.caps, nic(2)};
        const PortPlan plan = make(ports, {3, 5, 7}, c.mode);
        if (c.caps.max_tx_queues == 1 && c.caps.rss_offloads != 0) {
            // Monitor mode needs no TX queue per worker: a port with one TX queue can still do RSS.
            CHECK(plan.kind == OwnershipPlan::rss);
            continue;
        }
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == c.reason);
        CHECK(plan.why.find("port 1 (" + c.caps.name + ") ") == 0);
        CHECK(plan.why.find(c.says) != std::string::npos);
        CHECK(plan.why.find("hands the packets of flows it does not own to their owner") != std::string::npos);
        CHECK(plan.warnings.empty());
        CHECK(plan.rss_hf == 0);
        REQUIRE(plan.workers.size() == 3); // every lcore works: none is left idle
        for (const PortSetup& ps : plan.ports)
            CHECK_FALSE(ps.symmetric);
        require_every_queue_polled_once(plan, ports);
    }
}

TEST_CASE("ports whose hash fields or table sizes cannot be made one configuration make the plan handoff",
          "[port_plan][handoff]")
{
    SECTION("no hash of TCP over both IPv4 and IPv6 in common")
    {
        PortCaps v4 = nic(0), v6 = nic(1);
        v4.rss_offloads = RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
        v6.rss_offloads = RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
        const PortPlan plan = make({v4, v6}, {0, 1});
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::no_common_fields);
        CHECK(plan.why.find("share no RSS hash of TCP over both IPv4 and IPv6") != std::string::npos);
        require_every_queue_polled_once(plan, {v4, v6});
    }
    SECTION("one table size that is not a multiple of the smallest")
    {
        const std::vector<PortCaps> ports{nic(0, 16, 40, 128), nic(1, 16, 40, 192)};
        const PortPlan plan = make(ports, {0, 1});
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::reta_sizes_differ);
        CHECK(plan.why.find("port 1 (0000:01:00.0) has a 192-entry redirection table") == 0);
        require_every_queue_polled_once(plan, ports);
    }
}

// The silent loss of issue 20: af_packet with qpairs=2 fans packets out to two sockets whatever flowcop
// configures; polling queue 0 only lost half the packets unseen.
TEST_CASE("every queue a device made itself is polled, on one lcore as on several", "[port_plan][queues]")
{
    const std::vector<PortCaps> ports{vdev(0, 2, "net_af_packet"), vdev(1, 2, "net_af_packet")};
    SECTION("one lcore polls all four queues")
    {
        const PortPlan plan = make(ports, {0});
        CHECK(plan.kind == OwnershipPlan::single_lcore);
        CHECK(plan.reason == PlanReason::one_lcore);
        REQUIRE(plan.workers.size() == 1);
        CHECK(plan.workers[0].rx.size() == 4);
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("two lcores share them, one queue of each port each")
    {
        const PortPlan plan = make(ports, {0, 1}, Mode::inline_fwd);
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::no_rss);
        REQUIRE(plan.workers.size() == 2);
        for (const WorkerPlan& w : plan.workers) {
            REQUIRE(w.rx.size() == 2);
            CHECK(w.rx[0].port != w.rx[1].port);
        }
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("more queues than lcores: dealt in turn")
    {
        const std::vector<PortCaps> many{vdev(0, 5, "net_ring"), vdev(1, 1)};
        const PortPlan plan = make(many, {0, 1, 2});
        REQUIRE(plan.workers.size() == 3);
        CHECK(plan.workers[0].rx.size() == 2);
        CHECK(plan.workers[1].rx.size() == 2);
        CHECK(plan.workers[2].rx.size() == 2);
        require_every_queue_polled_once(plan, many);
    }
}

TEST_CASE("under handoff a NIC that can spread gets a queue per worker and spreads with its own hash, and workers "
          "without a queue still own flows",
          "[port_plan][handoff]")
{
    const std::vector<PortCaps> ports{vdev(0), nic(1, 2)};
    const PortPlan plan = make(ports, {0, 1, 2, 3});
    CHECK(plan.kind == OwnershipPlan::handoff);
    REQUIRE(plan.ports.size() == 2);
    CHECK(plan.ports[0].rx_queues == 1);
    CHECK_FALSE(plan.ports[0].spread);
    CHECK(plan.ports[1].rx_queues == 2); // all it has
    CHECK(plan.ports[1].spread);
    CHECK_FALSE(plan.ports[1].symmetric);
    REQUIRE(plan.workers.size() == 4);
    CHECK(plan.workers[3].rx.empty()); // it tracks what is handed to it
    require_every_queue_polled_once(plan, ports);
}

TEST_CASE("inline mode gives each worker a TX queue of its own on every port and forwards port i to port i^1",
          "[port_plan][inline]")
{
    for (const bool rss : {true, false}) {
        INFO("rss " << rss);
        const std::vector<PortCaps> ports = rss ? std::vector<PortCaps>{nic(0), nic(1), nic(4), nic(5)}
                                                : std::vector<PortCaps>{vdev(0, 2), vdev(1, 2), vdev(4, 2), vdev(5, 2)};
        const PortPlan plan = make(ports, {0, 1}, Mode::inline_fwd);
        CHECK(plan.kind == (rss ? OwnershipPlan::rss : OwnershipPlan::handoff));
        const std::map<uint16_t, uint16_t> peer{{0, 1}, {1, 0}, {4, 5}, {5, 4}};
        for (const auto& [from, to] : peer)
            CHECK(plan.peer[from] == to);
        std::set<uint16_t> tx_queues;
        for (const WorkerPlan& w : plan.workers) {
            CHECK(tx_queues.insert(w.tx_queue).second); // no TX queue has two writers
            for (const RxQueueRef& q : w.rx) {
                CHECK(q.tx_port == peer.at(q.port));
                CHECK(q.tx_queue == w.tx_queue);
            }
        }
        for (const PortSetup& ps : plan.ports)
            CHECK(ps.tx_queues == 2);
        require_every_queue_polled_once(plan, ports);
    }
}

TEST_CASE("inline mode on a port with fewer TX queues than lcores runs fewer workers and says which lcores idle",
          "[port_plan][inline]")
{
    SECTION("one TX queue: one worker polls everything")
    {
        const std::vector<PortCaps> ports{nic(0), vdev(1, 1, "net_af_packet")};
        const PortPlan plan = make(ports, {0, 1}, Mode::inline_fwd);
        CHECK(plan.kind == OwnershipPlan::single_lcore);
        CHECK(plan.reason == PlanReason::one_tx_queue);
        REQUIRE(plan.warnings.size() == 1);
        CHECK(plan.warnings[0] == "port 1 (net_af_packet1) has 1 TX queue(s): inline mode runs 1 worker(s), each "
                                  "forwarding on a TX queue of its own, and lcore(s) 1 stay idle");
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("two TX queues on three lcores: two workers")
    {
        const std::vector<PortCaps> ports{vdev(0, 2), vdev(1, 2)};
        const PortPlan plan = make(ports, {0, 1, 2}, Mode::inline_fwd);
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.workers.size() == 2);
        REQUIRE(plan.warnings.size() == 1);
        CHECK(plan.warnings[0].find("lcore(s) 2 stay idle") != std::string::npos);
        require_every_queue_polled_once(plan, ports);
    }
}

TEST_CASE("a port that did not keep the RSS configuration turns the plan into handoff over the same queues",
          "[port_plan][rss]")
{
    PortPlan plan = make({nic(0), nic(1)}, {0, 1}, Mode::inline_fwd);
    REQUIRE(plan.rss());
    const auto before = owners(plan);
    fall_back_to_handoff(plan, PlanReason::rss_not_kept, "port 1 (x) kept another hash key");
    CHECK(plan.kind == OwnershipPlan::handoff);
    CHECK(plan.reason == PlanReason::rss_not_kept);
    CHECK(plan.why.find("port 1 (x) kept another hash key: each of the 2 workers keeps polling") == 0);
    CHECK(owners(plan) == before);
    for (const PortSetup& ps : plan.ports) {
        CHECK(ps.spread);
        CHECK_FALSE(ps.symmetric);
    }
}

TEST_CASE("one lcore needs no RSS and gets no warning", "[port_plan]")
{
    const std::vector<PortCaps> ports{vdev(0), nic(1)};
    const PortPlan plan = make(ports, {0});
    CHECK(plan.kind == OwnershipPlan::single_lcore);
    CHECK(plan.reason == PlanReason::one_lcore);
    CHECK(plan.why == "lcore 0 polls every queue of every port and owns every flow");
    CHECK(plan.warnings.empty());
    REQUIRE(plan.workers.size() == 1);
    require_every_queue_polled_once(plan, ports);
}

TEST_CASE("no plan without ports or lcores, or with an odd number of ports in inline mode: one sentence says why",
          "[port_plan]")
{
    PortPlan plan;
    std::string error;
    CHECK_FALSE(plan_ports({}, {0}, Mode::monitor, plan, error));
    CHECK(error.find("no ports") == 0);
    CHECK(error.find("--vdev") != std::string::npos);
    CHECK_FALSE(plan_ports({vdev(0), vdev(1), vdev(2)}, {0}, Mode::inline_fwd, plan, error));
    CHECK(error.find("3 port(s)") != std::string::npos);
    CHECK_FALSE(plan_ports({vdev(0)}, {}, Mode::monitor, plan, error));
    CHECK(error == "no lcores to poll the ports");
    CHECK(plan_ports({vdev(0), vdev(1), vdev(2)}, {0}, Mode::monitor, plan, error));
}

TEST_CASE("port names are kept by port id for messages and metrics labels, and every plan and reason has a name",
          "[port_plan]")
{
    const PortPlan plan = make({vdev(0), vdev(3)}, {0});
    CHECK(plan.port_name(0) == "net_pcap0");
    CHECK(plan.port_name(3) == "net_pcap3");
    CHECK(plan.port_name(2) == "port2");
    CHECK(plan.port_name(9) == "port9");
    std::set<std::string> names;
    for (unsigned i = 0; i < kOwnershipPlanCount; ++i)
        names.insert(plan_name(OwnershipPlan(i)));
    for (unsigned i = 0; i < kPlanReasonCount; ++i)
        names.insert(reason_name(PlanReason(i)));
    CHECK(names.size() == kOwnershipPlanCount + kPlanReasonCount);
    CHECK(names.count("?") == 0);
}

// flowcop's own ring-backed port (--flowgen queues=N) deals its packets in software by the symmetric
// Toeplitz hash: it declares a NIC's capabilities (the ring PMD under it reports none), and the plan's
// rules apply to it as to a NIC. Its queues are its own (made at probe), so it needs exactly one per worker.
TEST_CASE("flowcop's own port that deals by RSS in software gets the rss plan on as many lcores as it has queues, "
          "configured as the plain ring device it is; with fewer queues, or beside a port without RSS, handoff",
          "[port_plan][rss][soft]")
{
    auto flowgen = [](uint16_t id, uint16_t queues) {
        PortCaps c = vdev(id, queues, "net_ring_net_flowgen");
        c.soft_rss = true;
        if (queues > 1) {
            c.rss_offloads = wanted_rss_fields();
            c.hash_key_size = 40;
            c.reta_size = 128;
        }
        return c;
    };
    SECTION("queues=2 on two lcores: rss, each worker polls its queue, the table and key are given to the port")
    {
        const std::vector<PortCaps> ports{flowgen(0, 2)};
        const PortPlan plan = make(ports, {0, 1});
        CHECK(plan.kind == OwnershipPlan::rss);
        CHECK(plan.reason == PlanReason::symmetric_rss);
        CHECK(plan.rss_hf == wanted_rss_fields());
        CHECK(plan.reta_period == 128);
        REQUIRE(plan.ports.size() == 1);
        CHECK(plan.ports[0].symmetric);
        CHECK(plan.ports[0].soft_rss);
        CHECK_FALSE(plan.ports[0].spread); // no RTE_ETH_MQ_RX_RSS: ethdev would refuse the ring PMD
        CHECK(plan.ports[0].rx_queues == 2);
        CHECK(plan.ports[0].key_bytes == 40);
        for (unsigned w = 0; w < 2; ++w) {
            REQUIRE(plan.workers[w].rx.size() == 1);
            CHECK(plan.workers[w].rx[0].queue == w);
        }
        const std::vector<uint16_t> table = redirection_table(plan, 128);
        for (unsigned j = 0; j < 128; ++j)
            CHECK(table[j] == j % 2);
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("beside a NIC: one configuration for both")
    {
        const std::vector<PortCaps> ports{nic(0, 16, 52, 512), flowgen(1, 3)};
        const PortPlan plan = make(ports, {0, 1, 2});
        CHECK(plan.kind == OwnershipPlan::rss);
        CHECK(plan.reta_period == 128);
        CHECK(plan.ports[0].spread);
        CHECK_FALSE(plan.ports[0].soft_rss);
        CHECK(plan.ports[1].soft_rss);
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("queues=2 on three lcores: too few queues, handoff over its two")
    {
        const std::vector<PortCaps> ports{flowgen(0, 2)};
        const PortPlan plan = make(ports, {0, 1, 2});
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::too_few_queues);
        CHECK_FALSE(plan.ports[0].symmetric);
        require_every_queue_polled_once(plan, ports);
    }
    SECTION("queues=1 on two lcores: no RSS, and the sentence says which key gives it")
    {
        const PortPlan plan = make({flowgen(0, 1)}, {0, 1});
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::no_rss);
        CHECK(plan.why.find("queues=2") != std::string::npos);
    }
    SECTION("beside a pcap port: handoff, named after the pcap port")
    {
        const std::vector<PortCaps> ports{flowgen(0, 2), vdev(1)};
        const PortPlan plan = make(ports, {0, 1});
        CHECK(plan.kind == OwnershipPlan::handoff);
        CHECK(plan.reason == PlanReason::no_rss);
        CHECK(plan.why.find("net_pcap1") != std::string::npos);
        require_every_queue_polled_once(plan, ports);
    }
}
