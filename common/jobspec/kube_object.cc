// YAML subtrees as JSON and back (Note [Carried Kubernetes objects]).
#include "common/jobspec/kube_object.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace ddp {
namespace {

using nlohmann::json;

// A plain scalar as YAML 1.2's core schema types it.
json plainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kDecimal("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, kInteger)) {
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno != ERANGE) return static_cast<int64_t>(v);
  }
  if (std::regex_match(s, kDecimal)) {
    const double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
}

}  // namespace

Result<json> yamlToJson(const YAML::Node& n, const std::string& path) {
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      // yaml-cpp tags a plain scalar "?" and a quoted one "!".
      return n.Tag() == "?" ? plainScalar(n.Scalar()) : json(n.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (size_t i = 0; i < n.size(); ++i) {
        DDP_ASSIGN_OR_RETURN(json item, yamlToJson(n[i], path + "[" + std::to_string(i) + "]"));
        out.push_back(std::move(item));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar()) return invalidArgument(path + ": a mapping key must be a string");
        const std::string key = it->first.Scalar();
        if (out.contains(key)) return invalidArgument(path + "." + key + ": duplicate field");
        DDP_ASSIGN_OR_RETURN(json value, yamlToJson(it->second, path + "." + key));
        out[key] = std::move(value);
      }
      return out;
    }
  }
  return json(nullptr);
}

void emitJson(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key << YAML::DoubleQuoted << key << YAML::Value;
        emitJson(out, value);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const json& item : v) emitJson(out, item);
      out << YAML::EndSeq;
      return;
    case json::value_t::string: out << YAML::DoubleQuoted << v.get<std::string>(); return;
    case json::value_t::boolean: out << v.get<bool>(); return;
    case json::value_t::number_integer: out << v.get<int64_t>(); return;
    case json::value_t::number_unsigned: out << v.get<uint64_t>(); return;
    case json::value_t::number_float: out << v.dump(); return;  // "1.0": plain, read back as a decimal
    default: out << YAML::Null; return;
  }
}

}  // namespace ddp
