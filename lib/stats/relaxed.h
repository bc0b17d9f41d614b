// SPDX-License-Identifier: BSD-3-Clause
// Single-writer fields that other threads may read: flowcop's one vocabulary for counters.
//
// A counter, a histogram bucket or a flow record field has exactly one writer: the lcore (or the
// thread) that owns it. The exporter, telemetry and the status line read it concurrently. Accessing
// such a field through these helpers makes every access atomic (so there is no data race and no
// torn 64-bit value) while compiling to plain loads and stores on x86: no lock prefix, no fence.
// bump() is load+store, not an atomic read-modify-write, which is correct only because there is one
// writer; a field two threads write must not use it. Plain fields, not std::atomic: the owner's
// struct stays trivially copyable and cache-line laid out as written.
#pragma once

#include <cstdint>

namespace flowcop::stats {

// T is an integer or a small trivially copyable struct (the TCP tracker):
// the generic builtins are lock-free for sizes 1, 2, 4 and 8.
template <typename T>
inline T load_relaxed(const T& field) noexcept
{
    T value;
    __atomic_load(&field, &value, __ATOMIC_RELAXED);
    return value;
}

template <typename T>
inline void store_relaxed(T& field, T value) noexcept
{
    __atomic_store(&field, &value, __ATOMIC_RELAXED);
}

template <typename T>
inline T load_acquire(const T& field) noexcept
{
    T value;
    __atomic_load(&field, &value, __ATOMIC_ACQUIRE);
    return value;
}

template <typename T>
inline void store_release(T& field, T value) noexcept
{
    __atomic_store(&field, &value, __ATOMIC_RELEASE);
}

template <typename T>
inline void bump(T& field, T by = 1) noexcept
{
    store_relaxed(field, static_cast<T>(load_relaxed(field) + by));
}

// bump() and an or-in of bits as one read-modify-write instruction on x86 (add or or to memory): gcc
// never fuses the relaxed load and store of bump(), so a hot path pays two instructions more a field
// (the steady packet's counters, issue 29). Single-writer only, as bump(): not locked, so a second
// writer's update could be lost; a reader's relaxed load sees the old or the new value whole (one
// aligned store of the field's size). Elsewhere, bump() and a relaxed store.
inline void bump_in_place(uint64_t& field, uint64_t by) noexcept
{
#if defined(__x86_64__)
    asm("addq %1, %0" : "+m"(field) : "er"(by));
#else
    bump(field, by);
#endif
}

inline void or_in_place(uint8_t& field, uint8_t bits) noexcept
{
#if defined(__x86_64__)
    asm("orb %1, %0" : "+m"(field) : "iq"(bits));
#else
    store_relaxed(field, static_cast<uint8_t>(field | bits));
#endif
}

} // namespace flowcop::stats
