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

} // namespace flowcop::stats
