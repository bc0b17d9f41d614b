// SPDX-License-Identifier: BSD-3-Clause
// Randomized model test: a million schedule/extend/shorten/close/cancel/advance operations (fixed seeds,
// several bucket counts and tick lengths, one run across a 2^32-tick wrap) checked against a reference
// min-heap of the tick by which each element must have fired.
#include <timerwheel/timer_wheel.h>

#include "fixture.h"
#include "splitmix64.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>

using namespace flowcop::timerwheel;
using namespace flowcop::timerwheel::test;

namespace {

// splitmix64: a fixed-seed stream that stays cheap in -O0 + ASan builds (std::mt19937_64 dominated them).
using Rng = flowcop::test::SplitMix64;

// A binary min-heap of integers on a raw array: std::priority_queue's iterator layers made this
// test's -O0 + ASan run several times slower.
class MinHeap {
public:
    bool empty() const { return _v.empty(); }
    uint64_t top() const { return _v[0]; }
    void push(uint64_t x)
    {
        _v.push_back(x);
        uint64_t* a = _v.data();
        for (size_t i = _v.size() - 1; i > 0 && a[(i - 1) / 2] > a[i]; i = (i - 1) / 2)
            std::swap(a[(i - 1) / 2], a[i]);
    }
    void pop()
    {
        uint64_t* a = _v.data();
        const size_t n = _v.size() - 1;
        a[0] = a[n];
        _v.pop_back();
        for (size_t i = 0;;) {
            size_t m = i;
            const size_t l = 2 * i + 1, r = l + 1;
            if (l < n && a[l] < a[m])
                m = l;
            if (r < n && a[r] < a[m])
                m = r;
            if (m == i)
                break;
            std::swap(a[i], a[m]);
            i = m;
        }
    }

private:
    std::vector<uint64_t> _v;
};

struct Params {
    uint32_t buckets;
    uint64_t tick_ns;
    uint64_t t0;
    uint64_t ops;
    uint64_t seed;
};

struct Violations {
    uint64_t early = 0;       // fired before its true deadline (or with no deadline)
    uint64_t unexpected = 0;  // fired while the reference holds nothing for it (cancelled, fired twice)
    uint64_t twice = 0;       // fired twice while one expire() call drained one tick
    uint64_t late = 0;        // unlimited budgets only: due tick drained without firing it
    uint64_t bookkeeping = 0; // size() or is_scheduled() disagree with the reference, or counts mismatch
    std::string first;

    uint64_t total() const { return early + unexpected + twice + late + bookkeeping; }
};

// The reference: for every element with a true deadline, the latest tick by which an unlimited-budget
// wheel must have fired it. That is ceil(deadline / tick), raised to the placement floor in force when it
// was (re)scheduled (the cursor, or cursor + 1 from inside a callback), and after a deferral to the tick after the
// call's last one (or the ring's last tick, when the call's window spans the whole ring).
class Model {
public:
    static constexpr uint32_t kElementBits = 10;
    static constexpr uint32_t kElements = 1u << kElementBits;

    Model(const Params& prm, bool small_budgets)
        : _prm(prm), _small(small_budgets), _pool(kElements), _w(make_wheel(_pool, prm.buckets, prm.tick_ns, prm.t0)),
          _rng(prm.seed), _now(prm.t0), _must(kElements, 0), _last_fire_tick(kElements, kUnlimited),
          _last_fire_call(kElements, 0)
    {}

    void run()
    {
        for (uint64_t i = 0; i < _prm.ops; ++i) {
            if (_rng() % 100 < 30)
                advance(step());
            else
                touch(static_cast<uint32_t>(_rng() % kElements));
            if ((i & 4095) == 0)
                audit();
        }
        audit();
    }

    // Everything still armed must fire eventually: stop re-arming and deferring, jump past every deadline
    // and drain (with the same kind of budgets) until the wheel says nothing due remains.
    void drain()
    {
        _rearm = false;
        _defer = false;
        uint64_t latest = _now;
        for (uint32_t e = 0; e < kElements; ++e)
            latest = std::max(latest, _pool.deadline[e]);
        _now = latest + 2 * span();
        for (uint64_t calls = 0; calls < 10'000'000; ++calls)
            if (!expire().budget_exhausted)
                break;
        audit();
    }

    const Violations& violations() const { return _v; }
    uint64_t pending() const
    {
        return static_cast<uint64_t>(std::count_if(_must.begin(), _must.end(), [](uint64_t m) { return m != 0; }));
    }
    uint64_t scheduled() const { return _w.size(); }
    uint64_t fires() const { return _fires; }
    uint64_t defers() const { return _defers; }
    uint64_t fast_forwards() const { return _fast_forwards; }

