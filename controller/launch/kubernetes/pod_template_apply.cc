#include "controller/launch/kubernetes/pod_template_apply.h"

#include <algorithm>
#include <string>

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// The carried object (Note [Carried Kubernetes objects]); null when absent.
json carried(const KubeObjectJson& text) { return text.empty() ? json(nullptr) : json::parse(text); }

// Adds each entry of `m` to the object parent[key] (created when missing), keeping what is there.
void addEntries(json& parent, const char* key, const std::map<std::string, std::string>& m) {
  if (m.empty()) return;
  json& at = parent[key];
  if (!at.is_object()) at = json::object();
  for (const auto& [k, v] : m) {
    if (!at.contains(k)) at[k] = v;
  }
}

// Appends the items of the carried list `text` to the array parent[key] (created when missing).
void appendItems(json& parent, const char* key, const KubeObjectJson& text) {
  const json items = carried(text);
  if (!items.is_array() || items.empty()) return;
  json& at = parent[key];
  if (!at.is_array()) at = json::array();
  for (const json& item : items) at.push_back(item);
}

// Merges the carried object `text` over parent[key].
void mergeInto(json& parent, const char* key, const KubeObjectJson& text) {
  if (text.empty()) return;
  mergeOver(parent[key], carried(text));
}

// Sets spec[key] to the carried object or the non-empty string, unless the controller set it.
void setIfAbsent(json& spec, const char* key, const json& value) {
  if (value.is_null() || (value.is_string() && value.get<std::string>().empty()) || spec.contains(key)) return;
  spec[key] = value;
}

bool isStringList(const json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
}

}  // namespace

void mergeOver(json& base, const json& over) {
  if (base.is_object() && over.is_object()) {
    for (const auto& [k, v] : over.items()) {
      if (base.contains(k)) {
        mergeOver(base[k], v);
      } else {
        base[k] = v;
      }
    }
  } else if (isStringList(base) && isStringList(over)) {
    for (const json& x : over) {
      if (std::find(base.begin(), base.end(), x) == base.end()) base.push_back(x);
    }
  } else {
    base = over;
  }
}

void applyPodTemplate(const PodTemplateSpec& t, const char* container, json& pod) {
  addEntries(pod["metadata"], "labels", t.labels);
  addEntries(pod["metadata"], "annotations", t.annotations);
  json& spec = pod["spec"];
  for (json& c : spec["containers"]) {
    if (c.value("name", "") != container) continue;
    appendItems(c, "env", t.env);  // after the controller's: $(DDP_...) references resolve
    appendItems(c, "envFrom", t.envFrom);
    appendItems(c, "volumeMounts", t.volumeMounts);
    mergeInto(c, "securityContext", t.containerSecurityContext);
  }
  appendItems(spec, "volumes", t.volumes);
  mergeInto(spec, "securityContext", t.securityContext);
  setIfAbsent(spec, "affinity", carried(t.affinity));
  setIfAbsent(spec, "topologySpreadConstraints", carried(t.topologySpreadConstraints));
  setIfAbsent(spec, "imagePullSecrets", carried(t.imagePullSecrets));
  setIfAbsent(spec, "tolerations", carried(t.tolerations));
  setIfAbsent(spec, "priorityClassName", t.priorityClassName);
  setIfAbsent(spec, "schedulerName", t.schedulerName);
  setIfAbsent(spec, "serviceAccountName", t.serviceAccountName);
  if (!spec.contains("nodeSelector")) addEntries(spec, "nodeSelector", t.nodeSelector);
}

}  // namespace ddp::controller::kube
