// validatePodTemplate: the checks of spec.kubernetes.template (Note [Pod template]): the shape of
// each carried Kubernetes object (Note [Carried Kubernetes objects]), the names and keys the
// controller owns, and the fields that spec.kubernetes sets too.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/pod_template.h"

namespace ddp {
namespace {

using nlohmann::json;
using Keys = std::initializer_list<std::string_view>;

constexpr std::string_view kPrefix = "spec.kubernetes.template.";

// The pod-level label and annotation keys the controller and the gang schedulers' integrations
// own (beside everything under ddp.dev/).
constexpr std::array<std::string_view, 8> kOwnedPodKeys = {
    "app.kubernetes.io/name",           "app.kubernetes.io/managed-by",
    "kueue.x-k8s.io/pod-group-name",    "kueue.x-k8s.io/pod-group-total-count",
    "kueue.x-k8s.io/queue-name",        "scheduling.x-k8s.io/pod-group",
    "scheduling.k8s.io/group-name",     "volcano.sh/job-name"};

// The volumes and mount path the controller gives every worker pod (worker_objects.cc).
constexpr std::array<std::string_view, 2> kOwnedVolumes = {"dshm", "checkpoints"};
constexpr std::string_view kShmPath = "/dev/shm";

const Keys kVolumeSources = {
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "configMap", "csi", "downwardAPI",
    "emptyDir", "ephemeral", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs",
    "hostPath", "image", "iscsi", "nfs", "persistentVolumeClaim", "photonPersistentDisk", "portworxVolume",
    "projected", "quobyte", "rbd", "scaleIO", "secret", "storageos", "vsphereVolume"};
const Keys kPodSecurityKeys = {
    "appArmorProfile", "fsGroup", "fsGroupChangePolicy", "runAsGroup", "runAsNonRoot", "runAsUser",
    "seLinuxChangePolicy", "seLinuxOptions", "seccompProfile", "supplementalGroups", "supplementalGroupsPolicy",
    "sysctls", "windowsOptions"};
const Keys kContainerSecurityKeys = {
    "allowPrivilegeEscalation", "appArmorProfile", "capabilities", "privileged", "procMount",
    "readOnlyRootFilesystem", "runAsGroup", "runAsNonRoot", "runAsUser", "seLinuxOptions", "seccompProfile",
    "windowsOptions"};

bool contains(Keys keys, std::string_view k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); }

std::string list(Keys keys) {
  std::string out;
  for (std::string_view k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// A DNS-1123 label: 1-63 characters of a-z, 0-9 and '-', starting and ending alphanumeric.
bool isDnsLabel(std::string_view s) { return s.size() <= 63 && s.find('.') == s.npos && isDnsSubdomain(s); }
bool isLabelValue(std::string_view s) { return s.empty() || (s.find('/') == s.npos && isQualifiedName(s)); }

class TemplateChecker {
 public:
  TemplateChecker(const JobSpec& s, std::vector<SpecError>* out) : s_(s), t_(s.kubernetes.podTemplate), out_(out) {}

  void run() {
    metadataKeys("labels", t_.labels, true);
    metadataKeys("annotations", t_.annotations, false);
    env();
    envFrom();
    volumeNames_ = volumes();
    volumeMounts();
    securityContexts();
    affinity();
    topologySpread();
    imagePullSecrets();
    for (auto [key, value] : {std::pair{"priorityClassName", &t_.priorityClassName},
                              std::pair{"schedulerName", &t_.schedulerName},
                              std::pair{"serviceAccountName", &t_.serviceAccountName}}) {
      if (!value->empty()) dnsSubdomain(*value, std::string(kPrefix) + key);
    }
    placement();
  }

 private:
  bool check(bool ok, const std::string& path, const std::string& message) {
    if (!ok) out_->push_back({path, message});
    return ok;
  }

  // The carried object at `key` (absent: null), or null after an error.
  json parsed(const KubeObjectJson& text, const std::string& key) {
    if (text.empty()) return nullptr;
    json v = json::parse(text, nullptr, false);
    check(!v.is_discarded(), std::string(kPrefix) + key, "is not valid JSON");
    return v.is_discarded() ? json(nullptr) : v;
  }

  // `v` is an object whose keys are among `allowed`.
  bool object(const json& v, const std::string& path, Keys allowed) {
    if (!check(v.is_object(), path, "expected a mapping, got " + std::string(v.type_name()))) return false;
    bool ok = true;
    for (const auto& [k, ignored] : v.items()) {
      ok = check(contains(allowed, k), path + "." + k, "unknown field (allowed here: " + list(allowed) + ")") && ok;
    }
    return ok;
  }

  // The items of the list at `key`, each checked to be an object with keys among `allowed`.
  std::vector<std::pair<std::string, json>> items(const KubeObjectJson& text, const std::string& key, Keys allowed) {
    std::vector<std::pair<std::string, json>> out;
    const json v = parsed(text, key);
    if (v.is_null()) return out;
    const std::string path = std::string(kPrefix) + key;
    if (!check(v.is_array(), path, "expected a sequence, got " + std::string(v.type_name()))) return out;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      object(v[i], at, allowed);
      if (v[i].is_object()) out.emplace_back(at, v[i]);  // its known keys are checked too
    }
    return out;
  }

  // obj[key] as a string: absent -> "" (an error when required), another type -> an error.
  std::optional<std::string> str(const json& obj, const std::string& path, const char* key, bool required) {
    if (!obj.contains(key)) {
      check(!required, path + "." + key, "required field is missing");
      return required ? std::nullopt : std::optional<std::string>("");
    }
    const json& v = obj[key];
    if (!check(v.is_string(), path + "." + key, "expected a string, got " + std::string(v.type_name()))) {
      return std::nullopt;
    }
    return v.get<std::string>();
  }

  void dnsSubdomain(const std::string& name, const std::string& path) {
    check(isDnsSubdomain(name), path, "must be a DNS subdomain name (got '" + name + "')");
  }

  void metadataKeys(const char* key, const std::map<std::string, std::string>& m, bool labels) {
    for (const auto& [k, value] : m) {
      const std::string at = std::string(kPrefix) + key + "[" + k + "]";
      if (!check(isQualifiedName(k), at, std::string("is not a valid ") + (labels ? "label" : "annotation") + " key")) {
        continue;
      }
      check(!isControllerOwnedPodKey(k), at,
            k + " is set by the controller" +
                (k == "kueue.x-k8s.io/queue-name" ? " (from the DDPJob's own metadata.labels)" : ""));
      if (labels) check(isLabelValue(value), at, "must be a label value: at most 63 characters of alphanumerics, "
                                                 "'-', '_' and '.', starting and ending alphanumeric (got '" + value + "')");
    }
  }

  void env();
  void envFrom();
  std::set<std::string> volumes();
  void volumeMounts();
  void securityContexts();
  void capabilities(const json& sc, const std::string& path);
  void affinity();
  void topologySpread();
  void imagePullSecrets();
  void placement();

  const JobSpec& s_;
  const PodTemplateSpec& t_;
  std::vector<SpecError>* out_;
  std::set<std::string> volumeNames_;
};

void TemplateChecker::env() {
  std::map<std::string, std::string> seen;  // name -> path of its first item
  for (const auto& [at, e] : items(t_.env, "env", {"name", "value", "valueFrom"})) {
    auto name = str(e, at, "name", true);
    if (name && check(!name->empty() && name->find('=') == std::string::npos, at + ".name",
                      "must be a non-empty name without '=' (got '" + *name + "')")) {
      check(name->rfind(kControllerEnvPrefix, 0) != 0, at + ".name", *name + " is set by the controller");
      auto [it, fresh] = seen.emplace(*name, at);
      check(fresh, at + ".name", "duplicate variable " + *name + " (also " + it->second + ")");
    }
    str(e, at, "value", false);
    if (!e.contains("valueFrom")) continue;
    check(!e.contains("value"), at + ".valueFrom", "not with value: a variable has one source");
    const json& from = e["valueFrom"];
    const Keys sources = {"configMapKeyRef", "fieldRef", "resourceFieldRef", "secretKeyRef"};
    if (object(from, at + ".valueFrom", sources)) {
      check(from.size() == 1 && from.begin()->is_object(), at + ".valueFrom", "must hold exactly one mapping of " + list(sources));
    }
  }
}

void TemplateChecker::envFrom() {
  for (const auto& [at, e] : items(t_.envFrom, "envFrom", {"configMapRef", "prefix", "secretRef"})) {
    auto prefix = str(e, at, "prefix", false);
    if (prefix) check(prefix->rfind(kControllerEnvPrefix, 0) != 0, at + ".prefix",
                      "names starting " + std::string(kControllerEnvPrefix) + " are set by the controller");
    const int refs = static_cast<int>(e.contains("configMapRef")) + static_cast<int>(e.contains("secretRef"));
    if (!check(refs == 1, at, "must hold exactly one of configMapRef, secretRef")) continue;
    const std::string key = e.contains("configMapRef") ? "configMapRef" : "secretRef";
    if (object(e[key], at + "." + key, {"name", "optional"})) str(e[key], at + "." + key, "name", true);
  }
}

std::set<std::string> TemplateChecker::volumes() {
  std::set<std::string> names;
  const json all = parsed(t_.volumes, "volumes");
  if (!all.is_array()) {
    check(all.is_null(), std::string(kPrefix) + "volumes", "expected a sequence, got " + std::string(all.type_name()));
    return names;
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string at = std::string(kPrefix) + "volumes[" + std::to_string(i) + "]";
    const json& v = all[i];
    if (!check(v.is_object(), at, "expected a mapping")) continue;
    auto name = str(v, at, "name", true);
    if (name && check(isDnsLabel(*name), at + ".name", "must be a DNS label: at most 63 characters of a-z, 0-9 and "
                                                        "'-', starting and ending alphanumeric (got '" + *name + "')")) {
      const bool owned = std::find(kOwnedVolumes.begin(), kOwnedVolumes.end(), *name) != kOwnedVolumes.end();
      check(!owned, at + ".name", *name + " is the controller's volume (the pod's /dev/shm or its checkpoint claim)");
      check(names.insert(*name).second, at + ".name", "duplicate volume " + *name);
    }
    int sources = 0;
    for (const auto& [k, source] : v.items()) {
      if (k == "name") continue;
      ++sources;
      if (!check(contains(kVolumeSources, k), at + "." + k, "is not a volume source (one of " + list(kVolumeSources) + ")")) {
        continue;
      }
      check(source.is_object(), at + "." + k, "expected a mapping, got " + std::string(source.type_name()));
    }
    check(sources == 1, at, "must hold exactly one volume source beside its name (got " + std::to_string(sources) + ")");
  }
  return names;
}

void TemplateChecker::volumeMounts() {
  std::map<std::string, std::string> paths;  // mountPath -> path of its first item
  const Keys allowed = {"mountPath", "mountPropagation", "name", "readOnly", "recursiveReadOnly", "subPath", "subPathExpr"};
  const bool claim = !s_.kubernetes.checkpointVolumeClaim.empty();
  for (const auto& [at, m] : items(t_.volumeMounts, "volumeMounts", allowed)) {
    auto name = str(m, at, "name", true);
    if (name) check(volumeNames_.count(*name) > 0, at + ".name",
                    "names no volume of spec.kubernetes.template.volumes (got '" + *name + "')");
    auto path = str(m, at, "mountPath", true);
    if (!path || !check(!path->empty() && path->front() == '/', at + ".mountPath", "must be an absolute path")) continue;
    std::string p = *path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    check(p != kShmPath, at + ".mountPath", "/dev/shm is the controller's (a memory-backed volume)");
    if (claim) check(p != s_.checkpoint.dir, at + ".mountPath",
                     "spec.checkpoint.dir is where the controller mounts spec.kubernetes.checkpointVolumeClaim");
    auto [it, fresh] = paths.emplace(p, at);
    check(fresh, at + ".mountPath", "duplicate mount path " + p + " (also " + it->second + ")");
  }
}

void TemplateChecker::capabilities(const json& sc, const std::string& path) {
  if (!sc.contains("capabilities") || !object(sc["capabilities"], path + ".capabilities", {"add", "drop"})) return;
  for (const char* k : {"add", "drop"}) {
    if (!sc["capabilities"].contains(k)) continue;
    const json& caps = sc["capabilities"][k];
    const bool strings = caps.is_array() && std::all_of(caps.begin(), caps.end(), [](const json& c) { return c.is_string(); });
    check(strings, path + ".capabilities." + k, "expected a sequence of capability names (IPC_LOCK, NET_ADMIN, ...)");
  }
}

void TemplateChecker::securityContexts() {
  const std::string pod = std::string(kPrefix) + "securityContext";
  const std::string container = std::string(kPrefix) + "containerSecurityContext";
  const json podSc = parsed(t_.securityContext, "securityContext");
  if (!podSc.is_null()) object(podSc, pod, kPodSecurityKeys);
  const json sc = parsed(t_.containerSecurityContext, "containerSecurityContext");
  if (sc.is_null() || !object(sc, container, kContainerSecurityKeys)) return;
  capabilities(sc, container);
  if (!s_.kubernetes.capSysNice) return;
  // A capability takes effect only for root (Note [Worker pods]).
  const bool nonRoot = (sc.contains("runAsUser") && sc["runAsUser"] != 0) || sc.value("runAsNonRoot", json(false)) == true;
  check(!nonRoot, container + (sc.contains("runAsUser") ? ".runAsUser" : ".runAsNonRoot"),
        "conflicts with spec.kubernetes.capSysNice: true (SYS_NICE takes effect only for root): set one of them");
}

void TemplateChecker::affinity() {
  const json a = parsed(t_.affinity, "affinity");
  const std::string path = std::string(kPrefix) + "affinity";
  if (a.is_null() || !object(a, path, {"nodeAffinity", "podAffinity", "podAntiAffinity"})) return;
  for (const auto& [k, v] : a.items()) {
    check(v.is_object(), path + "." + k, "expected a mapping, got " + std::string(v.type_name()));
  }
}

void TemplateChecker::topologySpread() {
  const Keys allowed = {"labelSelector", "matchLabelKeys", "maxSkew", "minDomains", "nodeAffinityPolicy",
                        "nodeTaintsPolicy", "topologyKey", "whenUnsatisfiable"};
  for (const auto& [at, c] : items(t_.topologySpreadConstraints, "topologySpreadConstraints", allowed)) {
    const json skew = c.value("maxSkew", json());
    check(skew.is_number_integer() && skew.get<int64_t>() >= 1, at + ".maxSkew", "required: an integer >= 1");
    auto key = str(c, at, "topologyKey", true);
    if (key) check(!key->empty(), at + ".topologyKey", "must not be empty (e.g. topology.kubernetes.io/zone)");
    auto when = str(c, at, "whenUnsatisfiable", true);
    if (when) check(*when == "DoNotSchedule" || *when == "ScheduleAnyway", at + ".whenUnsatisfiable",
                    "must be one of DoNotSchedule, ScheduleAnyway (got '" + *when + "')");
  }
}

void TemplateChecker::imagePullSecrets() {
  for (const auto& [at, s] : items(t_.imagePullSecrets, "imagePullSecrets", {"name"})) {
    if (auto name = str(s, at, "name", true)) dnsSubdomain(*name, at + ".name");
  }
}

// nodeSelector, tolerations and serviceAccountName: in spec.kubernetes or here, not both.
void TemplateChecker::placement() {
  const KubernetesSpec& k = s_.kubernetes;
  auto both = [&](bool here, bool there, const char* key) {
    check(!(here && there), std::string(kPrefix) + key,
          std::string("is set together with spec.kubernetes.") + key + ": set the worker pods' " + key +
              " in one of them");
  };
  both(!t_.nodeSelector.empty(), !k.nodeSelector.empty(), "nodeSelector");
  both(!t_.tolerations.empty(), !k.tolerations.empty(), "tolerations");
  both(!t_.serviceAccountName.empty(), !k.serviceAccountName.empty(), "serviceAccountName");
  for (const auto& [key, value] : t_.nodeSelector) {
    const std::string at = std::string(kPrefix) + "nodeSelector[" + key + "]";
    check(isQualifiedName(key), at, "is not a valid label key");
    check(isLabelValue(value), at, "must be a label value (got '" + value + "')");
  }
  const Keys allowed = {"effect", "key", "operator", "tolerationSeconds", "value"};
  for (const auto& [at, t] : items(t_.tolerations, "tolerations", allowed)) {
    auto op = str(t, at, "operator", false);
    if (op) check(op->empty() || *op == "Equal" || *op == "Exists", at + ".operator", "must be one of Equal, Exists (got '" + *op + "')");
    auto effect = str(t, at, "effect", false);
    if (effect) check(effect->empty() || *effect == "NoSchedule" || *effect == "PreferNoSchedule" || *effect == "NoExecute",
                      at + ".effect", "must be one of NoSchedule, PreferNoSchedule, NoExecute or empty (got '" + *effect + "')");
    str(t, at, "key", false);
    str(t, at, "value", false);
    if (t.contains("tolerationSeconds")) check(t["tolerationSeconds"].is_number_integer(), at + ".tolerationSeconds", "expected an integer");
  }
}

}  // namespace

bool isControllerOwnedPodKey(std::string_view key) {
  if (key.rfind("ddp.dev/", 0) == 0) return true;
  return std::find(kOwnedPodKeys.begin(), kOwnedPodKeys.end(), key) != kOwnedPodKeys.end();
}

void validatePodTemplate(const JobSpec& spec, std::vector<SpecError>* errors) {
  TemplateChecker(spec, errors).run();
}

}  // namespace ddp
