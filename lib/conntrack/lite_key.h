// SPDX-License-Identifier: BSD-3-Clause
// The steady lane's key test (FlowTable::process_lite): lite_key_of(r, t) is same_key(r.key,
// packet::lite_key(t)), read from the record itself. Pure, inline; reads the record's bytes 0..41 (the key).
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
              "lite_key_of() reads the record's first 42 bytes as three 16-byte loads, two aligned");

// same_key(r.key, lite_words(t)): the record holds the key of the segment's flow. With SSE4.2 (x86-64's
// DPDK baseline) the record's first 42 bytes against the key built from t's first 12 by byte shuffles:
// bytes 0..15 (zeros, the mapped prefix, addr_lo) and 26..41 (the mapped prefix, addr_hi, the ports, TCP,
// no VLAN IDs, zone 0) compared as built, bytes 16..25 masked where they lie, one test: 15 instructions
// (three full compares and a mask took 18; two tests, 14, cost the steady loop 16 more in spills; the
// key's words 24). Reads the record's bytes 0..41.
inline bool lite_key_of(const FlowRecord& r, const packet::TcpLite& t) noexcept
{
#if defined(__SSE4_2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&t)); // addr_lo, addr_hi, ports, seq
    constexpr char kZ = -1;                                                  // pshufb: a zero byte
    const __m128i lo =
        _mm_or_si128(_mm_shuffle_epi8(v, _mm_setr_epi8(kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, kZ, 0, 1, 2, 3)),
                     _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 0, 0, 0, 0));
    const __m128i tail =
        _mm_or_si128(_mm_shuffle_epi8(v, _mm_setr_epi8(kZ, kZ, 4, 5, 6, 7, 8, 9, 10, 11, kZ, kZ, kZ, kZ, kZ, kZ)),
                     _mm_setr_epi8(-1, -1, 0, 0, 0, 0, 0, 0, 0, 0, packet::wire::kProtoTcp, 0, 0, 0, 0, 0));
    const auto* k = reinterpret_cast<const uint8_t*>(&r);
    const __m128i middle = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0); // bytes 16..25
    const __m128i diff =
        _mm_or_si128(_mm_or_si128(_mm_xor_si128(lo, _mm_load_si128(reinterpret_cast<const __m128i*>(k))),
                                  _mm_xor_si128(tail, _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 26)))),
                     _mm_and_si128(_mm_load_si128(reinterpret_cast<const __m128i*>(k + 16)), middle));
    return _mm_testz_si128(diff, diff) != 0;
#else
    return same_key(r.key, lite_words(t));
#endif
}

} // namespace flowcop::conntrack
