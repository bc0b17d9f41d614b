// SPDX-License-Identifier: BSD-3-Clause
// A small IPFIX collector for tests, written from RFC 7011 (not from the encoder): it checks the
// message rules a collector relies on and returns each data record as (enterprise, id) -> value.
// Checked: version 10; the header's length equals the datagram's; every set fits its message and is
// at least a header long; template ids >= 256 and field specifiers complete; a data set's template
// was defined earlier in the same observation domain (this message or an earlier one); a data set
// holds whole records only (flowcop pads nothing); each message's sequence number equals the data
// records this domain sent before it. A broken rule is recorded in `errors`, never thrown.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace flowcop::ipfix::test {

struct Field {
    uint16_t id;
    uint16_t length;
    uint32_t enterprise;
};

struct Record {
    uint32_t domain;
    uint16_t template_id;
    std::map<std::pair<uint32_t, uint16_t>, std::vector<uint8_t>> values; // (enterprise, id) -> octets

    bool has(uint16_t id, uint32_t enterprise = 0) const { return values.count({enterprise, id}) != 0; }
    uint64_t num(uint16_t id, uint32_t enterprise = 0) const
    {
        auto it = values.find({enterprise, id});
        if (it == values.end())
            return ~0ull;
        uint64_t v = 0;
        for (uint8_t b : it->second)
            v = v << 8 | b;
        return v;
    }
    std::vector<uint8_t> bytes(uint16_t id, uint32_t enterprise = 0) const
    {
        auto it = values.find({enterprise, id});
        return it == values.end() ? std::vector<uint8_t>{} : it->second;
    }
};

struct MessageInfo {
    uint32_t export_time, sequence, domain;
    size_t length;
    unsigned data_records, template_records;
};

class Decoder {
public:
    std::vector<Record> records;
    std::vector<MessageInfo> messages;
    std::vector<std::string> errors;
    std::map<uint32_t, std::map<uint16_t, std::vector<Field>>> templates; // domain -> id -> fields

    void feed(const uint8_t* m, size_t len)
    {
        if (len < 16)
            return error("message shorter than its header");
        const uint16_t version = get16(m), length = get16(m + 2);
        if (version != 10)
            return error("version " + std::to_string(version));
        if (length != len)
            return error("header length " + std::to_string(length) + " != datagram " + std::to_string(len));
        MessageInfo info{get32(m + 4), get32(m + 8), get32(m + 12), len, 0, 0};
        if (info.sequence != _next_seq[info.domain])
            error("domain " + std::to_string(info.domain) + ": sequence " + std::to_string(info.sequence) +
                  ", expected " + std::to_string(_next_seq[info.domain]));
        size_t off = 16;
        while (off < len) {
            if (len - off < 4)
                return error("trailing bytes after the last set");
            const uint16_t set_id = get16(m + off), set_len = get16(m + off + 2);
            if (set_len < 4 || set_len > len - off)
                return error("set length " + std::to_string(set_len) + " out of the message");
            if (set_id == 2)
                templates_in(info, m + off + 4, set_len - 4u);
            else if (set_id >= 256)
                data_in(info, set_id, m + off + 4, set_len - 4u);
            else
                error("unexpected set id " + std::to_string(set_id));
            off += set_len;
        }
        _next_seq[info.domain] = info.sequence + info.data_records;
        messages.push_back(info);
    }

private:
    static uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
    static uint32_t get32(const uint8_t* p) { return uint32_t(get16(p)) << 16 | get16(p + 2); }
    void error(std::string e) { errors.push_back(std::move(e)); }

    void templates_in(MessageInfo& info, const uint8_t* p, size_t len)
    {
        size_t off = 0;
        while (len - off >= 4) {
            const uint16_t id = get16(p + off), count = get16(p + off + 2);
            off += 4;
            if (id < 256)
                return error("template id " + std::to_string(id) + " below 256");
            std::vector<Field> fields;
            for (unsigned i = 0; i < count; ++i) {
                if (len - off < 4)
                    return error("template " + std::to_string(id) + " cut short");
                Field f{uint16_t(get16(p + off) & 0x7fff), get16(p + off + 2), 0};
                const bool enterprise = (get16(p + off) & 0x8000) != 0;
                off += 4;
                if (enterprise) {
                    if (len - off < 4)
                        return error("enterprise number cut short");
                    f.enterprise = get32(p + off);
                    off += 4;
                }
                if (f.length == 0xffff)
                    return error("variable-length field (flowcop sends none)");
                fields.push_back(f);
            }
            templates[info.domain][id] = fields;
            ++info.template_records;
        }
        if (off != len)
            error("template set with " + std::to_string(len - off) + " stray bytes");
    }

    void data_in(MessageInfo& info, uint16_t set_id, const uint8_t* p, size_t len)
    {
        auto& known = templates[info.domain];
        auto it = known.find(set_id);
        if (it == known.end())
            return error("data set " + std::to_string(set_id) + " before its template");
        size_t rec_len = 0;
        for (const Field& f : it->second)
            rec_len += f.length;
        if (rec_len == 0 || len % rec_len != 0)
            return error("data set of " + std::to_string(len) + " bytes is not whole records");
        for (size_t off = 0; off < len; off += rec_len) {
            Record r{info.domain, set_id, {}};
            size_t at = off;
            for (const Field& f : it->second) {
                r.values[{f.enterprise, f.id}] = std::vector<uint8_t>(p + at, p + at + f.length);
                at += f.length;
            }
            records.push_back(std::move(r));
            ++info.data_records;
        }
    }

    std::map<uint32_t, uint32_t> _next_seq;
};

} // namespace flowcop::ipfix::test
