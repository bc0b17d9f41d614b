// SPDX-License-Identifier: BSD-3-Clause
// A flow's id: the one packing of (generation, slot) into 64 bits, and its unpacking.
//
// Contract: a flow table slot (its position, < the table's capacity) holds one flow at a time, and
// the slot's generation grows by one each time it starts a flow, so (generation, slot) names one
// flow of one lcore's table from its creation to its end, and a newer generation in a slot means
// the older flow has ended. The id is generation << 32 | slot: the value FlowSnapshot::flow_id,
// events::Event::flow_id, /flowcop/flows listings, /flowcop/kill's id and IPFIX's flowcopFlowId
// carry. Every producer and consumer of an id packs and unpacks it here, nowhere else.
// Header-only, std only: consumers outside the table (the IPFIX exporter) include it without
// linking the table.
#pragma once

#include <cstdint>

namespace flowcop::conntrack {

constexpr uint64_t make_flow_id(uint32_t generation, uint32_t slot) noexcept
{
    return uint64_t(generation) << 32 | slot;
}
constexpr uint32_t flow_id_slot(uint64_t id) noexcept
{
    return uint32_t(id);
}
constexpr uint32_t flow_id_generation(uint64_t id) noexcept
{
    return uint32_t(id >> 32);
}

} // namespace flowcop::conntrack
