// SPDX-License-Identifier: BSD-3-Clause
// Message assembly: header, template and data sets, sequence numbers and template refresh.
#include <ipfix/encoder.h>

#include <algorithm>

namespace flowcop::ipfix {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;
constexpr size_t kMaxMessageBytes = 65535; // the header's 16-bit length

void put16(uint8_t* p, uint16_t v) noexcept
{
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) noexcept
{
    put16(p, uint16_t(v >> 16));
    put16(p + 2, uint16_t(v));
}

} // namespace

size_t min_message_bytes() noexcept
{
    return kMessageHeaderBytes + kSetHeaderBytes + max_template_bytes() + kSetHeaderBytes + max_record_bytes();
}

Encoder::Encoder(const EncoderConfig& config) : _config(config)
{
    _config.max_message_bytes =
        uint16_t(std::clamp<size_t>(_config.max_message_bytes, min_message_bytes(), kMaxMessageBytes));
    _buf.resize(_config.max_message_bytes);
}

void Encoder::begin(uint64_t now_ns, unsigned first, size_t reserve) noexcept
{
    _open = true;
    _opened_ns = now_ns;
    _used = kMessageHeaderBytes;
    _set_id = 0;
    _records = 0;
    const bool by_time = _config.template_refresh_ns != 0 && now_ns - _templates_sent_ns >= _config.template_refresh_ns;
    const bool by_count =
        _config.template_refresh_messages != 0 && _messages_since_templates >= _config.template_refresh_messages;
    if (by_time || by_count)
        _pending |= _known;
    write_pending_templates(now_ns, first, reserve);
}

void Encoder::close_set() noexcept
{
    if (_set_id == 0)
        return;
    put16(&_buf[_set_start + 2], uint16_t(_used - _set_start));
    _set_id = 0;
}

bool Encoder::write_template_if_room(unsigned variant, size_t reserve) noexcept
{
    const Template& t = template_of(variant);
    const size_t need = t.template_bytes + (_set_id == kTemplateSetId ? 0 : kSetHeaderBytes) + reserve;
    if (need > room())
        return false;
    if (_set_id != kTemplateSetId) {
        close_set();
        _set_start = _used;
        _set_id = kTemplateSetId;
        put16(&_buf[_used], kTemplateSetId);
        _used += kSetHeaderBytes;
    }
    _used += write_template(t, &_buf[_used]);
    _pending &= ~(1u << variant);
    return true;
}

void Encoder::write_pending_templates(uint64_t now_ns, unsigned first, size_t reserve) noexcept
{
    // The template the caller's record needs goes first; the others only where they leave room for
    // that record, and the rest wait for the next message.
    if (_pending == 0)
        return;
    if (_pending & (1u << first))
        write_template_if_room(first, reserve);
    for (unsigned v = 0; v < kVariants && _pending != 0; ++v)
        if (_pending & (1u << v))
            write_template_if_room(v, reserve);
    if (_pending == 0) {
        _templates_sent_ns = now_ns;
        _messages_since_templates = 0;
    }
}

void Encoder::add(const events::Event& e, uint64_t now_ns, MessageSink& sink) noexcept
{
    const unsigned v = variant_of(e);
    const unsigned bit = 1u << v;
    const Template& t = template_of(v);
    // What the record itself needs if it starts a data set: kept free while templates are written.
    const size_t reserve = kSetHeaderBytes + t.record_bytes;
    if ((_known & bit) == 0) {
        _known |= bit;
        _pending |= bit;
    }
    if (!_open)
        begin(now_ns, v, reserve);
    else if (_pending & bit)
        write_pending_templates(now_ns, v, reserve);
    const size_t need = t.record_bytes + (_set_id == t.id ? 0 : kSetHeaderBytes);
    if ((_pending & bit) != 0 || need > room()) {
        // A fresh message has room for this template and this record (min_message_bytes()).
        finish(now_ns, sink);
        begin(now_ns, v, reserve);
    }
    if (_set_id != t.id) {
        close_set();
        _set_start = _used;
        _set_id = t.id;
        put16(&_buf[_used], t.id);
        _used += kSetHeaderBytes;
    }
    _used += write_record(t, e, &_buf[_used]);
    ++_records;
}

void Encoder::flush(uint64_t now_ns, MessageSink& sink) noexcept
{
    finish(now_ns, sink);
}

void Encoder::finish(uint64_t now_ns, MessageSink& sink) noexcept
{
    if (!_open)
        return;
    _open = false;
    close_set();
    if (_used == kMessageHeaderBytes)
        return; // nothing in it: not a message
    put16(&_buf[0], kVersion);
    put16(&_buf[2], uint16_t(_used));
    put32(&_buf[4], uint32_t(now_ns / kNsPerSecond));
    put32(&_buf[8], _sequence);
    put32(&_buf[12], _config.domain_id);
    _sequence += _records;
    ++_messages_since_templates;
    sink.on_message(_buf.data(), _used, _records);
}

} // namespace flowcop::ipfix
