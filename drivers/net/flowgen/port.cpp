// SPDX-License-Identifier: BSD-3-Clause
#include <flowgen/port.h>

#include <stats/relaxed.h>

#include <algorithm>
#include <chrono>

#include <pthread.h>

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

namespace flowcop::flowgen {
namespace {

std::atomic<unsigned> port_counter{0};

// Frames consumed from the tx ring per turn: the size of a typical tx burst, twice.
constexpr unsigned kTxDrainBatch = 64;
// Empty turns spent yielding before sleeping: ~a microsecond each, so a consumer that is briefly
// behind is served without a sleep's latency, and a stalled one costs no CPU.
constexpr unsigned kYieldTurns = 32;
constexpr auto kBusySleep = std::chrono::microseconds(20);
constexpr auto kFinishedSleep = std::chrono::milliseconds(1);

int64_t wall_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string dpdk_error(const std::string& what)
{
    return "flowgen: " + what + ": " + rte_strerror(rte_errno);
}

void drain_and_free(rte_ring* r)
{
    if (r == nullptr)
        return;
    void* objs[kTxDrainBatch];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(r, objs, kTxDrainBatch, nullptr)) != 0)
        rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), n);
}

} // namespace

Port::Port(const Config& cfg) : _cfg(cfg), _gen(cfg), _dealer(cfg.queues) {}

std::unique_ptr<Port> Port::create(const Config& cfg, rte_mempool* pool, int socket, std::string& error)
{
    std::unique_ptr<Port> p(new Port(cfg));
    error = p->_gen.error();
    if (error.empty())
        error = p->setup(pool, socket);
    if (!error.empty())
        return nullptr; // ~Port releases whatever setup() made
    p->publish();
    return p;
}

std::string Port::setup(rte_mempool* pool, int socket)
{
    const std::string n = std::to_string(port_counter++);
    if (pool != nullptr) {
        _pool = pool;
        if (std::string why = _gen.check_pool(pool); !why.empty())
            return why;
    } else {
        const unsigned count = _cfg.ring + 4 * _cfg.burst + 2048;
        const uint32_t room =
            std::max<uint32_t>(RTE_MBUF_DEFAULT_BUF_SIZE, RTE_PKTMBUF_HEADROOM + _gen.max_frame_len());
        _pool =
            rte_pktmbuf_pool_create(("flowgen_pool" + n).c_str(), count, 128, 0, static_cast<uint16_t>(room), socket);
        if (_pool == nullptr)
            return dpdk_error("cannot create mempool flowgen_pool" + n + " (" + std::to_string(count) + " mbufs of " +
                              std::to_string(room) + " bytes)");
        _own_pool = true;
    }
    const unsigned ring_flags = RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ;
    for (unsigned q = 0; q < _cfg.queues; ++q) {
        // Queue 0 keeps the names of a one-queue port's rings.
        std::string suffix = n;
        if (q != 0) { // appended piecewise: GCC 12's -O3 warns (-Wrestrict) on "_" + std::to_string(q)
            suffix += '_';
            suffix += std::to_string(q);
        }
        _rx.push_back(rte_ring_create(("flowgen_rx" + suffix).c_str(), _cfg.ring, socket, ring_flags));
        if (_rx.back() == nullptr)
            return dpdk_error("cannot create ring flowgen_rx" + suffix);
        _tx.push_back(rte_ring_create(("flowgen_tx" + suffix).c_str(), _cfg.ring, socket, ring_flags));
        if (_tx.back() == nullptr)
            return dpdk_error("cannot create ring flowgen_tx" + suffix);
    }

    const std::string dev = "net_flowgen" + n;
    const int id = rte_eth_from_rings(dev.c_str(), _rx.data(), _cfg.queues, _tx.data(), _cfg.queues,
                                      static_cast<unsigned>(socket));
    char name[RTE_ETH_NAME_MAX_LEN];
    if (id < 0 || rte_eth_dev_get_name_by_port(static_cast<uint16_t>(id), name) != 0)
        return dpdk_error("rte_eth_from_rings(" + dev + ") failed");
    _has_port = true;
    _port_id = static_cast<uint16_t>(id);
    _name = name;
    _gen.set_port(_port_id);
    _ts_offset = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
    _pending.resize(_cfg.burst);
    _pend_queue.resize(_cfg.burst);
    return {};
}

Port::RssCaps Port::rss_caps_for(const Config& cfg) noexcept
{
    if (cfg.queues < 2)
        return {cfg.queues, 0, 0, 0};
    return {cfg.queues, RssDealer::kKeyBytes, RssDealer::kRetaSize, RssDealer::offloads()};
}

