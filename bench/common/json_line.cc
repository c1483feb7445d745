#include "bench/common/json_line.h"

#include <cmath>

namespace ddp::bench {

std::string jsonQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonLine::key(const std::string& k) {
  if (!body_.empty()) body_ += ",";
  body_ += jsonQuote(k) + ":";
}

JsonLine& JsonLine::add(const std::string& k, const std::string& value) {
  key(k);
  body_ += jsonQuote(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, double value) {
  key(k);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    body_ += buf;
  }
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

void JsonLine::print(FILE* out) const {
  const std::string line = str() + "\n";
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

}  // namespace ddp::bench
