// SPDX-License-Identifier: BSD-3-Clause
// The ownership plan (app/service/port_plan.h): every flow has exactly one owner lcore,
// whatever the ports can do. No EAL: the plan is computed from capabilities alone.
#include <service/port_plan.h>

#include <rte_ethdev.h>

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <utility>

using namespace flowcop::app;

namespace {

PortCaps nic(uint16_t id, uint16_t queues = 16)
{
    return PortCaps{id, "0000:0" + std::to_string(id) + ":00.0", queues, queues, RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP, 40};
}

PortCaps vdev(uint16_t id)
{
    return PortCaps{id, "net_pcap" + std::to_string(id), 1, 1, 0, 0};
}

// (port, queue) -> the lcores polling it: must be exactly one each, and every queue of
// every port must be polled.
std::map<std::pair<uint16_t, uint16_t>, std::set<unsigned>> owners(const PortPlan& plan)
{
    std::map<std::pair<uint16_t, uint16_t>, std::set<unsigned>> m;
    for (const WorkerPlan& w : plan.workers)
        for (const RxQueueRef& q : w.rx)
            m[{q.port, q.queue}].insert(w.lcore);
    return m;
}

void require_one_owner_per_queue(const PortPlan& plan, const std::vector<PortCaps>& ports)
{
    const auto m = owners(plan);
    REQUIRE(m.size() == ports.size() * plan.queues_per_port);
    for (const PortCaps& p : ports)
        for (uint16_t q = 0; q < plan.queues_per_port; ++q) {
            INFO("port " << p.id << " queue " << q);
            REQUIRE(m.count({p.id, q}) == 1);
            REQUIRE(m.at({p.id, q}).size() == 1);
        }
}

} // namespace

TEST_CASE("ports that can all hash symmetrically get one queue per lcore, lcore i polling queue i of every port",
          "[port_plan]")
{
    const std::vector<PortCaps> ports{nic(0), nic(1)};
    const std::vector<unsigned> lcores{2, 4, 6};
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports(ports, lcores, Mode::monitor, plan, error));
    CHECK(plan.rss);
    CHECK(plan.queues_per_port == 3);
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
    require_one_owner_per_queue(plan, ports);
}

TEST_CASE("one port that cannot hash symmetrically makes the first lcore the single owner of every port, with a "
          "warning naming it",
          "[port_plan]")
{
    for (const PortCaps& weak : {vdev(1), PortCaps{1, "few-queues", 2, 2, RTE_ETH_RSS_IP, 40},
                                 PortCaps{1, "no-ip-tcp-rss", 16, 16, RTE_ETH_RSS_L2_PAYLOAD, 40},
                                 PortCaps{1, "short-key", 16, 16, RTE_ETH_RSS_IP, 16},
                                 PortCaps{1, "few-tx-queues", 16, 1, RTE_ETH_RSS_TCP, 52}}) {
        INFO(weak.name);
        const std::vector<PortCaps> ports{nic(0), weak, nic(2)};
        PortPlan plan;
        std::string error;
        REQUIRE(plan_ports(ports, {3, 5, 7}, Mode::monitor, plan, error));
        CHECK_FALSE(plan.rss);
        CHECK(plan.queues_per_port == 1);
        REQUIRE(plan.workers.size() == 1);
        CHECK(plan.workers[0].lcore == 3);
        CHECK(plan.workers[0].rx.size() == 3);
        REQUIRE(plan.warnings.size() == 1);
        CHECK(plan.warnings[0].find("port 1 (" + weak.name + ")") != std::string::npos);
        CHECK(plan.warnings[0].find("polled by lcore 3") != std::string::npos);
        require_one_owner_per_queue(plan, ports);
    }
}

TEST_CASE("one lcore needs no RSS and gets no warning", "[port_plan]")
{
    const std::vector<PortCaps> ports{vdev(0), vdev(1)};
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports(ports, {0}, Mode::monitor, plan, error));
    CHECK_FALSE(plan.rss);
    CHECK(plan.warnings.empty());
    REQUIRE(plan.workers.size() == 1);
    require_one_owner_per_queue(plan, ports);
}

TEST_CASE("inline mode sends what port i receives out of port i^1, on the receiving lcore's own TX queue",
          "[port_plan]")
{
    for (bool rss : {true, false}) {
        INFO("rss " << rss);
        const std::vector<PortCaps> ports = rss ? std::vector<PortCaps>{nic(0), nic(1), nic(4), nic(5)}
                                                : std::vector<PortCaps>{vdev(0), vdev(1), vdev(4), vdev(5)};
        PortPlan plan;
        std::string error;
        REQUIRE(plan_ports(ports, {0, 1}, Mode::inline_fwd, plan, error));
        CHECK(plan.rss == rss);
        const std::map<uint16_t, uint16_t> peer{{0, 1}, {1, 0}, {4, 5}, {5, 4}};
        std::set<std::pair<uint16_t, uint16_t>> tx_used;
        for (const WorkerPlan& w : plan.workers)
            for (const RxQueueRef& q : w.rx) {
                CHECK(q.tx_port == peer.at(q.port));
                CHECK(q.tx_queue == q.queue);
                CHECK(tx_used.insert({q.tx_port, q.tx_queue}).second); // no TX queue has two senders
            }
        require_one_owner_per_queue(plan, ports);
    }
}

TEST_CASE("no plan without ports, or with an odd number of ports in inline mode: one sentence says why", "[port_plan]")
{
    PortPlan plan;
    std::string error;
    CHECK_FALSE(plan_ports({}, {0}, Mode::monitor, plan, error));
    CHECK(error.find("no ports") == 0);
    CHECK(error.find("--vdev") != std::string::npos);
    CHECK_FALSE(plan_ports({vdev(0), vdev(1), vdev(2)}, {0}, Mode::inline_fwd, plan, error));
    CHECK(error.find("3 port(s)") != std::string::npos);
    CHECK(plan_ports({vdev(0), vdev(1), vdev(2)}, {0}, Mode::monitor, plan, error));
}

TEST_CASE("port names are kept by port id for messages and metrics labels", "[port_plan]")
{
    PortPlan plan;
    std::string error;
    REQUIRE(plan_ports({vdev(0), vdev(3)}, {0}, Mode::monitor, plan, error));
    CHECK(plan.port_name(0) == "net_pcap0");
    CHECK(plan.port_name(3) == "net_pcap3");
    CHECK(plan.port_name(2) == "port2");
    CHECK(plan.port_name(9) == "port9");
}