std::string Port::program_rss(const uint8_t* key, uint16_t key_len, uint64_t hash_fields,
                              const std::vector<uint16_t>& table)
{
    if (_thread.joinable())
        return "flowgen: the port is running: program its RSS before start()";
    if (_cfg.queues < 2)
        return "flowgen: a port of one queue has no RSS (queues=N)";
    return _dealer.program(key, key_len, hash_fields, table);
}

std::string Port::enable_time_marks()
{
    if (_thread.joinable())
        return "flowgen: the port is running: enable its time marks before start()";
    if (_cfg.queues < 2)
        return "flowgen: a port of one queue needs no time marks";
    if (_cfg.overflow == Overflow::drop)
        return "flowgen: time marks need overflow=wait (a dropped frame would leave its marks behind)";
    if (_ts_offset < 0)
        return "flowgen: no timestamp dynfield: nothing to mark";
    // Room for the marks of every frame the rings can hold, and never less than a few bursts.
    const uint32_t cap = std::max<uint32_t>(_cfg.ring, 4 * _cfg.burst);
    _marks.clear();
    for (unsigned q = 0; q < _cfg.queues; ++q)
        _marks.push_back(std::make_unique<TimeMarks>(cap));
    _told_us.assign(_cfg.queues, 0);
    _dealt.assign(_cfg.queues, 0);
    return {};
}

bool Port::marks_room() const noexcept
{
    // A burst pushes at most one mark per frame to each queue.
    for (const auto& m : _marks)
        if (m->room() < _cfg.burst)
            return false;
    return true;
}

void Port::deal_marks() noexcept
{
    // In the stream's order, before any of the burst is enqueued (time_marks.h).
    for (unsigned i = 0; i < _pend_n; ++i) {
        const uint16_t q = _pend_queue[i];
        const uint64_t t = *RTE_MBUF_DYNFIELD(_pending[i], _ts_offset, rte_mbuf_timestamp_t*);
        if (t > _stream_max_us)
            _stream_max_us = t;
        const uint64_t now = _stream_max_us;
        for (uint16_t o = 0; o < _cfg.queues; ++o) {
            if (_told_us[o] >= now)
                continue;
            // The frame's own queue learns its time from the frame, unless the frame is older than the
            // stream's time (a capture's out-of-order timestamp): then a mark first.
            if (o != q || t < now)
                _marks[o]->push({_dealt[o], now});
            _told_us[o] = now;
        }
        ++_dealt[q];
    }
}

unsigned Port::enqueue_pending() noexcept
{
    // In the stream's order: a run of frames for one queue at a time, stopping at a ring that is full
    // (overflow=wait), so no queue's consumer can read a frame before an earlier one is in its ring.
    unsigned moved = 0;
    while (_pend_n != 0) {
        const uint16_t q = _pend_queue[_pend_head];
        unsigned run = 1;
        while (run < _pend_n && _pend_queue[_pend_head + run] == q)
            ++run;
        const unsigned put =
            rte_ring_enqueue_burst(_rx[q], reinterpret_cast<void* const*>(_pending.data() + _pend_head), run, nullptr);
        _pend_head += put;
        _pend_n -= put;
        _enqueued += put;
        moved += put;
        if (put < run) {
            if (_cfg.overflow != Overflow::drop)
                break;
            // A full descriptor ring: this queue's frames are lost, counted; the other queues go on.
            rte_pktmbuf_free_bulk(_pending.data() + _pend_head, run - put);
            _rx_dropped += run - put;
            _pend_head += run - put;
            _pend_n -= run - put;
            moved += run - put;
        }
    }
    return moved;
}

void Port::start()
{
    if (_thread.joinable())
        return;
    _stop.store(false, std::memory_order_relaxed);
    // Virtual time continues from the last frame; wall time from now.
    _anchor_wall_ns = wall_ns();
    _anchor_virtual_us = _gen.stats().virtual_now_us;
    _thread = std::thread(&Port::run, this);
    // Named so that tools find it (deploy/bench/live_set_loss.py gives it a real-time priority, as a NIC
    // is never preempted); a name that cannot be set changes nothing else.
    pthread_setname_np(_thread.native_handle(), "flowgen");
}

void Port::stop()
{
    _stop.store(true, std::memory_order_relaxed);
    if (_thread.joinable())
        _thread.join();
}

