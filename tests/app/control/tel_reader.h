// SPDX-License-Identifier: BSD-3-Clause
// Test-only: reads back what a handler put into an rte_tel_data, without EAL or a socket.
//
// DPDK 22.11 keeps struct rte_tel_data opaque (lib/telemetry/telemetry_data.h is not installed) and
// serialises it only inside its socket thread. These mirrors restate that private layout for
// DPDK 22.11 so tests can look at a reply as data. If a DPDK upgrade changes the layout, the
// self-check in test_telemetry_handlers.cpp ("The reader reads back what the public API wrote")
// fails first and says so; nothing here is used outside tests.
#pragma once

#include <rte_telemetry.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace flowcop::test {

namespace dpdk2211 {
enum ContainerType { kNull, kString, kDict, kArrayString, kArrayInt, kArrayU64, kArrayContainer };
struct Container {
    rte_tel_data* data;
    int keep;
};
union Value {
    char sval[RTE_TEL_MAX_STRING_LEN];
    int ival;
    uint64_t u64val;
    Container container;
};
struct DictEntry {
    char name[RTE_TEL_MAX_STRING_LEN];
    rte_tel_value_type type;
    Value value;
};
struct Data {
    ContainerType type;
    unsigned data_len;
    union {
        char str[RTE_TEL_MAX_SINGLE_STRING_LEN];
        DictEntry dict[RTE_TEL_MAX_DICT_ENTRIES];
        Value array[RTE_TEL_MAX_ARRAY_ENTRIES];
    } data;
};
} // namespace dpdk2211

// One value of a reply: a number, a string, or a nested container.
struct TelValue {
    enum Kind { u64, integer, string, container } kind = u64;
    uint64_t number = 0;
    std::string text;
    const rte_tel_data* nested = nullptr;
};

inline const dpdk2211::Data& layout(const rte_tel_data* d)
{
    return *reinterpret_cast<const dpdk2211::Data*>(d);
}

inline bool is_dict(const rte_tel_data* d)
{
    return layout(d).type == dpdk2211::kDict;
}

inline bool is_array(const rte_tel_data* d)
{
    const auto t = layout(d).type;
    return t == dpdk2211::kArrayString || t == dpdk2211::kArrayInt || t == dpdk2211::kArrayU64 ||
           t == dpdk2211::kArrayContainer;
}

// The dict's entries by name (a dict reply), in insertion order of first appearance.
inline std::map<std::string, TelValue> dict_of(const rte_tel_data* d)
{
    std::map<std::string, TelValue> out;
    const dpdk2211::Data& l = layout(d);
    if (l.type != dpdk2211::kDict)
        return out;
    for (unsigned i = 0; i < l.data_len; ++i) {
        const dpdk2211::DictEntry& e = l.data.dict[i];
        TelValue v;
        switch (e.type) {
        case RTE_TEL_STRING_VAL: v.kind = TelValue::string, v.text = e.value.sval; break;
        case RTE_TEL_INT_VAL: v.kind = TelValue::integer, v.number = uint64_t(int64_t(e.value.ival)); break;
        case RTE_TEL_U64_VAL: v.kind = TelValue::u64, v.number = e.value.u64val; break;
        case RTE_TEL_CONTAINER: v.kind = TelValue::container, v.nested = e.value.container.data; break;
        }
        out.emplace(e.name, v);
    }
    return out;
}

inline std::vector<uint64_t> u64_array_of(const rte_tel_data* d)
{
    std::vector<uint64_t> out;
    const dpdk2211::Data& l = layout(d);
    if (l.type == dpdk2211::kArrayU64)
        for (unsigned i = 0; i < l.data_len; ++i)
            out.push_back(l.data.array[i].u64val);
    return out;
}

inline std::vector<std::string> string_array_of(const rte_tel_data* d)
{
    std::vector<std::string> out;
    const dpdk2211::Data& l = layout(d);
    if (l.type == dpdk2211::kArrayString)
        for (unsigned i = 0; i < l.data_len; ++i)
            out.push_back(l.data.array[i].sval);
    return out;
}

inline std::vector<const rte_tel_data*> container_array_of(const rte_tel_data* d)
{
    std::vector<const rte_tel_data*> out;
    const dpdk2211::Data& l = layout(d);
    if (l.type == dpdk2211::kArrayContainer)
        for (unsigned i = 0; i < l.data_len; ++i)
            out.push_back(l.data.array[i].container.data);
    return out;
}

// Frees a reply as DPDK's socket thread does after sending it: every nested container not marked
// keep, then the reply itself (rte_tel_data_free frees only the object it is given).
inline void free_reply(rte_tel_data* d)
{
    if (d == nullptr)
        return;
    dpdk2211::Data& l = *reinterpret_cast<dpdk2211::Data*>(d);
    if (l.type == dpdk2211::kDict) {
        for (unsigned i = 0; i < l.data_len; ++i)
            if (l.data.dict[i].type == RTE_TEL_CONTAINER && !l.data.dict[i].value.container.keep)
                free_reply(l.data.dict[i].value.container.data);
    } else if (l.type == dpdk2211::kArrayContainer) {
        for (unsigned i = 0; i < l.data_len; ++i)
            if (!l.data.array[i].container.keep)
                free_reply(l.data.array[i].container.data);
    }
    rte_tel_data_free(d);
}

// A reply freed at scope exit.
class TelData {
public:
    TelData() : _d(rte_tel_data_alloc()) {}
    ~TelData() { free_reply(_d); }
    TelData(const TelData&) = delete;
    TelData& operator=(const TelData&) = delete;
    rte_tel_data* get() const noexcept { return _d; }

private:
    rte_tel_data* _d;
};

} // namespace flowcop::test
