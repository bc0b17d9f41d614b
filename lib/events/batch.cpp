// SPDX-License-Identifier: BSD-3-Clause
#include "batch.h"

namespace flowcop::events::detail {

Batch::Batch(size_t bytes)
    : _text(new char[bytes]), _lines(new Line[bytes / kMinLineBytes + 1]), _capacity(bytes),
      _max_lines(bytes / kMinLineBytes + 1)
{}

bool Batch::add(const Event& e, uint16_t producer) noexcept
{
    if (_n_lines == _max_lines)
        return false;
    const size_t n = format_json_line(e, _text.get() + _used, _capacity - _used);
    if (n == 0)
        return false;
    _used += n;
    _lines[_n_lines++] = Line{static_cast<uint32_t>(_used), producer};
    return true;
}

} // namespace flowcop::events::detail
