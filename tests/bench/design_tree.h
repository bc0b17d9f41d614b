// SPDX-License-Identifier: BSD-3-Clause
// nginx's design (seed 004): every flow's deadline is a key in one ordered tree (nginx's
// ngx_event_timer_rbtree; here std::multimap<deadline, flow*>, a red-black tree too), and the flow
// keeps its node's iterator. A packet re-keys the flow: the node is taken out and re-inserted under
// the new deadline (extract/insert: no allocation, as nginx's intrusive node needs none); like
// ngx_rbtree_insert the insert descends from the root. A tick pops the minimum while it is due.
// nginx skips a re-key that moves the deadline by less than NGX_TIMER_LAZY_DELAY (300 ms); the
// benchmark re-keys on every packet, as the issue specifies for "per-flow timers".
#pragma once

#include "design_flow.h"

#include <map>
#include <vector>

namespace flowcop::bench::designs {

class TreeDesign {
public:
    static constexpr const char* kName = "rb-tree (nginx)";
    static constexpr const char* kWork = "key compares";
    static constexpr const char* kTouchWork = "key compares";
    static constexpr bool kRealTime = false;

    TreeDesign(uint32_t slots, uint64_t timeout_ns, uint64_t)
        : _flows(slots), _timeout(timeout_ns), _tree(Less{&_compares})
    {}

    void open(uint32_t slot, uint64_t now_ns)
    {
        Flow& f = _flows[slot];
        open_payload(f.m, f.p, now_ns);
        f.it = _tree.emplace(now_ns + _timeout, &f);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        Flow& f = _flows[slot];
        touch_payload(f.p, now_ns);
        auto node = _tree.extract(f.it);
        node.key() = now_ns + _timeout;
        f.it = _tree.insert(std::move(node));
    }

    PassResult expire(uint64_t now_ns, uint64_t, uint64_t, Sink& sink) noexcept
    {
        PassResult r;
        const uint64_t before = _compares;
        while (!_tree.empty()) {
            const auto it = _tree.begin();
            ++_compares; // the "is the minimum due" test
            if (it->first > now_ns)
                break;
            Flow* f = it->second;
            const uint64_t deadline = it->first;
            _tree.erase(it);
            sink.fire(uint32_t(f - _flows.data()), f->m.flags, deadline, f->p.packets);
            ++r.fired;
        }
        r.work = _compares - before;
        return r;
    }

    uint64_t touch_work() const noexcept { return _compares; }

private:
    struct Less { // counts comparisons: one increment each, the price of seeing the work
        uint64_t* count;
        bool operator()(uint64_t a, uint64_t b) const noexcept
        {
            ++*count;
            return a < b;
        }
    };
    struct Flow;
    using Tree = std::multimap<uint64_t, Flow*, Less>;
    struct Flow {
        Tree::iterator it;
        Meta m;
        Payload p;
    };

    std::vector<Flow> _flows;
    uint64_t _timeout;
    uint64_t _compares = 0;
    Tree _tree;
};

} // namespace flowcop::bench::designs
