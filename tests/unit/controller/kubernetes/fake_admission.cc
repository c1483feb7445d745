// The fake API server's admission rules (fake_admission.h): name formats and Pod Security.
#include "tests/unit/controller/kubernetes/fake_admission.h"

#include <algorithm>
#include <set>

namespace ddp::controller::kube::testing {
namespace {

using nlohmann::json;

bool lowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

bool dns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!lowerAlnum(c) && c != '-') return false;
  }
  return lowerAlnum(s.front()) && lowerAlnum(s.back());
}

bool dns1035Label(const std::string& s) { return dns1123Label(s) && s.front() >= 'a' && s.front() <= 'z'; }

bool dns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) return false;  // no length per part: apimachinery checks only the total
    for (char c : part) {
      if (!lowerAlnum(c) && c != '-') return false;
    }
    if (!lowerAlnum(part.front()) || !lowerAlnum(part.back())) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

bool labelValue(const std::string& s) {
  if (s.empty()) return true;
  if (s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

AdmissionRefusal invalid(const std::string& kind, const std::string& name, const std::string& field,
                         const std::string& value, const std::string& rule) {
  return {422, "Invalid", kind + " \"" + name + "\" is invalid: " + field + ": Invalid value: \"" + value + "\": " + rule};
}

std::optional<AdmissionRefusal> checkNames(const std::string& resource, const std::string& kind, const json& object) {
  const json& meta = object["metadata"];
  const std::string name = meta.value("name", "");
  if (resource == "services" && !dns1035Label(name)) {
    return invalid(kind, name, "metadata.name", name,
                   "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                   "alphabetic character, and end with an alphanumeric character (at most 63 characters)");
  }
  if (resource == "namespaces" ? !dns1123Label(name) : !dns1123Subdomain(name)) {
    return invalid(kind, name, "metadata.name", name,
                   "a lowercase RFC 1123 " + std::string(resource == "namespaces" ? "label" : "subdomain") +
                       " must consist of lower case alphanumeric characters, '-' or '.'");
  }
  const json labels = meta.value("labels", json::object());
  for (const auto& [k, v] : labels.items()) {
    if (!v.is_string() || !labelValue(v.get<std::string>())) {
      return invalid(kind, name, "metadata.labels", v.is_string() ? v.get<std::string>() : v.dump(),
                     "a valid label must be an empty string or consist of at most 63 alphanumeric characters, "
                     "'-', '_' or '.', and must start and end with an alphanumeric character");
    }
  }
  if (resource == "pods") {
    const json spec = object.value("spec", json::object());
    for (const char* field : {"hostname", "subdomain"}) {
      const std::string v = spec.value(field, "");
      if (!v.empty() && !dns1123Label(v)) {
        return invalid(kind, name, std::string("spec.") + field, v,
                       "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-' "
                       "(at most 63 characters)");
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<AdmissionRefusal> admit(const std::string& resource, const std::string& kind, const json& object,
                                      const json* nameSpace) {
  if (auto refused = checkNames(resource, kind, object)) return refused;
  if (resource != "pods" || nameSpace == nullptr) return std::nullopt;
  const json labels = (*nameSpace)["metadata"].value("labels", json::object());
  const std::string level = labels.value("pod-security.kubernetes.io/enforce", "privileged");
  const std::vector<std::string> violations = podSecurityViolations(object, level);
  if (violations.empty()) return std::nullopt;
  std::string message = "pods \"" + object["metadata"].value("name", "") + "\" is forbidden: violates PodSecurity \"" +
                        level + ":latest\": ";
  for (size_t i = 0; i < violations.size(); ++i) message += (i ? ", " : "") + violations[i];
  return AdmissionRefusal{403, "Forbidden", message};
}

}  // namespace ddp::controller::kube::testing
