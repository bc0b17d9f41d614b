// SPDX-License-Identifier: BSD-3-Clause
// Contract: a hashed timer wheel over caller-owned elements named by uint32_t index (< 0xfffffffe).
// It finds elements whose deadline has passed at a cost proportional to the elements coming due, not to
// the elements scheduled. Design: lib/timerwheel/timer-wheel.md.
//
// Ownership. The wheel owns only its bucket heads (kLanes x 4 bytes per bucket, allocated once in the
// constructor); each element carries a 12-byte Hook reached through HookOf, a callable
// `Hook& (uint32_t element)` that must stay valid for the wheel's lifetime. An element belongs to at
// most one wheel at a time, and the indices are the caller's: the wheel never checks which wheel an
// element is on. Unlike ATS's TimerWheelHook this hook has no owner pointer: 8 more bytes per flow would
// not fit the 64-byte flow record, and with per-lcore flow tables each element has exactly one possible
// wheel anyway. Moving an element to another wheel requires cancel() on the old one first. Destroying the
// wheel abandons the hooks in place; callers re-init_hook() before scheduling those elements again.
// An element's slot must not be reused for another element while it is scheduled (cancel() first).
//
// Threading. Single-threaded: one wheel per lcore, driven only by the thread that owns it. No call
// allocates, locks, throws or makes a syscall after construction.
//
// Invariant ("early, never late"). A scheduled element sits in the bucket of its cached due tick, and is
// examined no later than that tick. The cached due may be earlier than the element's true deadline (a
// lazy extension, or a deadline clamped into the ring's range) but never later: expire() re-reads the
// true deadline through cb.deadline() and fires only if it has passed, re-linking otherwise. Hence the
// caller's duty: every time an element's true deadline is SET or moved EARLIER, call schedule(); when it
// moves LATER, calling nothing is correct and free (lazy rearm); when it becomes 0, cancel() or let the
// next visit drop it.
//
// Lanes. A bucket is kLanes intrusive lists ("lanes"); an element always goes to lane e % kLanes of its
// bucket, and expire() takes the bucket's lanes in turn. A list walk is a chain of dependent loads (each
// hook names the next element), one memory latency per element when elements are scattered; walking
// kLanes chains side by side keeps kLanes of those loads in flight, and cb.prefetch() is given each
// element kLanes visits before it is examined. Which element of a bucket is examined first is not part
// of the contract.
//
// Placement. due = ceil(deadline / tick), clamped to [min_due, cursor + buckets - 1], where min_due is
// the cursor, or cursor + 1 while expire() drains the cursor's bucket (so a schedule() from a callback
// never lands in the bucket being drained). Past deadlines therefore go to the next tick to drain.
//
// Times are absolute nanoseconds (Unix epoch in flowcop). Hook::due keeps the low 32 bits of the 64-bit
// due tick; the wheel only ever needs it modulo the bucket count, so the wrap at 2^32 ticks (50 days at
// 1 ms) is harmless by construction.
#pragma once

#include <algorithm>
#include <cassert>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <timerwheel/config.h>
#include <timerwheel/hook.h>

namespace flowcop::timerwheel {

template <typename HookOf>
class TimerWheel {
    static_assert(std::is_same_v<std::invoke_result_t<HookOf&, uint32_t>, Hook&>,
                  "HookOf must be callable as Hook& (uint32_t element)");

public:
    // Throws std::invalid_argument(validate(cfg)) if cfg is invalid. The cursor starts at now's tick.
    TimerWheel(const Config& cfg, HookOf hook_of, uint64_t now_ns)
        : _hook_of(std::move(hook_of)), _heads(make_heads(cfg)), _buckets(cfg.buckets), _mask(cfg.buckets - 1),
          _tick_ns(cfg.tick_ns), _cursor(now_ns / cfg.tick_ns)
    {}
    TimerWheel(const TimerWheel&) = delete;
    TimerWheel& operator=(const TimerWheel&) = delete;
    TimerWheel(TimerWheel&&) noexcept = default; // a moved-from wheel may only be destroyed
    TimerWheel& operator=(TimerWheel&&) noexcept = default;
    ~TimerWheel() = default; // abandons the hooks: see the contract

    // Arms e for deadline_ns (absolute ns); 0 cancels. If e is already scheduled and will be examined
    // no later than the new due tick, nothing moves (extending is free); otherwise it is moved earlier.
    // Returns true when e was linked into a bucket (armed anew or moved): the costly case, which a
    // caller re-arming many flows (FlowTable::rebase_step) budgets.
    bool schedule(uint32_t e, uint64_t deadline_ns) noexcept
    {
        if (deadline_ns == 0) {
            cancel(e);
            return false;
        }
        Hook& h = hook(e);
        const uint64_t due = due_tick(deadline_ns);
        if (h.prev != detail::kUnlinked) {
            if (due >= visit_tick(h))
                return false;
            unlink(e, h);
        }
        link(e, h, due);
        return true;
    }

