// SPDX-License-Identifier: BSD-3-Clause
// Worker::lane_isa_allowed() (worker.h): the lane's compiled copy DPDK's EAL allows. Apart from
// worker.cpp because rte_vect_get_max_simd_bitwidth() is marked experimental in DPDK 22.11,
// and opting in to experimental symbols is best kept to the one file that needs one.
#define ALLOW_EXPERIMENTAL_API

// First, and as C: DPDK 22.11's generic rte_vect.h declares its functions without extern "C" (worker.h's
// DPDK headers include it too, after which its include guard would keep the C++ declarations).
extern "C" {
#include <rte_vect.h>
}

#include "worker.h"

namespace flowcop::app {

packet::LaneIsa Worker::lane_isa_allowed() noexcept
{
    // As DPDK's drivers choose a vector path: the CPU must run it and EAL allow its width (256 bits by
    // default on x86; --force-max-simd-bitwidth=128 keeps the baseline's copy).
    const bool wide = rte_vect_get_max_simd_bitwidth() >= RTE_VECT_SIMD_256;
    return wide && packet::lane_isa_runs(packet::LaneIsa::v3) ? packet::LaneIsa::v3 : packet::LaneIsa::baseline;
}

} // namespace flowcop::app
