// SPDX-License-Identifier: BSD-3-Clause
#include <flowgen/generator.h>

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

namespace flowcop::flowgen {

Generator::Generator(const Config& cfg) : _core(cfg), _error(_core.error())
{
    if (!_error.empty())
        return;
    if (!cfg.replay.empty()) {
        _capture = std::make_unique<Capture>();
        if ((_error = _capture->open(cfg.replay)).empty() && _capture->frames() == 0)
            _error = "flowgen: replay: '" + cfg.replay + "' holds no frame";
        _replay_now_us = _capture->first_timestamp_us();
        if (!_error.empty())
            return;
    }
    if (rte_mbuf_dyn_rx_timestamp_register(&_ts_offset, &_ts_flag) != 0)
        _error = std::string("flowgen: cannot register the mbuf Rx timestamp field: ") + rte_strerror(rte_errno) +
                 " (is EAL initialised?)";
}

std::string Generator::check_pool(const rte_mempool* pool) const
{
    if (pool == nullptr)
        return "flowgen: no mempool";
    rte_mempool* mp = const_cast<rte_mempool*>(pool); // 22.11 takes a non-const pool
    const uint32_t room = rte_pktmbuf_data_room_size(mp);
    if (room < RTE_PKTMBUF_HEADROOM + max_frame_len())
        return "flowgen: mempool '" + std::string(pool->name) + "' has " + std::to_string(room) +
               "-byte mbufs; frames need " + std::to_string(max_frame_len()) + " bytes after " +
               std::to_string(RTE_PKTMBUF_HEADROOM) + " of headroom (pkt_size)";
    return {};
}

unsigned Generator::next_burst(rte_mempool* pool, rte_mbuf** out, unsigned n) noexcept
{
    if (!_error.empty() || n == 0 || finished())
        return 0;
    if (pool == nullptr || rte_pktmbuf_data_room_size(pool) < RTE_PKTMBUF_HEADROOM + max_frame_len()) {
        ++_alloc_failures;
        return 0;
    }
    unsigned got = n;
    if (rte_pktmbuf_alloc_bulk(pool, out, n) != 0) {
        // All or nothing: take what is left one by one, so a nearly dry pool still moves frames.
        ++_alloc_failures;
        for (got = 0; got < n; ++got)
            if ((out[got] = rte_pktmbuf_alloc(pool)) == nullptr)
                break;
    }
    unsigned filled = 0;
    for (; filled < got; ++filled) {
        rte_mbuf* m = out[filled];
        uint64_t ts = 0;
        const uint32_t len = next_frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m), ts);
        if (len == 0)
            break;
        m->data_len = static_cast<uint16_t>(len);
        m->pkt_len = len;
        m->port = _port;
        m->ol_flags |= _ts_flag;
        *RTE_MBUF_DYNFIELD(m, _ts_offset, rte_mbuf_timestamp_t*) = ts;
    }
    if (filled < got)
        rte_pktmbuf_free_bulk(out + filled, got - filled);
    return filled;
}

uint32_t Generator::next_frame(uint8_t* buf, uint32_t cap, uint64_t& ts) noexcept
{
    if (!_capture)
        return _core.next(buf, ts);
    const uint32_t len = _capture->next(buf, cap, ts);
    if (len != 0)
        _replay_now_us = ts;
    return len;
}

Stats Generator::stats() const noexcept
{
    Stats s;
    if (_capture) {
        s.packets = _capture->read();
        s.virtual_now_us = _replay_now_us;
        s.finished = _capture->finished();
    } else {
        s = _core.stats();
    }
    s.alloc_failures = _alloc_failures;
    return s;
}

} // namespace flowcop::flowgen