void Port::run()
{
    rte_mbuf* txb[kTxDrainBatch];
    unsigned empty_turns = 0;
    while (!_stop.load(std::memory_order_relaxed)) {
        bool worked = false;
        for (rte_ring* tx : _tx) {
            const unsigned freed = rte_ring_dequeue_burst(tx, reinterpret_cast<void**>(txb), kTxDrainBatch, nullptr);
            if (freed != 0) {
                rte_pktmbuf_free_bulk(txb, freed);
                _tx_freed += freed;
                worked = true;
            }
        }
        if (_pend_n == 0 && !_gen.finished() && (_marks.empty() || marks_room())) {
            _pend_head = 0;
            _pend_n = _gen.next_burst(_pool, _pending.data(), _cfg.burst);
            for (unsigned i = 0; i < _pend_n; ++i)
                _pend_queue[i] = _cfg.queues < 2 ? 0
                                                 : _dealer.queue(rte_pktmbuf_mtod(_pending[i], const uint8_t*),
                                                                 rte_pktmbuf_data_len(_pending[i]));
            if (!_marks.empty())
                deal_marks();
            if (_pend_n != 0 && _cfg.realtime && _ts_offset >= 0)
                pace(*RTE_MBUF_DYNFIELD(_pending[0], _ts_offset, rte_mbuf_timestamp_t*));
        }
        if (_pend_n != 0)
            worked = enqueue_pending() != 0 || worked;
        publish();
        if (worked) {
            empty_turns = 0;
        } else if (++empty_turns < kYieldTurns) {
            std::this_thread::yield();
        } else if (_gen.finished() && _pend_n == 0) {
            std::this_thread::sleep_for(kFinishedSleep); // only the tx ring can still need us
        } else {
            std::this_thread::sleep_for(kBusySleep);
        }
    }
    publish();
}

void Port::pace(uint64_t first_ts_us) noexcept
{
    if (first_ts_us <= _anchor_virtual_us)
        return;
    const int64_t target = _anchor_wall_ns + static_cast<int64_t>(first_ts_us - _anchor_virtual_us) * 1000;
    for (int64_t now = wall_ns(); now < target && !_stop.load(std::memory_order_relaxed); now = wall_ns())
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(target - now, 1'000'000)));
}

void Port::publish() noexcept
{
    Stats s = _gen.stats();
    s.packets = _enqueued;
    s.tx_freed = _tx_freed;
    s.rx_dropped = _rx_dropped;
    s.finished = s.finished && _pend_n == 0;
    const uint64_t v[kPublishedFields] = {
        s.packets,  s.flows_started, s.flows_fin,        s.flows_rst,      s.flows_idle, s.wave_flows, s.virtual_now_us,
        s.finished, s.active_flows,  s.arrivals_dropped, s.alloc_failures, s.tx_freed,   s.rx_dropped};
    for (unsigned i = 0; i < kPublishedFields; ++i)
        stats::store_relaxed(_published[i], v[i]);
}

Stats Port::stats() const noexcept
{
    uint64_t v[kPublishedFields];
    for (unsigned i = 0; i < kPublishedFields; ++i)
        v[i] = stats::load_relaxed(_published[i]);
    Stats s;
    s.packets = v[0];
    s.flows_started = v[1];
    s.flows_fin = v[2];
    s.flows_rst = v[3];
    s.flows_idle = v[4];
    s.wave_flows = v[5];
    s.virtual_now_us = v[6];
    s.finished = v[7] != 0;
    s.active_flows = v[8];
    s.arrivals_dropped = v[9];
    s.alloc_failures = v[10];
    s.tx_freed = v[11];
    s.rx_dropped = v[12];
    return s;
}

Port::~Port()
{
    stop();
    if (_has_port) {
        // The application may have closed the port and its id been reused: touch it only by our name.
        char name[RTE_ETH_NAME_MAX_LEN];
        // is_valid_port first: get_name_by_port logs an error for a port the application closed.
        if (rte_eth_dev_is_valid_port(_port_id) && rte_eth_dev_get_name_by_port(_port_id, name) == 0 && _name == name)
            rte_eth_dev_stop(_port_id);
        rte_vdev_uninit(_name.c_str());
    }
    if (_pend_n != 0)
        rte_pktmbuf_free_bulk(_pending.data() + _pend_head, _pend_n);
    for (rte_ring* r : _rx) {
        drain_and_free(r);
        rte_ring_free(r);
    }
    for (rte_ring* r : _tx) {
        drain_and_free(r);
        rte_ring_free(r);
    }
    if (_own_pool)
        rte_mempool_free(_pool);
}

} // namespace flowcop::flowgen
