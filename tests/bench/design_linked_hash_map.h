// SPDX-License-Identifier: BSD-3-Clause
// Seed 001's LINKEDHASHMAP, literally: a std::list of (id, last message time) nodes, newest at the
// front, and a std::unordered_map from id to the node's list iterator. A packet finds the node
// through the map, updates its time and splices it to the front; a tick removes from the back while
// the back has timed out (erasing its map entry). The flow's payload stays in the flat record array
// the other designs use; the list and map are what this design adds per flow.
#pragma once

#include "design_flow.h"

#include <list>
#include <unordered_map>
#include <vector>

namespace flowcop::bench::designs {

class LinkedHashMapDesign {
public:
    static constexpr const char* kName = "LinkedHashMap (seed 001)";
    static constexpr const char* kWork = "nodes visited";
    static constexpr const char* kTouchWork = "nodes touched";
    static constexpr bool kRealTime = false;

    LinkedHashMapDesign(uint32_t slots, uint64_t timeout_ns, uint64_t) : _flows(slots), _timeout(timeout_ns)
    {
        _map.reserve(slots);
    }

    void open(uint32_t slot, uint64_t now_ns)
    {
        open_payload(_flows[slot].m, _flows[slot].p, now_ns);
        _list.push_front({slot, now_ns});
        _map.emplace(slot, _list.begin());
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        touch_payload(_flows[slot].p, now_ns);
        const auto node = _map.find(slot)->second;
        node->last_seen_ns = now_ns;
        _list.splice(_list.begin(), _list, node);
        _nodes += 2; // the map entry and the list node
    }

    PassResult expire(uint64_t now_ns, uint64_t, uint64_t, Sink& sink) noexcept
    {
        PassResult r;
        while (!_list.empty()) {
            ++r.work;
            const Node& back = _list.back();
            if (back.last_seen_ns + _timeout > now_ns)
                break;
            const uint32_t slot = back.id;
            const uint64_t deadline = back.last_seen_ns + _timeout;
            _map.erase(slot);
            _list.pop_back();
            Flow& f = _flows[slot];
            sink.fire(slot, f.m.flags, deadline, f.p.packets);
            ++r.fired;
        }
        return r;
    }

    uint64_t touch_work() const noexcept { return _nodes; }

private:
    struct Node {
        uint32_t id;
        uint64_t last_seen_ns;
    };
    struct Flow {
        Meta m{};
        Payload p{};
    };

    std::vector<Flow> _flows;
    uint64_t _timeout;
    std::list<Node> _list;
    std::unordered_map<uint32_t, std::list<Node>::iterator> _map;
    uint64_t _nodes = 0;
};

} // namespace flowcop::bench::designs
