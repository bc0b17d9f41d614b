// SPDX-License-Identifier: BSD-3-Clause
#include "mbuf_pool.h"

namespace flowcop::app {

std::string resolve_mbufs(uint32_t requested, unsigned ports, unsigned lcores, uint64_t extra, uint64_t& n)
{
    ports = ports == 0 ? 1 : ports;
    if (requested == 0) {
        n = mbufs_default(ports, lcores, extra);
        return {};
    }
    const uint64_t need = mbufs_minimum(ports, lcores, extra);
    if (requested >= need) {
        n = requested;
        return {};
    }
    // Appended piecewise: GCC 12 at -O3 warns -Wrestrict (falsely) on `const char* + std::string`.
    std::string err = std::to_string(requested);
    err += " is too few: ";
    err += std::to_string(ports);
    err += ports == 1 ? " port on " : " ports on ";
    err += std::to_string(lcores);
    err += lcores == 1 ? " lcore" : " lcores";
    err += ports == 1 ? " needs at least " : " need at least ";
    err += std::to_string(need);
    err += " (";
    err += std::to_string(kRxDescriptors + kTxDescriptors);
    err += " per RX and TX queue pair, ";
    err += std::to_string(kLcoreMbufs);
    err += " per lcore, ";
    err += std::to_string(kSpareMbufs);
    err += " spare";
    if (extra != 0) {
        err += ", ";
        err += std::to_string(extra);
        err += " for the --flowgen port, the handoff rings and a device's own RX queues";
    }
    err += "); auto gives ";
    err += std::to_string(mbufs_default(ports, lcores, extra));
    return err;
}

} // namespace flowcop::app
