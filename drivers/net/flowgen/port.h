// SPDX-License-Identifier: BSD-3-Clause
// Contract: Port is flowgen as an ordinary ethdev: rte_eth_from_rings() over an rx ring that a
// generator thread fills, so flowcop configures, starts and polls it (rte_eth_rx_burst) like any port.
//
// Device: `queues` rx and as many tx queues (default one of each). With more than one, the thread deals
// each frame to the rx queue a NIC's receive-side scaling would give it (rss_dealer.h: symmetric
// Toeplitz over the outer addresses, and ports for unfragmented TCP/UDP/SCTP), strictly in the
// stream's order (a frame waits while an earlier one's ring is full), so no consumer reads a frame
// before an earlier one is in its ring; rss_caps() is what the port declares in place of a NIC's
// rte_eth_dev_info (the ring PMD reports no RSS), and program_rss() takes the key, hash fields and
// redirection table an application would program with rte_eth_dev_rss_reta_update. DPDK's ring PMD prefixes the name it is given, so the ethdev is
// called "net_ring_net_flowgenN" (N counts Ports in the process; name() returns it). The application
// configures and starts it as usual (rte_eth_dev_configure with 1/1 queues, queue setup, start).
// Rx: mbufs from Generator (see generator.h for their fields and the microsecond timestamp dynfield).
// overflow=wait (the default): back-pressure, not loss: when the rx ring is full the thread holds its
// burst and retries, so the stream reaching rx_burst is exactly the Generator's stream.
// overflow=drop (with realtime=1): like a NIC, the frames of a burst that do not fit in the ring are
// freed at once and counted in stats().rx_dropped; the stream goes on at wall-clock pace, so a
// consumer that falls behind loses frames instead of slowing the timeline. With packets=/duration=
// reached the port returns no more packets (stats().finished once the last frame is in the ring).
// Time marks (time_marks.h; --clock packet replays on several queues): after enable_time_marks(), for
// every frame it deals the thread pushes the stream's running maximum time to the TimeMarks of each
// other queue not yet told it (before that frame's enqueue), so each queue's reader can follow the one
// timeline exactly between its own frames. The thread deals a burst only when every queue's TimeMarks
// has room for a burst's marks (back-pressure, like a full rx ring under overflow=wait).
// Tx: the tx queue is a ring that the generator thread drains and frees (tx_freed), so flowcop's inline
// mode can forward to this port; nothing is transmitted anywhere.
// Ownership: create() makes the rings and, if pool is nullptr, a pktmbuf pool sized for the ring
// (ring + 4*burst + 2048 mbufs, room for max_frame_len()); a caller's pool must outlive the Port and
// hold max_frame_len() bytes after headroom. The application must free every mbuf it received before
// destroying the Port when the Port owns the pool. ~Port stops the thread, stops and removes the
// ethdev (rte_vdev_uninit), frees the mbufs left in the rings and then the rings and its own pool.
// Threading: create/start/stop/~Port from one control thread; stats() from any thread (each field is
// a value it held; fields may come from adjacent bursts). The thread is a plain std::thread, not an
// EAL lcore, and it uses a CPU while the consumer keeps up (it yields when the ring is full, sleeps
// when finished): on a small machine pin it with the process's affinity or accept that it shares a
// core with an lcore. realtime=1 paces bursts to wall time (sleeping, so it costs little CPU).
// Errors: create() returns nullptr and one sentence in `error` (bad Config, pool too small, ring,
// mempool or ethdev creation failed, no EAL); it never throws for those.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <flowgen/config.h>
#include <flowgen/generator.h>
#include <flowgen/rss_dealer.h>
#include <flowgen/stats.h>
#include <flowgen/time_marks.h>

struct rte_mempool;
struct rte_ring;

namespace flowcop::flowgen {

class Port {
public:
    // socket: NUMA socket for rings, pool and device; -1 (SOCKET_ID_ANY) for any.
    static std::unique_ptr<Port> create(const Config& cfg, rte_mempool* pool, int socket, std::string& error);

    uint16_t port_id() const noexcept { return _port_id; }
    const std::string& name() const noexcept { return _name; }

    // Starts the generator thread, named "flowgen"; no-op if running. After stop(), start() resumes the
    // same stream.
    void start();
    // Joins the thread; idempotent. Call before the ethdev is closed (~Port does).
    void stop();
    Stats stats() const noexcept;

    // The receive-side scaling the port declares (queues > 1): what a NIC's rte_eth_dev_info says.
    struct RssCaps {
        uint16_t queues = 1;
        uint16_t key_bytes = 0;
        uint16_t reta_size = 0;
        uint64_t offloads = 0;
    };
    RssCaps rss_caps() const noexcept { return rss_caps_for(_cfg); }
    static RssCaps rss_caps_for(const Config& cfg) noexcept; // before the port exists
    // Before start(): the dealing's key, hash fields and table. "" or one sentence (refused, running).
    std::string program_rss(const uint8_t* key, uint16_t key_len, uint64_t hash_fields,
                            const std::vector<uint16_t>& table);
    // What the port deals with (a read-back).
    const RssDealer& rss() const noexcept { return _dealer; }
    // Before start(): deal the replay's timeline to every queue as time marks (see above). "" or one
    // sentence (one queue, overflow=drop, no timestamps, running). time_marks(q): queue q's, or nullptr
    // when not enabled; it lives as long as the Port.
    std::string enable_time_marks();
    TimeMarks* time_marks(uint16_t queue) const noexcept
    {
        return queue < _marks.size() ? _marks[queue].get() : nullptr;
    }

    ~Port();
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

private:
    explicit Port(const Config& cfg);
    std::string setup(rte_mempool* pool, int socket);
    void run();
    void publish() noexcept;
    void pace(uint64_t first_ts_us) noexcept;

    Config _cfg;
    Generator _gen;
    unsigned enqueue_pending() noexcept;
    bool marks_room() const noexcept;
    void deal_marks() noexcept;

    rte_mempool* _pool = nullptr;
    bool _own_pool = false;
    std::vector<rte_ring*> _rx; // one per queue
    std::vector<rte_ring*> _tx;
    RssDealer _dealer;
    bool _has_port = false;
    uint16_t _port_id = 0;
    std::string _name;
    int _ts_offset = -1;
    std::vector<std::unique_ptr<TimeMarks>> _marks; // enable_time_marks(): one per rx queue

    std::thread _thread;
    std::atomic<bool> _stop{false};
    // Thread-owned between start() and stop().
    std::vector<rte_mbuf*> _pending;
    std::vector<uint16_t> _pend_queue; // the rx queue of each pending frame
    unsigned _pend_head = 0, _pend_n = 0;
    uint64_t _enqueued = 0, _tx_freed = 0, _rx_dropped = 0;
    int64_t _anchor_wall_ns = 0;
    uint64_t _anchor_virtual_us = 0;
    uint64_t _stream_max_us = 0;    // time marks: the stream's running maximum time so far
    std::vector<uint64_t> _told_us; // time marks: per queue, the newest time it was told (frame or mark)
    std::vector<uint64_t> _dealt;   // time marks: per queue, frames dealt to it so far

    // Published by the thread after each burst, read by stats(): single-writer fields
    // (stats/relaxed.h), the project's one vocabulary for counters other threads read.
    static constexpr unsigned kPublishedFields = 13;
    alignas(64) std::array<uint64_t, kPublishedFields> _published{};
};

} // namespace flowcop::flowgen
