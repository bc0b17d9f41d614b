// SPDX-License-Identifier: BSD-3-Clause
// The two TableMemory sources (see table_memory.h).
#include <conntrack/table_memory.h>

#include <rte_malloc.h>

#include <new>

namespace flowcop::conntrack {

TableMemory heap_memory() noexcept
{
    TableMemory m;
    m.allocate = [](size_t bytes, int, void*) -> void* {
        return ::operator new(bytes, std::align_val_t(kTableAlign), std::nothrow);
    };
    m.release = [](void* block, void*) { ::operator delete(block, std::align_val_t(kTableAlign)); };
    m.kind = "heap memory";
    return m;
}

TableMemory eal_memory() noexcept
{
    TableMemory m;
    m.allocate = [](size_t bytes, int socket, void*) -> void* {
        return rte_malloc_socket("flowcop_flow_table", bytes, kTableAlign, socket);
    };
    m.release = [](void* block, void*) { rte_free(block); };
    m.kind = "DPDK memory";
    return m;
}

} // namespace flowcop::conntrack
