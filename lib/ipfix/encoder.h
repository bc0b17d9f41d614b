// SPDX-License-Identifier: BSD-3-Clause
// One observation domain's IPFIX message stream (RFC 7011): flow records in, finished messages out.
//
// Messages: a 16-octet header (version 10, length, export time in seconds, sequence number,
// observation domain id), then sets: a template set (id 2) when templates are due, and one data set
// per run of records sharing a template. No message exceeds max_message_bytes (the path MTU less the
// IP and UDP headers, RFC 7011 10.3.3); a record that does not fit finishes the message first.
// Sequence number: data records sent in this domain before the message, modulo 2^32; template
// records do not count (RFC 7011 3.1). Templates (UDP rules, RFC 7011 10.3.6): a template goes out
// before the first record that uses it, and every template used so far goes out again once
// template_refresh_ns has passed or template_refresh_messages messages were sent since the last
// time, whichever comes first; templates are never withdrawn (withdrawals are not sent over UDP).
//
// Ownership and threading: an Encoder is a plain value owned by one thread (the exporter's); it
// allocates only at construction. A finished message is handed to the sink and is valid only during
// that call. Times are Unix-epoch ns from the caller (the wall clock), never read here.
// Degraded behaviour: none at run time: every Event can be encoded (template.h); the constructor
// clamps max_message_bytes into [min_message_bytes(), 65535].
#pragma once

#include <ipfix/defaults.h>
#include <ipfix/template.h>

#include <events/event.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowcop::ipfix {

class MessageSink {
public:
    // `records`: data records in the message (0 for a message that carries templates only).
    virtual void on_message(const uint8_t* data, size_t len, unsigned records) noexcept = 0;

protected:
    ~MessageSink() = default;
};

struct EncoderConfig {
    uint32_t domain_id = 0;
    uint16_t max_message_bytes = kDefaultPathMtu - kIpv4UdpHeaderBytes; // 1472
    uint64_t template_refresh_ns = uint64_t(kDefaultTemplateRefreshS) * 1'000'000'000;
    uint32_t template_refresh_messages = kDefaultTemplateRefreshMessages;
};

// The smallest message that holds a header, the largest template and the largest record, each in
// its own set: what max_message_bytes must allow.
size_t min_message_bytes() noexcept;

class Encoder {
public:
    explicit Encoder(const EncoderConfig& config);

    // Appends `e` as a data record, finishing the open message first when it is full or when a
    // template must go out in a new one.
    void add(const events::Event& e, uint64_t now_ns, MessageSink& sink) noexcept;
    // Finishes the open message, if it holds anything.
    void flush(uint64_t now_ns, MessageSink& sink) noexcept;

    bool open() const noexcept { return _open; }
    // When the open message got its first set (valid while open()).
    uint64_t opened_ns() const noexcept { return _opened_ns; }
    uint32_t sequence() const noexcept { return _sequence; }
    uint32_t domain_id() const noexcept { return _config.domain_id; }
    size_t max_message_bytes() const noexcept { return _config.max_message_bytes; }

private:
    // Opens a message; refreshes templates when due and writes the pending ones (write_pending_templates).
    void begin(uint64_t now_ns, unsigned first, size_t reserve) noexcept;
    void finish(uint64_t now_ns, MessageSink& sink) noexcept;
    void close_set() noexcept;
    // Writes pending templates into the open message, variant `first` before the others, each only if
    // `reserve` octets stay free after it (room for the record that needs them).
    void write_pending_templates(uint64_t now_ns, unsigned first, size_t reserve) noexcept;
    bool write_template_if_room(unsigned variant, size_t reserve) noexcept;
    size_t room() const noexcept { return _config.max_message_bytes - _used; }

    EncoderConfig _config;
    std::vector<uint8_t> _buf;
    size_t _used = 0;
    size_t _set_start = 0; // offset of the open set's header
    uint16_t _set_id = 0;  // 0 = no open set
    unsigned _records = 0; // data records in the open message
    bool _open = false;
    uint64_t _opened_ns = 0;
    uint32_t _sequence = 0;
    uint32_t _known = 0;   // variants used so far (bit per variant)
    uint32_t _pending = 0; // variants whose template must go out before their next record
    uint64_t _templates_sent_ns = 0;
    uint32_t _messages_since_templates = 0;
};

} // namespace flowcop::ipfix
