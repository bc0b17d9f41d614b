// SPDX-License-Identifier: BSD-3-Clause
#include "worker.h"

#include <conntrack/relaxed.h>
#include <packet/packet_mbuf.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

namespace flowcop::app {

using conntrack::bump;
using conntrack::store_relaxed;

std::unique_ptr<Worker> Worker::create(const WorkerPlan& plan, conntrack::FlowTable& table, const TscClock& clock,
                                       TimestampField ts, const WorkerSettings& settings, std::string& error)
{
    std::unique_ptr<Worker> w(new Worker(plan, table, clock, ts, settings));
    const std::string name = "flowcop_mbox" + std::to_string(plan.lcore);
    w->mailbox_ = rte_ring_create(name.c_str(), 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
    if (w->mailbox_ == nullptr) {
        error = "lcore " + std::to_string(plan.lcore) + ": cannot create its mailbox ring: " + rte_strerror(rte_errno);
        return nullptr;
    }
    return w;
}

Worker::~Worker()
{
    rte_ring_free(mailbox_);
}

bool Worker::post(Command* cmd) noexcept
{
    return rte_ring_mp_enqueue(mailbox_, cmd) == 0;
}

uint64_t Worker::now_ns() const noexcept
{
    return settings_.clock == ClockSource::packet ? packet_clock_.now_ns() : clock_.now_ns();
}

void Worker::run(const std::atomic<bool>& quit) noexcept
{
    while (!quit.load(std::memory_order_relaxed)) {
        const uint64_t tsc = rte_rdtsc();
        for (const RxQueueRef& q : plan_.rx)
            poll(q, tsc);
        const uint64_t now = now_ns();
        store_relaxed(stats_.now_ns, now);
        // A packet clock that has seen no packet yet has no time: nothing can be due.
        if (now >= next_cop_ns_ && now != 0)
            run_cop(now);
        drain_mailbox();
        if (table_.rebase_pending())
            table_.rebase_step(kRebaseSlice);
    }
    drain_mailbox();
    table_.destroy_all(now_ns(), conntrack::Reason::shutdown);
}

void Worker::poll(const RxQueueRef& q, uint64_t tsc) noexcept
{
    rte_mbuf* mbufs[kBurst];
    const uint16_t n = rte_eth_rx_burst(q.port, q.queue, mbufs, kBurst);
    if (n == 0)
        return;
    store_relaxed(stats_.last_rx_tsc, tsc);
    bump(stats_.rx_packets, uint64_t(n));

    packet::Packet pkts[kBurst];
    const packet::Packet* ptrs[kBurst];
    for (uint16_t i = 0; i < n; ++i)
        rte_prefetch0(rte_pktmbuf_mtod(mbufs[i], const void*));
    for (uint16_t i = 0; i < n; ++i) {
        packet::parse_mbuf(mbufs[i], pkts[i]);
        ptrs[i] = &pkts[i];
    }
    if (settings_.clock == ClockSource::packet) {
        // Replay: each packet at its own time, and the cop runs wherever the
        // timeline crosses a check instant, as it would have on the wire —
        // not once per read with the read's latest timestamp.
        uint64_t times[kBurst];
        unsigned start = 0;
        for (uint16_t i = 0; i < n; ++i) {
            if (!packet_clock_.observe(mbufs[i]))
                bump(stats_.no_timestamp);
            times[i] = packet_clock_.now_ns();
            if (times[i] >= next_cop_ns_ && times[i] != 0 && next_cop_ns_ != 0) {
                table_.process_burst(ptrs + start, i - start, times + start);
                run_cop(times[i]);
                start = i;
            }
        }
        table_.process_burst(ptrs + start, n - start, times + start);
        if (next_cop_ns_ == 0) // the first packets: start the cop's schedule from them
            next_cop_ns_ = times[0] + settings_.check_interval_ns;
    } else {
        table_.process_burst(ptrs, n, clock_.ns_from_tsc(tsc));
    }

    if (settings_.mode == Mode::inline_fwd) {
        const uint16_t sent = rte_eth_tx_burst(q.tx_port, q.tx_queue, mbufs, n);
        bump(stats_.tx_packets, uint64_t(sent));
        if (sent < n) {
            bump(stats_.tx_dropped, uint64_t(n - sent));
            rte_pktmbuf_free_bulk(mbufs + sent, n - sent);
        }
    } else {
        rte_pktmbuf_free_bulk(mbufs, n);
    }
}

void Worker::run_cop(uint64_t now) noexcept
{
    const uint64_t visit_budget = timerwheel::visit_budget(settings_.fire_budget, settings_.visit_budget_factor);
    const uint64_t t0 = rte_rdtsc();
    const conntrack::CopResult r = table_.run_cop(now, settings_.fire_budget, visit_budget);
    const uint64_t cycles = rte_rdtsc() - t0;
    table_.observe_pass_ns(uint64_t((static_cast<uint128>(cycles) * 1'000'000'000ull) / clock_.hz()));
    next_cop_ns_ = now + (r.wheel.budget_exhausted ? kCopRetryNs : settings_.check_interval_ns);
}

void Worker::drain_mailbox() noexcept
{
    void* obj = nullptr;
    while (rte_ring_sc_dequeue(mailbox_, &obj) == 0)
        execute(*static_cast<Command*>(obj));
}

void Worker::execute(Command& cmd) noexcept
{
    switch (cmd.type) {
    case Command::Type::kill: cmd.result = table_.kill(cmd.key) ? 1 : 0; break;
    case Command::Type::set_timeouts:
        table_.set_timeouts(cmd.timeouts, cmd.active_timeout_s);
        cmd.result = 0;
        break;
    case Command::Type::set_budgets:
        if (cmd.fire_budget)
            settings_.fire_budget = cmd.fire_budget;
        if (cmd.visit_budget_factor)
            settings_.visit_budget_factor = cmd.visit_budget_factor;
        cmd.result = 0;
        break;
    }
    cmd.done.store(true, std::memory_order_release);
}

} // namespace flowcop::app
