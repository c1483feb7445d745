// JobSpec::toYaml(): every field written out along the field table (Note [Job spec field
// table]), so that parseJobSpec(toYaml()) == *this.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <variant>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"
#include "common/jobspec/kube_object.h"

namespace ddp {
namespace {

// Shortest decimal text that reads back as the same double.
std::string formatDouble(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.1f", v);  // 300.0 rather than 3e+02
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it visibly a number
  return s;
}

// The value of one field (not an object, not ignored).
void emitValue(YAML::Emitter& out, const SpecField& f, const SpecValue& v) {
  struct Visitor {
    YAML::Emitter& out;
    const SpecField& f;
    void operator()(std::monostate) const {}
    void operator()(bool b) const { out << b; }
    void operator()(int64_t x) const { out << x; }
    void operator()(double x) const { out << formatDouble(x); }
    void operator()(const std::string& s) const {
      if (f.quoted) out << YAML::DoubleQuoted;
      out << s;
    }
    void operator()(const std::vector<int64_t>& xs) const {
      out << YAML::Flow << YAML::BeginSeq;
      for (int64_t x : xs) out << x;
      out << YAML::EndSeq;
    }
    void operator()(const std::vector<double>& xs) const {
      out << YAML::Flow << YAML::BeginSeq;
      for (double x : xs) out << formatDouble(x);
      out << YAML::EndSeq;
    }
    void operator()(const std::vector<std::string>& xs) const {
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& x : xs) out << YAML::DoubleQuoted << x;
      out << YAML::EndSeq;
    }
    void operator()(const std::map<std::string, std::string>& m) const {
      out << YAML::BeginMap;
      for (const auto& [k, x] : m) out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << x;
      out << YAML::EndMap;
    }
  };
  std::visit(Visitor{out, f}, v);
}

// The mapping at `path` and every field under it that the spec holds (Note [Job spec field
// table]): a field whose condition does not hold, or an optional one that is not set, is left out.
void emitObject(YAML::Emitter& out, const std::string& path, const JobSpec& spec) {
  const size_t skip = path.empty() ? 0 : path.size() + 1;
  out << YAML::BeginMap;
  for (const SpecField* f : jobSpecChildren(path)) {
    const auto& when = f->emitWhen ? f->emitWhen : f->onlyWhen;
    if (f->type == SpecFieldType::kIgnored || (when && !when(spec))) continue;
    const std::string key(f->path.substr(skip));
    if (f->type == SpecFieldType::kObject) {
      out << YAML::Key << key << YAML::Value;
      emitObject(out, std::string(f->path), spec);
    } else if (f->type == SpecFieldType::kObjectList) {
      out << YAML::Key << key << YAML::Value;
      f->emitList(out, spec);
    } else if (f->get) {
      const SpecValue v = f->get(spec);
      if (std::holds_alternative<std::monostate>(v)) continue;
      out << YAML::Key << key << YAML::Value;
      if (f->type == SpecFieldType::kKubeObject || f->type == SpecFieldType::kKubeObjectList) {
        emitJson(out, nlohmann::json::parse(std::get<std::string>(v)));  // written by the parser
      } else {
        emitValue(out, *f, v);
      }
    }
  }
  out << YAML::EndMap;
}

}  // namespace

std::string JobSpec::toYaml() const {
  YAML::Emitter out;
  emitObject(out, "", *this);
  return std::string(out.c_str()) + "\n";
}

}  // namespace ddp
