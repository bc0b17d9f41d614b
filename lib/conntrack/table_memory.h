// SPDX-License-Identifier: BSD-3-Clause
// Where a flow table's memory comes from. The table is a plain library: it asks its TableMemory for one
// block (records, cold entries, index buckets, shard locks) at create() and gives it back when it is
// destroyed, and never allocates on its packet path. The service hands it EAL's hugepage memory on the
// lcore's socket (eal_memory()); tests, fuzzing and tools without EAL use the C++ heap (heap_memory()).
//
// allocate(bytes, socket) returns `bytes` aligned to kTableAlign, or nullptr; the memory need not be
// zeroed (create() initialises what it uses). release(p) takes back what allocate returned. Both are
// called only from create() and the table's destructor, never concurrently with each other.
#pragma once

#include <cstddef>

namespace flowcop::conntrack {

inline constexpr size_t kTableAlign = 128; // a flow record's alignment (flow_record.h)

struct TableMemory {
    void* (*allocate)(size_t bytes, int socket, void* ctx) = nullptr;
    void (*release)(void* block, void* ctx) = nullptr;
    void* ctx = nullptr;
    const char* kind = ""; // for error messages: "DPDK memory", "heap memory"
};

// The C++ heap (aligned operator new): no EAL needed. Thread-safe.
TableMemory heap_memory() noexcept;
// rte_malloc_socket() on the table's socket (hugepages when EAL has them): requires an initialised EAL.
TableMemory eal_memory() noexcept;

} // namespace flowcop::conntrack