    // Removes e from the wheel; a no-op if it is not scheduled.
    void cancel(uint32_t e) noexcept
    {
        Hook& h = hook(e);
        if (h.prev != detail::kUnlinked)
            unlink(e, h);
    }

    bool is_scheduled(uint32_t e) const noexcept { return hook(e).prev != detail::kUnlinked; }

    // Drains ticks cursor..floor(now_ns / tick) in order, examining each element of the cursor's bucket:
    //   cb.prefetch(e) (optional): a hint that the pass will examine e soon (each lane's head when the
    //     pass enters a bucket, then each element's successor about kLanes visits ahead); it must not
    //     call the wheel nor change any deadline.
    //   cb.deadline(e) -> uint64_t: e's true deadline (0 = none: e leaves the wheel). Must not call the wheel.
    //   cb.fire(e) -> bool: called with e already unlinked, once its true deadline <= now_ns. It may
    //     schedule()/cancel() any element, e included (e then lands at cursor + 1 at the earliest). Returning
    //     false defers e: unless fire() scheduled it, e is re-linked for the tick after now's and counted
    //     deferred — retried by a later call, not at every tick of this one (a call may drain many
    //     ticks). Only a call whose window spans the whole ring parks it at the window's last tick.
    // The cursor passes a bucket only once it is empty. The pass stops before examining an element once
    // fired == fire_budget or visited == visit_budget, leaving the rest for the next call (which resumes in
    // the same bucket); budget_exhausted is then true. A budget of 0 is a caller bug (flowcop rejects it
    // in config): nothing is examined and budget_exhausted says whether undrained due ticks remain.
    // If the cursor lags a whole ring or more, it first jumps to now's tick - buckets + 1: that window
    // still covers every bucket, and firing is decided by true deadlines, so nothing is lost or early.
    // Callbacks must not throw (expire is noexcept) nor call expire() re-entrantly.
    template <typename Callbacks>
    ExpireResult expire(uint64_t now_ns, uint64_t fire_budget, uint64_t visit_budget, Callbacks&& cb) noexcept
    {
        assert(!_draining && "expire() called re-entrantly from a callback");
        ExpireResult r;
        const uint64_t target = now_ns / _tick_ns;
        if (target < _cursor)
            return r;
        if (fire_budget == 0 || visit_budget == 0) {
            r.budget_exhausted = true;
            return r;
        }
        if (target - _cursor >= _buckets)
            _cursor = target - _buckets + 1;
        constexpr bool kHint = requires
        {
            cb.prefetch(uint32_t{});
        };
        for (; _cursor <= target; ++_cursor) {
            const uint32_t* const lanes = &_heads[(_cursor & _mask) * kLanes];
            const DrainingScope draining(_draining); // every exit from this bucket clears it
            if constexpr (kHint)
                for (uint32_t l = 0; l < kLanes; ++l)
                    if (lanes[l] != kNil)
                        cb.prefetch(lanes[l]);
            for (uint32_t lane = 0;; lane = (lane + 1) % kLanes) {
                // On to the next lane in turn that holds an element; none left: the bucket is drained.
                uint32_t skipped = 0;
                while (lanes[lane] == kNil && skipped < kLanes)
                    lane = (lane + 1) % kLanes, ++skipped;
                if (skipped == kLanes)
                    break;
                if (r.fired == fire_budget || r.visited == visit_budget) {
                    r.budget_exhausted = true;
                    return r;
                }
                const uint32_t e = lanes[lane];
                Hook& he = hook(e);
                // e's successor in its lane is examined about kLanes visits from now: ask for its
                // memory while the other lanes are walked.
                if constexpr (kHint)
                    if (he.next != kNil)
                        cb.prefetch(he.next);
                unlink(e, he);
                ++r.visited;
                const uint64_t d = cb.deadline(e);
                if (d == 0)
                    continue;
                if (d > now_ns) {
                    link(e, hook(e), due_tick(d)); // d > now implies due > target: not seen again this call
                    continue;
                }
                if (cb.fire(e)) {
                    ++r.fired;
                    continue;
                }
                ++r.deferred;
                Hook& h = hook(e);
                // After this call's last tick (not cursor + 1, which a call draining several ticks
                // would reach again: a held lock would then cost a visit and a failure per tick).
                // Bounded by the ring, so never the bucket being drained.
                if (h.prev == detail::kUnlinked)
                    link(e, h, std::min(target + 1, _cursor + _buckets - 1));
            }
        }
        return r;
    }

