// SPDX-License-Identifier: BSD-3-Clause
// A simple model of one flow table for the table fuzz target: a map from key to the flow the table's
// contract (flow_table.h, with lib/tcpstate's functions as the state machine) says it holds, updated
// packet by packet in submission order, as if nothing were pipelined.
//
// What it cannot predict it does not guess: early drop samples at random, and an insert whose probe
// window is full evicts by the index's layout. A step in which the table counted an early-drop search,
// a full probe window or a refusal is "unpredicted": the model then checks only what holds whatever
// was evicted, and takes the table's flows as its new state (resync). Every other step is compared
// exactly: the set of flows, each flow's state, direction, times, counters and marks, and the table's
// counters against the model's.
#pragma once

#include <conntrack/flow_table.h>
#include <packet/packet.h>
#include <tcpstate/segment.h>
#include <tcpstate/window.h>

#include "table_script.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::fuzz {

struct ModelFlow {
    bool live = false;
    tcpstate::Tracker tcp;
    bool orig_is_lo = false;
    bool reset = false, killed = false;
    uint64_t first_seen = 0, last_seen = 0;
    uint64_t packets[2] = {}, bytes[2] = {};
    uint8_t flags_seen[2] = {};
    tcpstate::WindowState window{}; // window tracking (tcpstate::track), as the record keeps it
};

class TableModel {
public:
    TableModel(const conntrack::TableConfig& config, const std::vector<packet::FlowKey>& keys);

    // A tracked packet for key k at time t (the table has tracked it by the next check).
    void packet(unsigned k, const packet::Packet& p, uint64_t t);
    // A cop pass at now without budgets: every due flow ends.
    void cop(uint64_t now);
    // kill(key k): returns whether the model had the flow.
    bool kill(unsigned k);
    void destroy_all(uint64_t now);

    // Compares against the table (drained): "" or the first difference. Unpredicted steps (see above)
    // get the weak checks, then the model resyncs from the table.
    std::string check(const conntrack::FlowTable& table);
    // After a cop pass with budgets: only due flows may have left; then resync.
    std::string check_partial_cop(const conntrack::FlowTable& table, uint64_t now);

    size_t live() const noexcept;

private:
    static uint8_t marks(const ModelFlow& f) noexcept; // the record flags the deadline reads
    uint64_t deadline(const ModelFlow& f) const noexcept;
    conntrack::Reason reason(const ModelFlow& f, uint64_t now) const noexcept;
    void end(ModelFlow& f, conntrack::Reason r);
    void create(unsigned k, const packet::Packet& p, uint64_t t);
    std::string weak_check(const conntrack::FlowTable& table) const;
    std::string resync(const conntrack::FlowTable& table);
    std::vector<conntrack::FlowSnapshot> flows_of(const conntrack::FlowTable& table) const;
    int key_index(const packet::FlowKey& key) const noexcept;

    conntrack::TableConfig _config;
    conntrack::DeadlineRules _rules;
    const std::vector<packet::FlowKey>& _keys;
    std::vector<ModelFlow> _flows;
    // What the model expects the table's counters to have moved by since the last check.
    uint64_t _created = 0, _tracked = 0, _invalid = 0, _no_flow = 0, _out_of_window = 0;
    std::array<uint64_t, conntrack::kReasonCount> _expired{};
    conntrack::Counters _base; // the table's counters at the last check
    bool _unpredicted = false; // this step created a flow the model could not place (table full)
    std::string _violation;    // an oracle rule a packet broke (reported by the next check)
};

} // namespace flowcop::fuzz
