#pragma once
// The DDPJob YAML parser's internals: the walk over the field table (job_spec_yaml.cc) and the
// readers of each kind of value, shared with the list hooks (job_spec_kubernetes_yaml.cc). Not
// an API: parseJobSpec() (job_spec.h) is.
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

// Walks the document along the field table, filling a JobSpec and collecting errors with paths
// and locations.

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
  bool readBool(const YAML::Node& v, const std::string& path, bool* out) {
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, *out)) {
      fail(v, path, "expected a boolean (true/false), got " + describe(v));
      return false;
    }
    return true;
  }
  bool readString(const YAML::Node& v, const std::string& path, std::string* out) {
    if (!v.IsScalar()) {
      fail(v, path, "expected a string, got " + describe(v));
      return false;
    }
    *out = v.Scalar();
    return true;
  }
  // A mapping of scalars (labels, nodeSelector, resource quantities); an error names the entry
  // as path[key].
  bool readStringMap(const YAML::Node& v, const std::string& path, std::map<std::string, std::string>* out) {
    if (!v.IsMap()) {
      fail(v, path, "expected a mapping of strings, got " + describe(v));
      return false;
    }
    bool ok = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (!it->second.IsScalar()) {
        fail(it->second, path + "[" + k + "]", "expected a string, got " + describe(it->second));
        ok = false;
        continue;
      }
      (*out)[k] = it->second.Scalar();
    }
    return ok;
  }
  bool readIntList(const YAML::Node& v, const std::string& path, std::vector<int64_t>* out) {
    if (!v.IsSequence()) {
      fail(v, path, "expected a sequence of integers, got " + describe(v));
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t x = 0;
      ok = readInt(v[i], path + "[" + std::to_string(i) + "]", &x, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max()) && ok;
      out->push_back(x);
    }
    return ok;
  }
  bool readStringList(const YAML::Node& v, const std::string& path, std::vector<std::string>* out) {
    if (!v.IsSequence()) {
      fail(v, path, "expected a sequence of strings, got " + describe(v));
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string s;
      ok = readString(v[i], path + "[" + std::to_string(i) + "]", &s) && ok;
      out->push_back(std::move(s));
    }
    return ok;
  }
  bool readNumberList(const YAML::Node& v, const std::string& path, size_t length, std::vector<double>* out) {
    if (!v.IsSequence() || (length > 0 && v.size() != length)) {
      const std::string count = length > 0 ? std::to_string(length) + " numbers" : "numbers";
      fail(v, path, "expected a sequence of " + count + ", got " + describe(v));
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) {
      double x = 0;
      ok = readDouble(v[i], path + "[" + std::to_string(i) + "]", &x) && ok;
      out->push_back(x);
    }
    return ok;
  }

  // A carried Kubernetes object (a mapping) or list of them, as its JSON text (Note [Carried
  // Kubernetes objects]).
  bool readKubeObject(const YAML::Node& v, const std::string& path, bool list, std::string* out);

  // The whole document, walking the field table (Note [Job spec field table]).
  void parse(const YAML::Node& doc, JobSpec* spec);

 private:
  // The mapping `n` at `path` and every field under it.
  void parseObject(const YAML::Node& n, const std::string& path, JobSpec* spec);
  // One present field's value.
  void parseField(const SpecField& f, const YAML::Node& v, JobSpec* spec);
  bool readEnumeration(const SpecField& f, const YAML::Node& v, std::string* out);
};

// spec.kubernetes.tolerations (job_spec_kubernetes_yaml.cc): the table's list hooks.
void parseTolerations(Parser& parser, const YAML::Node& n, JobSpec& spec);
void emitTolerations(YAML::Emitter& out, const JobSpec& spec);
// spec.model.stack (job_spec_stack_yaml.cc): the table's list hooks.
void parseLayerStack(Parser& parser, const YAML::Node& n, JobSpec& spec);
void emitLayerStack(YAML::Emitter& out, const JobSpec& spec);

}  // namespace ddp::job_spec_detail
