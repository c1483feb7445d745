#pragma once
// The DDPJob YAML parser's internals, shared by the files that parse the sections of a document
// (job_spec_yaml.cc, job_spec_kubernetes_yaml.cc). Not an API: parseJobSpec() (job_spec.h) is.
// Thread model: a Parser is used by one thread, once.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp::job_spec_detail {

template <typename E>
using EnumTable = std::vector<std::pair<std::string, E>>;

inline std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  return "'" + n.Scalar() + "'";
}

enum class NumberText { kFinite, kNonFinite, kNotANumber };

// Reads a scalar as a double. Non-finite: YAML's .inf / -.inf / .nan, the spellings other tools
// write (inf, NaN, Infinity: JSON from Python) and decimals beyond the range of a double (1e400).
inline NumberText readNumber(const YAML::Node& v, double* out) {
  if (!v.IsScalar()) return NumberText::kNotANumber;
  double x = 0;
  if (YAML::convert<double>::decode(v, x)) {
    *out = x;
    return std::isfinite(x) ? NumberText::kFinite : NumberText::kNonFinite;
  }
  const std::string& s = v.Scalar();
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return NumberText::kNotANumber;
  char* end = nullptr;
  x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return NumberText::kNotANumber;
  // What YAML does not read as a number but strtod does: non-finite spellings, 1e400 (HUGE_VAL),
  // and hex floats (not a YAML number: refused as such).
  return std::isfinite(x) ? NumberText::kNotANumber : NumberText::kNonFinite;
}

// Walks the document, filling a JobSpec and collecting errors with paths and locations.

class Parser {
 public:
  std::vector<SpecError> errors;
  std::map<std::string, std::pair<int, int>> marks;  // path -> (line, column), 1-based

  void fail(const YAML::Node& at, const std::string& path, const std::string& message) {
    YAML::Mark m = at.Mark();
    errors.push_back({path, message, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0});
  }

