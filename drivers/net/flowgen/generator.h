// SPDX-License-Identifier: BSD-3-Clause
// Contract: Generator turns Core's frames into mbufs, the same code path Port's thread runs, for tests
// and benchmarks that want mbufs without a port.
//
// next_burst() allocates up to n mbufs from `pool` (a pktmbuf pool), writes one frame into each and
// returns how many it filled, in order, at out[0..return). Each mbuf has data_len = pkt_len = frame
// length, one segment, `port` = set_port()'s value (default 0), packet_type 0 (like net_pcap), and the
// standard Rx timestamp dynfield (rte_mbuf_dyn_rx_timestamp_register) holding the frame's virtual time
// in microseconds since the Unix epoch with its ol_flags dynflag set: the unit and flag net_pcap uses,
// so a consumer's packet clock treats both alike. The caller owns the returned mbufs.
// Degraded behaviour: it returns fewer than n when the pool runs dry (alloc_failures counts the calls
// that hit it; no generator state is consumed for frames it had no mbuf for) and 0 once finished, if
// error() is set, or if the pool's data room after RTE_PKTMBUF_HEADROOM is below max_frame_len() (also
// counted in alloc_failures; check_pool() says so in words). Never a partial frame.
// Setup: the constructor registers the timestamp dynfield, which needs EAL; without EAL error() says so.
// Replay (Config::replay): the frames and timestamps come from the capture file (capture.h) instead of
// Core, in the file's order; stats() then counts packets and the last timestamp (the first frame's
// before any), finished() once the file is read, and max_frame_len() is the file's longest frame.
// Threading: one thread at a time. Hot path: no allocation beyond the mbufs, noexcept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <flowgen/capture.h>
#include <flowgen/config.h>
#include <flowgen/core.h>
#include <flowgen/stats.h>

struct rte_mbuf;
struct rte_mempool;

namespace flowcop::flowgen {

class Generator {
public:
    explicit Generator(const Config& cfg);

    unsigned next_burst(rte_mempool* pool, rte_mbuf** out, unsigned n) noexcept;

    Stats stats() const noexcept;
    bool finished() const noexcept { return _capture ? _capture->finished() : _core.finished(); }
    // "" or why next_burst() produces nothing: an invalid Config or a failed dynfield registration.
    const std::string& error() const noexcept { return _error; }
    uint32_t max_frame_len() const noexcept { return _capture ? _capture->max_frame_len() : _core.max_frame_len(); }
    // "" if pool's mbufs can hold every frame, else one sentence.
    std::string check_pool(const rte_mempool* pool) const;
    void set_port(uint16_t port) noexcept { _port = port; }

private:
    uint32_t next_frame(uint8_t* buf, uint32_t cap, uint64_t& ts) noexcept;

    Core _core;
    std::unique_ptr<Capture> _capture; // replay=
    uint64_t _replay_now_us = 0;
    std::string _error;
    int _ts_offset = -1;
    uint64_t _ts_flag = 0;
    uint64_t _alloc_failures = 0;
    uint16_t _port = 0;
};

} // namespace flowcop::flowgen
