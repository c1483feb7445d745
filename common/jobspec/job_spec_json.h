#pragma once
// The JSON form of a DDPJob document, read by the YAML parser (parseJobSpec).
// Thread model: pure functions.
//
// Note [JSON job documents]
// JSON is YAML 1.2 and yaml-cpp parses a JSON DDPJob as it is (tabs, minified or indented,
// CRLF, a BOM, escapes), with the line and column of every value, so parseJobSpec() takes both
// forms and there is no separate JSON parser. One construct differs: JSON writes a character
// outside the Basic Multilingual Plane as a UTF-16 surrogate pair of escapes ("\ud83d\ude80",
// as Python's json.dumps does by default), which YAML forbids (yaml-cpp: "invalid unicode").
// When a document is JSON, rewriteJsonSurrogatePairs() turns each such pair into YAML's 32-bit
// escape ("\U0001F680") before parsing, and originalColumn() maps a column reported on the
// rewritten text back to the document the user wrote.

#include <string>
#include <string_view>
#include <vector>

namespace ddp {

// One rewrite on a line (1-based): columns at or after `column` in the rewritten text lie
// `delta` columns further right in the original.
struct JsonColumnShift {
  int line = 0;
  int column = 0;
  int delta = 0;
};

// `text` with every surrogate-pair escape inside a JSON string rewritten, when `text` is a JSON
// document that has any; otherwise `text` unchanged and no shifts. Appends one shift per rewrite.
std::string rewriteJsonSurrogatePairs(std::string_view text, std::vector<JsonColumnShift>* shifts);

// The column (1-based) in the original text of `column` on `line` of the rewritten text.
int originalColumn(const std::vector<JsonColumnShift>& shifts, int line, int column);

}  // namespace ddp
