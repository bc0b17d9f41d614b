// SPDX-License-Identifier: BSD-3-Clause
// The state-file fuzz target's checks (statefile_check.h).
#include "statefile_check.h"

#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>
#include <statefile/statefile.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace flowcop::fuzz {

namespace {

using conntrack::FlowImage;
using conntrack::RestoreOutcome;

bool same(const FlowImage& a, const FlowImage& b)
{
    uint8_t x[statefile::kEntryBytes], y[statefile::kEntryBytes];
    statefile::encode_entry(a, x);
    statefile::encode_entry(b, y);
    return std::memcmp(x, y, sizeof x) == 0 && a.flow_id == b.flow_id && a.last == b.last &&
           a.dir[0].packets == b.dir[0].packets && a.dir[1].bytes == b.dir[1].bytes &&
           a.reported_end_ns == b.reported_end_ns;
}

std::unique_ptr<conntrack::FlowTable> small_table(unsigned n)
{
    conntrack::TableConfig c;
    c.name = "fuzz_statefile" + std::to_string(n);
    c.capacity = 64;
    c.wheel.buckets = 256;
    c.wheel.tick_ns = 1'000'000'000;
    std::string error;
    return conntrack::FlowTable::create(c, error);
}

} // namespace

const char* check_statefile(const uint8_t* data, size_t size)
{
    statefile::Header h;
    std::string why;
    const statefile::Status s = statefile::parse(data, size, h, why);
    if (s != statefile::Status::ok)
        return why.empty() ? "a refusal without a reason" : nullptr;
    if (size != statefile::kHeaderBytes + h.flows * statefile::kEntryBytes)
        return "ok for a size that is not the header's count of entries";

    std::vector<FlowImage> images;
    for (uint64_t i = 0; i < h.flows; ++i) {
        FlowImage im, again;
        statefile::decode_entry(data + statefile::kHeaderBytes + i * statefile::kEntryBytes, im);
        uint8_t bytes[statefile::kEntryBytes];
        statefile::encode_entry(im, bytes);
        statefile::decode_entry(bytes, again);
        if (!same(im, again))
            return "decode(encode(decode(entry))) differs from decode(entry)";
        if (images.size() < kMaxRestored)
            images.push_back(im);
    }

    std::unique_ptr<conntrack::FlowTable> tables[2] = {small_table(0), small_table(1)};
    if (!tables[0] || !tables[1])
        return "no table";
    const uint64_t now = h.base_now_ns;
    const conntrack::TimeBase base{int64_t(h.written_ns % 1000)};
    uint32_t top = 0;
    for (const FlowImage& im : images)
        top = std::max(top, conntrack::flow_id_generation(im.flow_id));
    std::vector<size_t> again;
    for (size_t i = 0; i < images.size(); ++i)
        if (tables[i & 1]->restore_flow(images[i], base, now, 0) == RestoreOutcome::slot_taken)
            again.push_back(i);
    for (auto& t : tables)
        t->finish_restore();
    for (size_t i : again) {
        const RestoreOutcome o = tables[i & 1]->restore_flow(images[i], base, now, top == UINT32_MAX ? top : top + 1);
        if (o == RestoreOutcome::slot_taken || o == RestoreOutcome::restored)
            return "the renumbering pass placed a flow in its own slot, or refused it as slot_taken";
    }
    for (auto& t : tables) {
        if (t->active() > t->capacity())
            return "more flows than the capacity";
        std::vector<conntrack::FlowSnapshot> flows(t->capacity() + 1);
        flows.resize(t->snapshot(conntrack::SnapshotFilter{}, flows.data(), flows.size()));
        if (flows.size() != t->active())
            return "created - expired differs from the flows in the table";
        std::set<uint64_t> ids;
        for (const auto& f : flows)
            ids.insert(f.flow_id);
        if (ids.size() != flows.size())
            return "two flows of one table share an id";
        // Beyond any deadline a restored flow can have (its times are at most now, a set timeout at most
        // 2^32 s after now, a state's timeout far less): every flow ends, none is left unarmed. Skipped for
        // a `now` so late that the deadlines would wrap (beyond the year 2400).
        const uint64_t kBeyond = uint64_t(UINT32_MAX) * 1'000'000'000 * 2;
        if (now > UINT64_MAX / 2)
            continue;
        const uint64_t later = now + kBeyond;
        for (int pass = 0; pass < 4 && t->active() != 0; ++pass)
            t->run_cop(later + uint64_t(pass) * 1'000'000'000, UINT64_MAX, UINT64_MAX);
        if (t->active() != 0)
            return "a restored flow outlived every deadline";
        if (t->counters().flows_created != t->counters().expired_total())
            return "created != expired once every flow ended";
    }
    return nullptr;
}

} // namespace flowcop::fuzz