  // Checks `n` is a mapping whose keys are fields of `path` in the field table
  // (job_spec_fields.h), recording where each value is.
  bool mapping(const YAML::Node& n, const std::string& path) {
    if (!n.IsMap()) {
      fail(n, path, "expected a mapping, got " + describe(n));
      return false;
    }
    const std::vector<std::string> allowed = jobSpecFieldKeys(path);
    std::vector<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      const std::string childPath = join(path, key);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        fail(it->first, childPath, "duplicate field");
      }
      seen.push_back(key);
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(it->first, childPath, "unknown field (allowed here: " + list + ")");
        continue;
      }
      YAML::Mark m = it->second.Mark();
      marks[childPath] = {m.line + 1, m.column + 1};
    }
    return true;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  bool required(const YAML::Node& map, const std::string& path, const char* key) {
    if (map[key]) return true;
    fail(map, join(path, key), "required field is missing");
    return false;
  }

  bool readInt(const YAML::Node& v, const std::string& path, int64_t* out, int64_t lo, int64_t hi) {
    int64_t x = 0;
    if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x)) {
      double d = 0;
      if (readNumber(v, &d) == NumberText::kNonFinite) {
        fail(v, path, "must be a finite number, got " + describe(v) + " (expected an integer)");
      } else {
        fail(v, path, "expected an integer, got " + describe(v));
      }
      return false;
    }
    if (x < lo || x > hi) {
      fail(v, path, "integer out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return false;
    }
    *out = x;
    return true;
  }

  // Optional fields: absent leaves *out unchanged.
  void getInt(const YAML::Node& m, const std::string& path, const char* key, int64_t* out) {
    if (m[key]) readInt(m[key], join(path, key), out, std::numeric_limits<int64_t>::min(),
                        std::numeric_limits<int64_t>::max());
  }
  void getInt(const YAML::Node& m, const std::string& path, const char* key, int* out) {
    int64_t x = *out;
    if (m[key] && readInt(m[key], join(path, key), &x, std::numeric_limits<int>::min(),
                          std::numeric_limits<int>::max())) {
      *out = static_cast<int>(x);
    }
  }
  void getSeed(const YAML::Node& m, const std::string& path, const char* key, uint64_t* out) {
    int64_t x = 0;
    if (m[key] && readInt(m[key], join(path, key), &x, 0, std::numeric_limits<int64_t>::max())) {
      *out = static_cast<uint64_t>(x);
    }
  }
  bool readDouble(const YAML::Node& v, const std::string& path, double* out) {
    double x = 0;
    switch (readNumber(v, &x)) {
      case NumberText::kFinite:
        *out = x;
        return true;
      case NumberText::kNonFinite:
        fail(v, path, "must be a finite number, got " + describe(v));
        return false;
      case NumberText::kNotANumber:
        break;
    }
    fail(v, path, "expected a number, got " + describe(v));
    return false;
  }
  void getDouble(const YAML::Node& m, const std::string& path, const char* key, double* out) {
    if (m[key]) readDouble(m[key], join(path, key), out);
  }
  void getBool(const YAML::Node& m, const std::string& path, const char* key, bool* out) {
    if (!m[key]) return;
    bool x = false;
    if (!m[key].IsScalar() || !YAML::convert<bool>::decode(m[key], x)) {
      fail(m[key], join(path, key), "expected a boolean (true/false), got " + describe(m[key]));
      return;
    }
    *out = x;
  }
  void getString(const YAML::Node& m, const std::string& path, const char* key, std::string* out) {
    if (!m[key]) return;
    if (!m[key].IsScalar()) {
      fail(m[key], join(path, key), "expected a string, got " + describe(m[key]));
      return;
    }
    *out = m[key].Scalar();
  }
  // A mapping of scalars (labels, nodeSelector, resource quantities); an error names the entry
  // as path[key].
  void getStringMap(const YAML::Node& m, const std::string& path, const char* key,
                    std::map<std::string, std::string>* out) {
    if (!m[key]) return;
    const YAML::Node& v = m[key];
    const std::string at = join(path, key);
    if (!v.IsMap()) {
      fail(v, at, "expected a mapping of strings, got " + describe(v));
      return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (!it->second.IsScalar()) {
        fail(it->second, at + "[" + k + "]", "expected a string, got " + describe(it->second));
        continue;
      }
      (*out)[k] = it->second.Scalar();
    }
  }
  template <typename E>
  void getEnum(const YAML::Node& m, const std::string& path, const char* key, const EnumTable<E>& table,
               E* out) {
    if (!m[key]) return;
    std::string s;
    if (!m[key].IsScalar()) {
      fail(m[key], join(path, key), "expected a string, got " + describe(m[key]));
      return;
    }
    s = m[key].Scalar();
    for (const auto& [name, value] : table) {
      if (s == name) {
        *out = value;
        return;
      }
    }
    std::string list;
    for (const auto& e : table) list += (list.empty() ? "" : ", ") + e.first;
    fail(m[key], join(path, key), "must be one of " + list + " (got '" + s + "')");
  }
  void getIntList(const YAML::Node& m, const std::string& path, const char* key,
                  std::vector<int64_t>* out) {
    if (!m[key]) return;
    const YAML::Node& v = m[key];
    if (!v.IsSequence()) {
      fail(v, join(path, key), "expected a sequence of integers, got " + describe(v));
      return;
    }
    std::vector<int64_t> result;
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t x = 0;
      ok = readInt(v[i], join(path, key) + "[" + std::to_string(i) + "]", &x,
                   std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()) && ok;
      result.push_back(x);
    }
    if (ok) *out = std::move(result);
  }
  // A field that is only meaningful under some condition.
  void onlyWhen(const YAML::Node& m, const std::string& path, const char* key, bool allowed,
                const std::string& condition) {
    if (m[key] && !allowed) fail(m[key], join(path, key), "only valid when " + condition);
  }

  void parse(const YAML::Node& doc, JobSpec* spec);

 private:
  void parseMetadata(const YAML::Node& n, JobSpec* spec);
  void parseSpec(const YAML::Node& n, JobSpec* spec);
  void parseModel(const YAML::Node& n, const std::string& path, ModelSpec* model);
  void parseData(const YAML::Node& n, const std::string& path, DataSpec* data);
  void parseOptimizer(const YAML::Node& n, const std::string& path, OptimizerSpec* o);
  void parseCommHook(const YAML::Node& n, const std::string& path, CommHookSpec* h);
  void parseTimeouts(const YAML::Node& n, const std::string& path, TimeoutsSpec* t);
  // job_spec_kubernetes_yaml.cc
  void parseKubernetes(const YAML::Node& n, const std::string& path, KubernetesSpec* k);
  void parseTolerations(const YAML::Node& n, const std::string& path, std::vector<TolerationSpec>* out);
  void parseRunPolicy(const YAML::Node& n, const std::string& path, RunPolicySpec* r);
};

}  // namespace ddp::job_spec_detail
