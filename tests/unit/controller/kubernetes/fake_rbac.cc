// FakeRbac (fake_rbac.h): rule matching and the manifest reader.
#include "tests/unit/controller/kubernetes/fake_rbac.h"

#include <algorithm>
#include <map>

#include <yaml-cpp/yaml.h>

namespace ddp::controller::kube::testing {
namespace {

using nlohmann::json;

bool names(const std::vector<std::string>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& x) { return x == "*" || x == value; });
}

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence()) {
    for (const auto& x : n) out.push_back(x.as<std::string>());
  }
  return out;
}

std::vector<PolicyRule> rulesOf(const YAML::Node& role) {
  std::vector<PolicyRule> out;
  for (const auto& r : role["rules"]) {
    out.push_back({strings(r["apiGroups"]), strings(r["resources"]), strings(r["verbs"])});
  }
  return out;
}

// The plural resource and API group of an owner reference (the kinds the controller owns by).
std::pair<std::string, std::string> ownerResource(const json& ref) {
  const std::string apiVersion = ref.value("apiVersion", "");
  const size_t slash = apiVersion.find('/');
  const std::string group = slash == std::string::npos ? "" : apiVersion.substr(0, slash);
  std::string plural = ref.value("kind", "");
  std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return std::tolower(c); });
  return {group, plural + "s"};
}

}  // namespace

bool FakeRbac::allows(const std::string& verb, const std::string& group, const std::string& resource,
                      const std::string& ns) const {
  for (const RbacGrant& g : grants_) {
    if (!g.nameSpace.empty() && g.nameSpace != ns) continue;
    for (const PolicyRule& r : g.rules) {
      if (names(r.verbs, verb) && names(r.apiGroups, group) && names(r.resources, resource)) return true;
    }
  }
  return false;
}

std::string FakeRbac::refusal(const std::string& verb, const std::string& group, const std::string& resource,
                              const std::string& ns, const std::string& name) const {
  if (allows(verb, group, resource, ns)) return "";
  const size_t slash = resource.find('/');
  const std::string base = resource.substr(0, slash);
  std::string m = base + (name.empty() ? "" : " \"" + name + "\"") + " is forbidden: User \"" + user_ +
                  "\" cannot " + verb + " resource \"" + base + "\"";
  if (slash != std::string::npos) m += " with subresource \"" + resource.substr(slash + 1) + "\"";
  m += " in API group \"" + group + "\"";
  return m + (ns.empty() ? " at the cluster scope" : " in the namespace \"" + ns + "\"");
}

std::string FakeRbac::ownerRefusal(const json& object, const std::string& resource, const std::string& ns) const {
  const json& meta = object.value("metadata", json::object());
  for (const json& ref : meta.value("ownerReferences", json::array())) {
    if (!ref.value("blockOwnerDeletion", false)) continue;
    const auto [group, plural] = ownerResource(ref);
    if (allows("update", group, plural + "/finalizers", ns)) continue;
    return resource + " \"" + meta.value("name", "") + "\" is forbidden: cannot set blockOwnerDeletion if an " +
           "ownerReference refers to a resource you can't set finalizers on: User \"" + user_ + "\" cannot update " +
           "resource \"" + plural + "/finalizers\" in API group \"" + group + "\" in the namespace \"" + ns + "\"";
  }
  return "";
}

std::string FakeRbac::requestRefusal(const Request& r, const std::string& body) const {
  std::string verb = r.method == "POST" ? "create" : r.method == "PUT" ? "update"
                     : r.method == "PATCH" ? "patch" : r.method == "DELETE" ? "delete" : "get";
  if (verb == "get" && r.name.empty()) verb = r.watch ? "watch" : "list";
  const size_t slash = r.apiVersion.find('/');
  const std::string group = slash == std::string::npos ? "" : r.apiVersion.substr(0, slash);
  std::string why = refusal(verb, group, r.sub.empty() ? r.resource : r.resource + "/" + r.sub, r.ns, r.name);
  if (why.empty() && (verb == "create" || verb == "update" || verb == "patch")) {
    why = ownerRefusal(json::parse(body, nullptr, false), r.resource, r.ns);
  }
  return why;
}

void FakeRbac::revoke(const std::string& verb, const std::string& group, const std::string& resource) {
  for (RbacGrant& g : grants_) {
    for (PolicyRule& r : g.rules) {
      if (!names(r.apiGroups, group) || std::find(r.resources.begin(), r.resources.end(), resource) == r.resources.end()) {
        continue;
      }
      std::erase(r.verbs, verb);
    }
  }
}

Result<FakeRbac> FakeRbac::fromManifest(const std::string& yaml, const std::string& saNamespace,
                                        const std::string& saName) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    return invalidArgument(std::string("the manifest is not YAML: ") + e.what());
  }
  std::map<std::string, YAML::Node> roles;  // "Role ns/name", "ClusterRole name"
  for (const YAML::Node& d : docs) {
    if (!d.IsMap() || !d["kind"]) continue;
    const std::string kind = d["kind"].as<std::string>();
    const YAML::Node m = d["metadata"];
    if (kind == "Role") roles["Role " + m["namespace"].as<std::string>("") + "/" + m["name"].as<std::string>()] = d;
    if (kind == "ClusterRole") roles["ClusterRole " + m["name"].as<std::string>()] = d;
  }
  FakeRbac rbac("system:serviceaccount:" + saNamespace + ":" + saName);
  for (const YAML::Node& d : docs) {
    if (!d.IsMap() || !d["kind"]) continue;
    const std::string kind = d["kind"].as<std::string>();
    if (kind != "RoleBinding" && kind != "ClusterRoleBinding") continue;
    const std::string where = kind + " " + d["metadata"]["name"].as<std::string>("?");
    bool bound = false;
    for (const auto& s : d["subjects"]) {
      bound |= s["kind"].as<std::string>("") == "ServiceAccount" && s["name"].as<std::string>("") == saName &&
               s["namespace"].as<std::string>("") == saNamespace;
    }
    if (!bound) continue;
    const std::string ns = kind == "RoleBinding" ? d["metadata"]["namespace"].as<std::string>("") : "";
    const YAML::Node ref = d["roleRef"];
    if (!ref || !ref["kind"] || !ref["name"]) return invalidArgument(where + ": no roleRef kind and name");
    const std::string key = ref["kind"].as<std::string>() == "Role"
                                ? "Role " + ns + "/" + ref["name"].as<std::string>()
                                : "ClusterRole " + ref["name"].as<std::string>();
    auto role = roles.find(key);
    if (role == roles.end()) return invalidArgument(where + ": refers to " + key + ", which the manifest lacks");
    rbac.grant({ns, rulesOf(role->second)});
  }
  return rbac;
}

}  // namespace ddp::controller::kube::testing
