// SPDX-License-Identifier: BSD-3-Clause
// A strict little JSON (RFC 8259) recogniser for the tests: checks syntax and returns the top-level
// object's keys in order, so a test can check both "it parses" and "it has exactly these fields"
// without a JSON library or a python subprocess.
#pragma once

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flowcop::events::test {

class JsonCheck {
public:
    // @return the top-level keys if `text` is exactly one JSON object (optionally followed by one '\n').
    static std::optional<std::vector<std::string>> object_keys(std::string_view text)
    {
        if (!text.empty() && text.back() == '\n')
            text.remove_suffix(1);
        JsonCheck j(text);
        std::vector<std::string> keys;
        if (!j.object(&keys))
            return std::nullopt;
        j.ws();
        if (j._i != text.size())
            return std::nullopt;
        return keys;
    }

private:
    explicit JsonCheck(std::string_view s) : _s(s) {}
    bool eat(char c)
    {
        ws();
        if (_i < _s.size() && _s[_i] == c)
            return ++_i, true;
        return false;
    }
    void ws()
    {
        while (_i < _s.size() && (_s[_i] == ' ' || _s[_i] == '\t' || _s[_i] == '\r' || _s[_i] == '\n'))
            ++_i;
    }
    bool value()
    {
        ws();
        if (_i >= _s.size())
            return false;
        const char c = _s[_i];
        if (c == '{')
            return object(nullptr);
        if (c == '[')
            return array();
        if (c == '"')
            return string(nullptr);
        if (c == '-' || std::isdigit(static_cast<unsigned char>(c)))
            return number();
        for (std::string_view w : {"true", "false", "null"})
            if (_s.substr(_i, w.size()) == w)
                return _i += w.size(), true;
        return false;
    }
    bool object(std::vector<std::string>* keys)
    {
        if (!eat('{'))
            return false;
        if (eat('}'))
            return true;
        do {
            ws();
            std::string k;
            if (!string(&k) || !eat(':') || !value())
                return false;
            if (keys)
                keys->push_back(k);
        } while (eat(','));
        return eat('}');
    }
    bool array()
    {
        if (!eat('['))
            return false;
        if (eat(']'))
            return true;
        do
            if (!value())
                return false;
        while (eat(','));
        return eat(']');
    }
    bool string(std::string* out)
    {
        if (_i >= _s.size() || _s[_i] != '"')
            return false;
        for (++_i; _i < _s.size(); ++_i) {
            const auto c = static_cast<unsigned char>(_s[_i]);
            if (c == '"')
                return ++_i, true;
            if (c < 0x20)
                return false;
            if (c == '\\') {
                if (++_i >= _s.size())
                    return false;
                const char e = _s[_i];
                if (e == 'u') {
                    for (int k = 0; k < 4; ++k)
                        if (++_i >= _s.size() || !std::isxdigit(static_cast<unsigned char>(_s[_i])))
                            return false;
                } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
                    return false;
                }
            }
            if (out)
                out->push_back(static_cast<char>(c));
        }
        return false;
    }
    bool number()
    {
        const size_t start = _i;
        if (_s[_i] == '-')
            ++_i;
        if (_i >= _s.size() || !std::isdigit(static_cast<unsigned char>(_s[_i])))
            return false;
        if (_s[_i] == '0' && _i + 1 < _s.size() && std::isdigit(static_cast<unsigned char>(_s[_i + 1])))
            return false;
        while (_i < _s.size() && std::isdigit(static_cast<unsigned char>(_s[_i])))
            ++_i;
        if (_i < _s.size() && _s[_i] == '.') {
            if (++_i >= _s.size() || !std::isdigit(static_cast<unsigned char>(_s[_i])))
                return false;
            while (_i < _s.size() && std::isdigit(static_cast<unsigned char>(_s[_i])))
                ++_i;
        }
        return _i > start;
    }

    std::string_view _s;
    size_t _i = 0;
};

} // namespace flowcop::events::test
