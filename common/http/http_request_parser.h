#pragma once
// Pure parsing of HTTP/1.x request heads for ddp::http::Server: the request line, the header
// fields and the body framing (Content-Length only). Every rejection carries the HTTP status to
// answer and a reason for the JSON error body.
// Thread model: pure functions, no shared state.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http/http_types.h"

namespace ddp::http {

struct HeadParse {
  enum class Kind { kNeedMore, kDone, kError };
  Kind kind = Kind::kNeedMore;
  size_t headBytes = 0;  // kDone: bytes of the head, blank line included
  Request request;       // kDone: method, target, path, query, headers, versionMinor
  int status = 0;        // kError: the status to answer (400, 431, 505)
  std::string reason;    // kError
};

// Looks for a complete request head at the start of `buffer` (lines end in CRLF or a bare LF).
// `scanFrom` (in/out, start at 0 for each new request) remembers how far earlier calls searched
// for the blank line, so a head arriving byte by byte is scanned once. A head longer than
// `maxHeaderBytes` is a 431 (also while incomplete).
HeadParse parseRequestHead(std::string_view buffer, size_t* scanFrom, size_t maxHeaderBytes);

struct BodyFraming {
  uint64_t contentLength = 0;
  bool keepAlive = true;        // HTTP/1.1 without "Connection: close"; HTTP/1.0 never
  bool expectContinue = false;  // "Expect: 100-continue" with a body to come
  int status = 0;               // non-zero: reject the request with this status (400, 411)...
  std::string reason;           // ...and this reason
};

// The framing of the body announced by a parsed head: Transfer-Encoding is refused (chunked:
// 411, anything else: 400), Content-Length must be a decimal without sign that fits uint64 (400
// otherwise; repeated headers must agree).
BodyFraming bodyFraming(const Request& head);

// Parses a decimal uint64 with no sign, spaces or overflow.
bool parseDecimalU64(std::string_view text, uint64_t* out);

}  // namespace ddp::http
