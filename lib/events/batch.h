// SPDX-License-Identifier: BSD-3-Clause
// Private: the writer's output batch. Lines are formatted straight into one large buffer; a side table
// remembers where each line ends and which producer it came from, so that after a failed or short
// write every event is credited exactly once, to written or to dropped_write, and to its own lcore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <events/event.h>

namespace flowcop::events::detail {

class Batch {
public:
    struct Line {
        uint32_t end; // offset one past this line's '\n'
        uint16_t producer;
    };

    // Allocates `bytes` of text and room for bytes / min_line_bytes lines.
    explicit Batch(size_t bytes);

    // Formats `e` at the end of the batch. @return false if it does not fit (flush, then retry; if it
    // does not fit an empty batch either, the event can never be written).
    bool add(const Event& e, uint16_t producer) noexcept;

    bool empty() const noexcept { return _n_lines == 0; }
    const char* data() const noexcept { return _text.get(); }
    size_t size() const noexcept { return _used; }
    size_t lines() const noexcept { return _n_lines; }
    const Line& line(size_t i) const noexcept { return _lines[i]; }
    void clear() noexcept { _used = 0, _n_lines = 0; }

    // The shortest possible line is 224 bytes (tested), so the line table never runs out before the text.
    static constexpr size_t kMinLineBytes = 128;

private:
    std::unique_ptr<char[]> _text;
    std::unique_ptr<Line[]> _lines;
    size_t _capacity;
    size_t _max_lines;
    size_t _used = 0;
    size_t _n_lines = 0;
};

} // namespace flowcop::events::detail