    // Examines the cursor's bucket (the next tick expire() drains) before that tick has come, and fires
    // only the elements whose true deadline is at or before until_ns, leaving every other one where it
    // was: for a caller whose time stands still (a replay whose capture ended) that must not wait for the
    // next tick to end what it scheduled for "now" (a deadline in the past lands in the cursor's bucket,
    // see Placement). Nothing is fired early by its own deadline's measure: until_ns is the caller's now or
    // earlier. Callbacks as expire()'s, except that fire(e) may schedule()/cancel() e alone. Budgets as
    // expire()'s: what they leave stays in the bucket (budget_exhausted), for the next call or the tick.
    // Costs a visit per element of the bucket.
    template <typename Callbacks>
    ExpireResult expire_ahead(uint64_t until_ns, uint64_t fire_budget, uint64_t visit_budget, Callbacks&& cb) noexcept
    {
        assert(!_draining && "expire_ahead() called from a callback");
        ExpireResult r;
        uint32_t* const lanes = &_heads[(_cursor & _mask) * kLanes];
        // Detach the bucket's lanes first: what is put back (or scheduled by fire()) lands in the emptied
        // lanes and is not met again by this call.
        uint32_t chain[kLanes];
        for (uint32_t l = 0; l < kLanes; ++l) {
            chain[l] = lanes[l];
            lanes[l] = kNil;
        }
        for (uint32_t l = 0; l < kLanes; ++l) {
            for (uint32_t e = chain[l]; e != kNil;) {
                Hook& h = hook(e);
                const uint32_t next = h.next;
                init_hook(h);
                --_size;
                if (r.fired == fire_budget || r.visited == visit_budget) {
                    r.budget_exhausted = true;
                    link(e, h, _cursor);
                    e = next;
                    continue;
                }
                ++r.visited;
                const uint64_t d = cb.deadline(e);
                if (d != 0 && d > until_ns) {
                    link(e, h, _cursor);
                } else if (d != 0) {
                    if (cb.fire(e)) {
                        ++r.fired;
                    } else {
                        ++r.deferred;
                        if (h.prev == detail::kUnlinked)
                            link(e, h, _cursor);
                    }
                }
                e = next;
            }
        }
        return r;
    }

    uint64_t size() const noexcept { return _size; }
    uint32_t buckets() const noexcept { return _buckets; }
    // Bytes the wheel allocated (its bucket heads).
    size_t memory_bytes() const noexcept { return size_t(_buckets) * kLanes * sizeof(uint32_t); }
    uint64_t tick_ns() const noexcept { return _tick_ns; }
    uint64_t cursor_tick() const noexcept { return _cursor; }

private:
    // Sets the placement floor's flag for the life of one bucket's drain (due_tick() reads it).
    class DrainingScope {
    public:
        explicit DrainingScope(bool& flag) noexcept : _flag(flag) { _flag = true; }
        ~DrainingScope() { _flag = false; }
        DrainingScope(const DrainingScope&) = delete;
        DrainingScope& operator=(const DrainingScope&) = delete;

    private:
        bool& _flag;
    };

    static std::unique_ptr<uint32_t[]> make_heads(const Config& cfg)
    {
        if (std::string err = validate(cfg); !err.empty())
            throw std::invalid_argument(err);
        auto heads = std::make_unique<uint32_t[]>(size_t(cfg.buckets) * kLanes);
        std::fill_n(heads.get(), size_t(cfg.buckets) * kLanes, kNil);
        return heads;
    }

    Hook& hook(uint32_t e) const noexcept
    {
        assert(e < detail::kUnlinked && "element index must be < 0xfffffffe");
        return _hook_of(e);
    }

    uint64_t due_tick(uint64_t deadline_ns) const noexcept
    {
        const uint64_t due = deadline_ns / _tick_ns + (deadline_ns % _tick_ns != 0 ? 1 : 0);
        return std::clamp(due, _cursor + (_draining ? 1 : 0), _cursor + _buckets - 1);
    }

    // The tick at which expire() will next reach h's bucket: the cached due itself whenever it is at or
    // past the cursor (always, except after a fast-forward jumped the cursor over it). Computed modulo the
    // ring, so it needs only the low bits of Hook::due and no comparison can be fooled by a 2^32 wrap.
    uint64_t visit_tick(const Hook& h) const noexcept
    {
        return _cursor + ((h.due - static_cast<uint32_t>(_cursor)) & _mask);
    }

    uint32_t& head_of(uint32_t e, uint64_t due) noexcept { return _heads[(due & _mask) * kLanes + e % kLanes]; }

    void link(uint32_t e, Hook& h, uint64_t due) noexcept
    {
        uint32_t& head = head_of(e, due);
        h.prev = kNil;
        h.next = head;
        h.due = static_cast<uint32_t>(due);
        if (head != kNil)
            hook(head).prev = e;
        head = e;
        ++_size;
    }

    void unlink(uint32_t e, Hook& h) noexcept
    {
        if (h.prev == kNil)
            head_of(e, h.due) = h.next;
        else
            hook(h.prev).next = h.next;
        if (h.next != kNil)
            hook(h.next).prev = h.prev;
        init_hook(h);
        --_size;
    }

    mutable HookOf _hook_of;            // mutable: is_scheduled() is const but HookOf need not be const-callable
    std::unique_ptr<uint32_t[]> _heads; // kLanes heads per bucket: bucket b's lane l at b * kLanes + l
    uint32_t _buckets;
    uint32_t _mask;
    uint64_t _tick_ns;
    uint64_t _cursor;       // next absolute tick to drain
    uint64_t _size = 0;     // elements linked
    bool _draining = false; // expire() is inside the cursor's bucket: placement floor is cursor + 1
};

} // namespace flowcop::timerwheel
