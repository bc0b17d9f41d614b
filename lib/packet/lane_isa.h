// SPDX-License-Identifier: BSD-3-Clause
// Contract: the steady lane's two compiled copies (issue 29). The lane's reader loop
// (app::Worker::handle_lite) and its table step (conntrack::FlowTable::process_lite) are each compiled
// twice from one body: for the build's baseline (DPDK's -march=corei7: SSE4.2) and, on x86-64, for the
// extensions FLOWCOP_LANE_V3_TARGET names (x86-64-v3's: AVX2's three-operand forms of the same 128-bit
// instructions, BMI1/2's shifts and masks, LZCNT, MOVBE). The copies compute the same thing: the same
// intrinsics and C++ (tests/conntrack and the fuzz drivers run both over the same input and compare).
// lane_isa_runs() says whether this CPU runs a copy; a table uses the baseline copy unless told
// otherwise (FlowTable::set_lane_isa), and a worker chooses the v3 copy where the CPU runs it and DPDK
// allows 256-bit vectors (EAL's --force-max-simd-bitwidth, as DPDK's drivers choose their vector paths).
// Why: the destructive two-operand SSE forms cost a register copy each and the variable shifts a move
// to %cl; on the steady segment the v3 copy runs ~8 instructions fewer (tests/benchmarks.md).
// Pure, thread-safe (the CPU check reads CPUID through the compiler's cached model).
#pragma once

#include <cstdint>

namespace flowcop::packet {

enum class LaneIsa : uint8_t {
    baseline, // the build's own target
    v3,       // FLOWCOP_LANE_V3_TARGET's extensions (x86-64 only)
};

// FLOWCOP_LANE_V3_CODE marks a v3 copy: compiled for the extensions FLOWCOP_LANE_V3_TARGET names, each one
// lane_isa_runs() checks. Elsewhere than x86-64 the v3 copies are the baseline's code, never chosen.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLOWCOP_LANE_V3 1
#define FLOWCOP_LANE_V3_TARGET "avx2,bmi,bmi2,lzcnt,movbe"
#define FLOWCOP_LANE_V3_CODE [[gnu::target(FLOWCOP_LANE_V3_TARGET)]]
#else
#define FLOWCOP_LANE_V3_CODE
#endif

// True when this CPU runs the copy compiled for isa (the baseline always; v3 on an x86-64 CPU with every
// extension FLOWCOP_LANE_V3_TARGET names, never elsewhere).
inline bool lane_isa_runs(LaneIsa isa) noexcept
{
    if (isa == LaneIsa::baseline)
        return true;
#if defined(FLOWCOP_LANE_V3)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("lzcnt") && __builtin_cpu_supports("movbe");
#else
    return false;
#endif
}

inline const char* lane_isa_name(LaneIsa isa) noexcept
{
    return isa == LaneIsa::v3 ? "x86-64-v3 (AVX2, BMI1/2, LZCNT, MOVBE)" : "baseline";
}

} // namespace flowcop::packet