    // Callbacks.
    uint64_t deadline(uint32_t e) { return _pool.deadline[e]; }
    bool fire(uint32_t e)
    {
        ++_fires;
        ++_callbacks_in_pass;
        const uint64_t tick = _w.cursor_tick();
        const uint64_t d = _pool.deadline[e];
        if (d == 0 || d > _now)
            fail(_v.early, "element " + std::to_string(e) + " fired early");
        if (_must[e] == 0)
            fail(_v.unexpected, "element " + std::to_string(e) + " fired but was not armed");
        if (_last_fire_call[e] == _calls && _last_fire_tick[e] == tick)
            fail(_v.twice, "element " + std::to_string(e) + " fired twice in one tick of one pass");
        _last_fire_call[e] = _calls;
        _last_fire_tick[e] = tick;
        if (_defer && _rng() % 8 == 0) {
            ++_defers;
            // Retried by the next call: after this call's last tick, inside the ring.
            set_must(e, std::min(_now / _prm.tick_ns + 1, tick + _prm.buckets - 1));
            return false;
        }
        disarm(e);
        if (_rearm) {
            const uint64_t r = _rng() % 100;
            if (r < 20) {
                arm(e, deadline_from_now(), true);
            } else if (r < 30) {
                const auto o = static_cast<uint32_t>(_rng() % kElements);
                if (_must[o] == 0)
                    arm(o, deadline_from_now(), true);
                else if (_rng() % 2 == 0)
                    cancel(o);
                else
                    arm(o, _now, true); // close another flow from inside the pass
            }
        }
        return true;
    }

private:
    // Ticks stay below 2^44 (1 ms ticks until the year 2500), so tick and element pack into one key.
    static uint64_t key(uint64_t must, uint32_t e) { return must << kElementBits | e; }
    uint64_t span() const { return uint64_t{_prm.buckets} * _prm.tick_ns; }
    uint64_t ceil_tick(uint64_t ns) const { return ns / _prm.tick_ns + (ns % _prm.tick_ns != 0 ? 1 : 0); }

    uint64_t step()
    {
        const uint64_t r = _rng() % 1000;
        if (r < 800)
            return _rng() % (_prm.tick_ns + 1);
        if (r < 970)
            return _rng() % (5 * _prm.tick_ns);
        if (r < 995)
            return _rng() % span();
        return _rng() % (10 * span()); // fast-forward territory
    }

    uint64_t deadline_from_now()
    {
        const uint64_t r = _rng() % 100;
        if (r < 10)
            return _now - _rng() % (2 * _prm.tick_ns); // already past
        if (r < 45)
            return _now + _rng() % (4 * _prm.tick_ns);
        if (r < 85)
            return _now + _rng() % span();
        return _now + _rng() % (3 * span()); // beyond the ring
    }

    void fail(uint64_t& counter, const std::string& what)
    {
        if (_v.total() == 0)
            _v.first = what + " (now " + std::to_string(_now) + ", cursor " + std::to_string(_w.cursor_tick()) + ")";
        ++counter;
    }

    void set_must(uint32_t e, uint64_t must)
    {
        _must[e] = must;
        if (must != 0)
            _heap.push(key(must, e));
    }

    void arm(uint32_t e, uint64_t d, bool in_callback)
    {
        _pool.deadline[e] = d;
        _w.schedule(e, d);
        set_must(e, std::max(ceil_tick(d), _w.cursor_tick() + (in_callback ? 1 : 0)));
    }

    void disarm(uint32_t e)
    {
        _pool.deadline[e] = 0;
        set_must(e, 0);
    }

    void cancel(uint32_t e)
    {
        _w.cancel(e);
        disarm(e);
    }

    void touch(uint32_t e)
    {
        if (_must[e] == 0) {
            arm(e, deadline_from_now(), false); // set
            return;
        }
        const uint64_t r = _rng() % 100;
        const uint64_t d = _pool.deadline[e];
        if (r < 55) { // extend: lazily (r < 40), or through a schedule() that must be a no-op
            const uint64_t later = d + 1 + _rng() % (r < 20 ? 2 * _prm.tick_ns : 2 * span());
            _pool.deadline[e] = later;
            if (r >= 40)
                _w.schedule(e, later);
            set_must(e, std::max(_must[e], ceil_tick(later)));
        } else if (r < 75) { // shorten, possibly into the past
            arm(e, d - std::min(d - 1, _rng() % (2 * span())), false);
        } else if (r < 80) {
            arm(e, _now, false); // close
        } else if (r < 90) {
            cancel(e);
        } else {
            disarm(e); // deadline 0 without cancel: the wheel drops it at its next visit
        }
    }

