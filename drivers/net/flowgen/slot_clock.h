// SPDX-License-Identifier: BSD-3-Clause
// Private: slot number -> virtual timestamp in microseconds since the Unix epoch,
// start_s * 10^6 + floor(slot * 10^6 / pps), exactly. Consecutive slots (the common case) cost an add
// and a compare (Bresenham on the remainder); a jump costs two divisions.
#pragma once

#include <cstdint>

namespace flowcop::flowgen::detail {

class SlotClock {
public:
    SlotClock(uint64_t start_s, uint64_t pps) noexcept
        : _start_us(start_s * 1'000'000), _pps(pps), _q(1'000'000 / pps), _r(1'000'000 % pps)
    {
        seek(0);
    }

    uint64_t at(uint64_t slot) noexcept
    {
        if (slot == _slot + 1)
            step();
        else if (slot != _slot)
            seek(slot);
        return _start_us + _sec * 1'000'000 + _sub_us;
    }

private:
    void step() noexcept
    {
        ++_slot;
        if (++_rem == _pps) {
            _rem = _sub_us = _frac = 0;
            ++_sec;
            return;
        }
        _sub_us += _q;
        _frac += _r;
        if (_frac >= _pps) {
            _frac -= _pps;
            ++_sub_us;
        }
    }

    void seek(uint64_t slot) noexcept
    {
        _slot = slot;
        _sec = slot / _pps;
        _rem = slot % _pps;
        _sub_us = _rem * 1'000'000 / _pps; // _rem < 10^9: no overflow
        _frac = _rem * 1'000'000 % _pps;
    }

    uint64_t _start_us, _pps, _q, _r;
    uint64_t _slot = 0, _sec = 0, _rem = 0, _sub_us = 0, _frac = 0;
};

} // namespace flowcop::flowgen::detail
