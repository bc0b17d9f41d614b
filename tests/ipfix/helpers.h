// SPDX-License-Identifier: BSD-3-Clause
// Test fixtures: destroyed-flow Events with recognisable fields, and a sink that feeds the decoder.
#pragma once

#include <ipfix/encoder.h>

#include <events/event.h>

#include <cstring>
#include <vector>

#include "decoder.h"

namespace flowcop::ipfix::test {

// 10.1.<a>.<b>:<1000+seq> -> 192.0.2.9:443 (or 2001:db8::<seq> -> 2001:db8::ff), destroyed with
// reason `reason_code`; counts and times derive from `seq` so each record is recognisable.
inline events::Event flow_event(uint64_t seq, bool ipv6 = false, uint8_t reason_code = 0)
{
    events::Event e{};
    e.kind = events::Kind::destroyed;
    e.time_ns = 1'700'000'100'000'000'000ull + seq;
    e.first_seen_ns = 1'700'000'000'123'456'789ull + seq * 1'000'000;
    e.last_seen_ns = e.first_seen_ns + 2'500'000'000ull;
    e.packets[0] = 10 + seq;
    e.packets[1] = 5 + seq;
    e.bytes[0] = 1000 + seq;
    e.bytes[1] = 500 + seq;
    if (ipv6) {
        const uint8_t src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, uint8_t(seq >> 8), uint8_t(seq)};
        const uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff};
        std::memcpy(e.src, src, 16);
        std::memcpy(e.dst, dst, 16);
    } else {
        const uint8_t src[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, uint8_t(seq >> 8), uint8_t(seq)};
        const uint8_t dst[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 9};
        std::memcpy(e.src, src, 16);
        std::memcpy(e.dst, dst, 16);
    }
    e.sport = uint16_t(1000 + seq);
    e.dport = 443;
    e.proto = 6;
    e.lcore = 3;
    e.state_code = 7;
    e.reason_code = reason_code;
    e.state = "TIME_WAIT";
    e.reason = "inactivity";
    return e;
}

class DecodingSink final : public MessageSink {
public:
    Decoder decoder;
    std::vector<size_t> sizes;
    void on_message(const uint8_t* data, size_t len, unsigned records) noexcept override
    {
        sizes.push_back(len);
        declared_records += records;
        decoder.feed(data, len);
    }
    unsigned declared_records = 0;
};

} // namespace flowcop::ipfix::test
