// SPDX-License-Identifier: BSD-3-Clause
// The steady lane's key test (FlowTable::process_lite): lite_key_of(r, t) is same_key(r.key,
// packet::lite_key(t)), read from the record itself. Pure, inline; reads the record's bytes 0..47 (the
// key, then its flags and state, which it ignores), at their 16-byte alignment.
#pragma once

#include <conntrack/flow_hash.h>
#include <conntrack/flow_record.h>
#include <packet/tcp_lite.h>

#include <cstddef>

#if defined(__SSE4_2__)
#include <smmintrin.h>
#include <tmmintrin.h>
#endif

namespace flowcop::conntrack {

static_assert(offsetof(FlowRecord, key) == 0 && sizeof(packet::FlowKey) == 42 && alignof(FlowRecord) >= 16,
              "lite_key_of() compares the record's first 42 bytes as three aligned 16-byte loads");

// same_key(r.key, lite_words(t)): the record holds the key of the segment's flow. With SSE4.2 (x86-64's
// DPDK baseline) the record's first 42 bytes against the key built from t's first 12 by byte shuffles
// (three aligned 16-byte compares, one test): 17 instructions where the words took 24 and two 64-bit
// constants in general registers. Reads the record's bytes 0..47 (the key, then flags and state).
inline bool lite_key_of(const FlowRecord& r, const packet::TcpLite& t) noexcept
{
#if defined(__SSE4_2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&t)); // addr_lo, addr_hi, ports, seq
    constexpr char kZ = -1;                                                  // pshufb: a zero byte
    const __m128i mapped = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0, 0, 0);
    const __m128i lo = _mm_or_si128(
        _mm_shuffle_epi8(v, _mm_setr_epi8(kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, 0, 1, 2, 3)), mapped);
    const __m128i hi = _mm_or_si128(
        _mm_shuffle_epi8(v, _mm_setr_epi8(kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, 4, 5, 6, 7)), mapped);
    // Bytes 32..41: the ports, TCP, no VLAN IDs, zone 0; 42..47 are the record's, not the key's.
    const __m128i tail =
        _mm_or_si128(_mm_shuffle_epi8(v, _mm_setr_epi8(8, 9, 10, 11, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ)),
                     _mm_setr_epi8(0, 0, 0, 0, packet::wire::kProtoTcp, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    const auto* k = reinterpret_cast<const __m128i*>(&r);
    const __m128i diff =
        _mm_or_si128(_mm_or_si128(_mm_xor_si128(lo, _mm_load_si128(k)), _mm_xor_si128(hi, _mm_load_si128(k + 1))),
                     _mm_and_si128(_mm_xor_si128(tail, _mm_load_si128(k + 2)),
                                   _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0)));
    return _mm_testz_si128(diff, diff) != 0;
#else
    return same_key(r.key, lite_words(t));
#endif
}

} // namespace flowcop::conntrack
