#include "common/utf8.h"

// Note [Invalid UTF-8]
// nlohmann::json's dump() throws type_error 316 on a string that is not well-formed UTF-8; the
// HTTP handler pool turns an escaped exception into a 500, and on the ticker thread (a
// condition message written to the job table) it would end the controller. So: what a client
// sends is refused at the gate with its position (parseJobSpec for the job document,
// http::Router for the path and query), what comes from elsewhere (worker log lines in a
// condition message) is repaired with toValidUtf8, and truncations use utf8Prefix.
// Every JSON the controller's API and job table write is dumped with nlohmann's `replace` error
// handler besides, so that a byte that slips past all of this still cannot make a 500.

namespace ddp {
namespace {

// The length of the well-formed sequence at s[i], or 0 when it is ill-formed.
size_t sequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

size_t invalidUtf8Offset(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = sequenceLength(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string toValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = sequenceLength(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string_view utf8Prefix(std::string_view s, size_t maxBytes) {
  if (s.size() <= maxBytes) return s;
  size_t end = maxBytes;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

TextPosition textPosition(std::string_view s, size_t offset) {
  TextPosition at;
  for (size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return at;
}

std::string describeInvalidUtf8(std::string_view s, size_t offset) {
  const TextPosition at = textPosition(s, offset);
  return "invalid UTF-8 at byte " + std::to_string(offset) + " (line " + std::to_string(at.line) + ", column " +
         std::to_string(at.column) + ")";
}

}  // namespace ddp
