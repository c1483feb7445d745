#pragma once
// JsonLine: builds one flat JSON object for benchmark output (one object per line, the
// contract of every bench_* program). Keys keep insertion order; numbers print with enough
// digits to round-trip ratios; strings are escaped.
// Thread model: a plain value; print() writes one line with one fwrite (whole lines stay intact).

#include <cstdint>
#include <cstdio>
#include <string>

namespace ddp::bench {

class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, int64_t value);
  JsonLine& add(const std::string& key, uint64_t value) { return add(key, static_cast<int64_t>(value)); }
  JsonLine& add(const std::string& key, int value) { return add(key, static_cast<int64_t>(value)); }
  JsonLine& add(const std::string& key, bool value);

  std::string str() const { return "{" + body_ + "}"; }
  // Writes str() and a newline to `out` and flushes.
  void print(FILE* out = stdout) const;

 private:
  void key(const std::string& k);
  std::string body_;
};

// JSON string escaping (quotes included).
std::string jsonQuote(const std::string& s);

}  // namespace ddp::bench