    ExpireResult expire()
    {
        uint64_t fb = kUnlimited;
        uint64_t vb = kUnlimited;
        if (_small) {
            fb = 1 + _rng() % 8;
            vb = visit_budget(fb, 1 + static_cast<uint32_t>(_rng() % 4));
        }
        _callbacks_in_pass = 0;
        ++_calls;
        const uint64_t lag = _now / _prm.tick_ns - std::min(_now / _prm.tick_ns, _w.cursor_tick());
        _fast_forwards += lag >= _prm.buckets ? 1 : 0;
        const ExpireResult res = _w.expire(_now, fb, vb, *this);
        if (res.fired + res.deferred != _callbacks_in_pass || res.fired > fb || res.visited > vb ||
            res.visited < _callbacks_in_pass)
            fail(_v.bookkeeping, "ExpireResult counts disagree with the callbacks");
        const uint64_t target = _now / _prm.tick_ns;
        const uint64_t first = earliest_must();
        if (!_small && first != 0 && (first >> kElementBits) <= target)
            fail(_v.late, "element " + std::to_string(first & (kElements - 1)) + " not fired by tick " +
                              std::to_string(first >> kElementBits));
        if (!_small && res.budget_exhausted)
            fail(_v.bookkeeping, "unlimited pass reported budget_exhausted");
        return res;
    }

    // The earliest live key, or 0 if nothing is armed.
    uint64_t earliest_must()
    {
        while (!_heap.empty()) {
            const uint64_t top = _heap.top();
            if (_must[top & (kElements - 1)] == (top >> kElementBits))
                return top;
            _heap.pop();
        }
        return 0;
    }

    void advance(uint64_t by)
    {
        _now += by;
        expire();
    }

    void audit()
    {
        uint64_t linked = 0;
        for (uint32_t e = 0; e < kElements; ++e) {
            linked += _w.is_scheduled(e) ? 1 : 0;
            if (_must[e] != 0 && !_w.is_scheduled(e))
                fail(_v.bookkeeping, "armed element " + std::to_string(e) + " is not scheduled");
        }
        if (linked != _w.size())
            fail(_v.bookkeeping, "size() disagrees with is_scheduled()");
    }

    Params _prm;
    bool _small;
    Pool _pool;
    Wheel _w;
    Rng _rng;
    uint64_t _now;
    std::vector<uint64_t> _must; // 0 = not armed
    std::vector<uint64_t> _last_fire_tick;
    std::vector<uint64_t> _last_fire_call; // a budget stop ends a pass: the next call may refire a re-armed element
    // key(must-fire-by tick, element); an entry is stale once _must[e] changed (checked on top()).
    MinHeap _heap;
    bool _rearm = true;
    bool _defer = true;
    uint64_t _fires = 0;
    uint64_t _defers = 0;
    uint64_t _callbacks_in_pass = 0;
    uint64_t _calls = 0;
    uint64_t _fast_forwards = 0;
    Violations _v;
};

// Four shapes: a tiny ring (almost everything clamped), 1 ms ticks crossing a 2^32-tick wrap, the
// default ring, and a tick that is not a whole number of milliseconds. 250,000 operations each.
const Params kParams[] = {
    {4, kSec, kT0, 250'000, 1},
    {64, kMs, ((uint64_t{396} << 32) - 20'000) * kMs, 250'000, 2},
    {4096, kSec, kT0 + 777, 250'000, 3},
    {256, 1'500'000, kT0 + 123'456'789, 250'000, 4},
};

void check(const Model& m, const Params& prm)
{
    INFO("buckets " << prm.buckets << ", tick_ns " << prm.tick_ns << ", seed " << prm.seed);
    INFO(m.violations().first);
    CHECK(m.violations().early == 0);
    CHECK(m.violations().unexpected == 0);
    CHECK(m.violations().twice == 0);
    CHECK(m.violations().late == 0);
    CHECK(m.violations().bookkeeping == 0);
    CHECK(m.pending() == 0);   // nothing lost
    CHECK(m.scheduled() == 0); // nothing left behind in the wheel
    CHECK(m.fires() > prm.ops / 10);
    CHECK(m.defers() > 0);
    CHECK(m.fast_forwards() > 0);
}

} // namespace

// With unlimited budgets the wheel is exact: every element fires at or after its true deadline and by
// the end of its deadline's tick (the first pass whose tick reaches ceil(deadline / tick)), once.
TEST_CASE("randomized model: unlimited budgets fire every element within its deadline's tick", "[timerwheel][model]")
{
    for (const Params& prm : kParams) {
        Model m(prm, false);
        m.run();
        m.drain();
        check(m, prm);
    }
}

// With small budgets passes stop early and timeouts may run late, but never early, never twice in a
// tick, and never lost: a final drain fires everything still armed.
TEST_CASE("randomized model: small budgets never fire early or twice and lose nothing", "[timerwheel][model]")
{
    for (const Params& prm : kParams) {
        Model m(prm, true);
        m.run();
        m.drain();
        check(m, prm);
    }
}
