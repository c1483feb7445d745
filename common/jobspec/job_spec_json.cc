// Note [JSON job documents] (job_spec_json.h).
#include "common/jobspec/job_spec_json.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace ddp {
namespace {

// The value of the 4 hex digits at text[at], or -1.
int hex4(std::string_view text, size_t at) {
  if (at + 4 > text.size()) return -1;
  int v = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const char c = text[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The code point of a surrogate-pair escape "\uD8xx\uDCxx" at text[at] (at the backslash), or -1.
long surrogatePairAt(std::string_view text, size_t at) {
  const int high = hex4(text, at + 2);
  if (text.compare(at, 2, "\\u") != 0 || high < 0xD800 || high > 0xDBFF) return -1;
  if (text.compare(at + 6, 2, "\\u") != 0) return -1;
  const int low = hex4(text, at + 8);
  if (low < 0xDC00 || low > 0xDFFF) return -1;
  return 0x10000L + ((static_cast<long>(high) - 0xD800) << 10) + (low - 0xDC00);
}

}  // namespace

std::string rewriteJsonSurrogatePairs(std::string_view text, std::vector<JsonColumnShift>* shifts) {
  if (text.find("\\u") == std::string_view::npos || !nlohmann::json::accept(text)) {
    return std::string(text);
  }
  // In JSON a backslash occurs only inside a string, and every escape is two characters except
  // \uXXXX: walking escape by escape never mistakes a quote or a backslash.
  std::string out;
  out.reserve(text.size());
  int line = 1, column = 1;  // of the next character of `out`
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\\') {
      const long cp = surrogatePairAt(text, i);
      if (cp >= 0) {
        char buf[16];
        const int n = std::snprintf(buf, sizeof(buf), "\\U%08lX", cp);  // 10 characters for 12
        out.append(buf, static_cast<size_t>(n));
        column += n;
        shifts->push_back({line, column, 12 - n});
        i += 12;
        continue;
      }
      out.append(text.substr(i, 2));
      column += 2;
      i += 2;
      continue;
    }
    out.push_back(text[i]);
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    ++i;
  }
  return out;
}

int originalColumn(const std::vector<JsonColumnShift>& shifts, int line, int column) {
  int original = column;
  for (const JsonColumnShift& s : shifts) {
    if (s.line == line && s.column <= column) original += s.delta;
  }
  return original;
}

}  // namespace ddp
