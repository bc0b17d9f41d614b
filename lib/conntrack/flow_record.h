// SPDX-License-Identifier: BSD-3-Clause
// One tracked flow: exactly one 64-byte cache line.
//
// Records live in a per-lcore array indexed by the flow's rte_hash key
// position, so finding the record of a looked-up key costs no extra indirection
// and creating a flow allocates nothing. The 40-byte key itself lives only in
// the hash's key store (rte_hash_get_key_with_position recovers it).
//
// Ownership: the owning lcore writes every field. Fields other threads read
// (listing, snapshot) are accessed through stats/relaxed.h; `flags` carries kInUse,
// which the owner sets with release order after the record and its key are
// complete and clears only while holding the record's shard lock, so a reader
// holding that lock sees either a whole flow or no flow.
#pragma once

#include <tcpstate/tcp_state.h>
#include <timerwheel/timer_wheel.h>

#include <cstdint>

namespace flowcop::conntrack {

struct alignas(64) FlowRecord {
    static constexpr uint8_t kInUse = 0x01;
    static constexpr uint8_t kOrigIsLo = 0x02; // the originator is the key's lower endpoint
    static constexpr uint8_t kReset = 0x04;    // an RST ended it: due on the next tick
    static constexpr uint8_t kKilled = 0x08;   // a control-plane kill: due on the next tick

    timerwheel::Hook hook; // owner only
    tcpstate::Tracker tcp; // owner writes; readers load `tcp.state` relaxed
    uint8_t flags;
    uint64_t first_seen_ns;
    uint64_t last_seen_ns;
    uint64_t packets[2]; // [orig, reply]
    uint64_t bytes[2];   // frame bytes
};

static_assert(sizeof(FlowRecord) == 64, "a flow record is one cache line");

} // namespace flowcop::conntrack
