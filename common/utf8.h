#pragma once
// UTF-8 well-formedness (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
// Every text a client sends is checked at the gate (the job document, the request path and
// query) so that an ill-formed byte gets a 400 naming its position instead of reaching a JSON
// writer that throws on it (Note [Invalid UTF-8] in utf8.cc).
// Thread model: pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace ddp {

// The offset of the first byte of the first ill-formed sequence in `s`, or npos when `s` is
// well-formed UTF-8.
size_t invalidUtf8Offset(std::string_view s);

// `s` with each ill-formed sequence replaced by U+FFFD (text that comes from elsewhere, such
// as a worker's log line, before it goes into a JSON document).
std::string toValidUtf8(std::string_view s);

// The longest prefix of `s` of at most `maxBytes` bytes that does not cut a character in two.
std::string_view utf8Prefix(std::string_view s, size_t maxBytes);

// The line and column (from 1; columns in bytes) of byte `offset` of `s`.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition textPosition(std::string_view s, size_t offset);

// "invalid UTF-8 at byte 12 (line 2, column 5)": where `offset` is in `s` (lines and columns
// count from 1, columns in bytes).
std::string describeInvalidUtf8(std::string_view s, size_t offset);

}  // namespace ddp
