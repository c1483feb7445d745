// validatePodSecurityLevel: the worker pods' Pod Security level against what the job asks of
// them (Note [Pod security level] in pod_template.h).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/pod_template.h"

namespace ddp {
namespace {

using nlohmann::json;

constexpr std::string_view kTemplate = "spec.kubernetes.template.";
constexpr std::string_view kLevelPath = "spec.kubernetes.podSecurityLevel";

// The Pod Security Standards (policy version latest), the parts a template can set.
const std::vector<std::string_view> kBaselineCapabilities = {
    "AUDIT_WRITE", "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"};
const std::vector<std::string_view> kSafeSysctls = {
    "kernel.shm_rmid_forced",   "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",  "net.ipv4.ping_group_range",    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",  "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes"};
const std::vector<std::string_view> kRestrictedVolumes = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"};
const std::vector<std::string_view> kSeLinuxTypes = {"", "container_t", "container_init_t", "container_kvm_t",
                                                     "container_engine_t"};

bool among(const std::vector<std::string_view>& set, std::string_view v) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

int rank(std::string_view level) { return level == "privileged" ? 2 : level == "baseline" ? 1 : 0; }

json carried(const KubeObjectJson& text) {
  if (text.empty()) return nullptr;
  json v = json::parse(text, nullptr, false);
  return v.is_discarded() ? json(nullptr) : v;  // validatePodTemplate reports bad JSON
}

std::string str(const json& v, const char* key) {
  return v.is_object() && v.contains(key) && v[key].is_string() ? v[key].get<std::string>() : "";
}

// Collects what the job asks of its pods that a level forbids: the field, and the rule broken.
class LevelChecker {
 public:
  explicit LevelChecker(std::string_view level) : level_(rank(level)) {}

  // `needs` is the lowest level that allows it: "baseline" (restricted forbids it) or
  // "privileged" (baseline forbids it too).
  void need(bool asked, std::string_view needs, const std::string& path, const std::string& rule) {
    if (asked && rank(needs) > level_) found_.push_back({path, rule, std::string(needs)});
  }

  // A securityContext's own checks, pod-level or the container's.
  void securityContext(const json& sc, const std::string& path, bool container) {
    if (!sc.is_object()) return;
    if (container) {
      need(sc.value("privileged", json(false)) == true, "privileged", path + ".privileged", "privileged containers");
      need(sc.value("allowPrivilegeEscalation", json(false)) == true, "baseline", path + ".allowPrivilegeEscalation",
           "privilege escalation (restricted requires allowPrivilegeEscalation: false)");
      need(str(sc, "procMount") != "" && str(sc, "procMount") != "Default", "privileged", path + ".procMount",
           "a procMount other than Default");
      capabilities(sc.value("capabilities", json::object()), path + ".capabilities");
    } else {
      for (const json& s : sc.value("sysctls", json::array())) {
        need(!among(kSafeSysctls, str(s, "name")), "privileged", path + ".sysctls",
             "the unsafe sysctl " + str(s, "name"));
      }
    }
    need(sc.value("runAsNonRoot", json(true)) == false, "baseline", path + ".runAsNonRoot",
         "running as root (restricted requires runAsNonRoot)");
    need(sc.value("runAsUser", json(-1)) == 0, "baseline", path + ".runAsUser",
         "running as root (restricted forbids runAsUser 0)");
    const std::string seccomp = str(sc.value("seccompProfile", json::object()), "type");
    need(seccomp == "Unconfined", "privileged", path + ".seccompProfile.type", "an Unconfined seccomp profile");
    need(!seccomp.empty() && seccomp != "Unconfined" && seccomp != "RuntimeDefault" && seccomp != "Localhost",
         "baseline", path + ".seccompProfile.type", "a seccomp profile other than RuntimeDefault or Localhost");
    need(str(sc.value("appArmorProfile", json::object()), "type") == "Unconfined", "privileged",
         path + ".appArmorProfile.type", "an Unconfined AppArmor profile");
    const json se = sc.value("seLinuxOptions", json::object());
    need(!among(kSeLinuxTypes, str(se, "type")) || !str(se, "user").empty() || !str(se, "role").empty(), "privileged",
         path + ".seLinuxOptions", "custom SELinux options (a type outside container_t and its kin, a user or role)");
    need(sc.value("windowsOptions", json::object()).value("hostProcess", json(false)) == true, "privileged",
         path + ".windowsOptions.hostProcess", "Windows host processes");
  }

  void capabilities(const json& caps, const std::string& path) {
    for (const json& c : caps.value("add", json::array())) {
      const std::string cap = c.is_string() ? c.get<std::string>() : "";
      need(!among(kBaselineCapabilities, cap), "privileged", path + ".add",
           "adding capability " + cap + " (baseline allows only the default set)");
      need(cap != "NET_BIND_SERVICE" && among(kBaselineCapabilities, cap), "baseline", path + ".add",
           "adding capability " + cap + " (restricted allows only NET_BIND_SERVICE)");
    }
  }

  void volumes(const json& list) {
    if (!list.is_array()) return;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_object()) continue;
      const std::string at = std::string(kTemplate) + "volumes[" + std::to_string(i) + "]";
      for (const auto& [k, v] : list[i].items()) {
        if (k == "name") continue;
        need(k == "hostPath", "privileged", at + "." + k, "hostPath volumes");
        need(k != "hostPath" && !among(kRestrictedVolumes, k), "baseline", at + "." + k,
             "volume type " + k + " (restricted allows configMap, csi, downwardAPI, emptyDir, ephemeral, "
             "persistentVolumeClaim, projected, secret)");
      }
    }
  }

  struct Found {
    std::string path, rule, needs;
  };
  const std::vector<Found>& found() const { return found_; }

 private:
  int level_;
  std::vector<Found> found_;
};

}  // namespace

std::string effectivePodSecurityLevel(const KubernetesSpec& k) {
  if (!k.podSecurityLevel.empty()) return k.podSecurityLevel;
  return k.capSysNice || k.hostNetwork || k.hostIPC ? "privileged" : "restricted";
}

void validatePodSecurityLevel(const JobSpec& spec, std::vector<SpecError>* errors) {
  const KubernetesSpec& k = spec.kubernetes;
  const std::string level = effectivePodSecurityLevel(k);
  LevelChecker c(level);
  const PodTemplateSpec& t = k.podTemplate;
  c.securityContext(carried(t.containerSecurityContext), std::string(kTemplate) + "containerSecurityContext", true);
  c.securityContext(carried(t.securityContext), std::string(kTemplate) + "securityContext", false);
  c.volumes(carried(t.volumes));
  // The spec's own opt-ins are checked against a level set explicitly (Note [Pod security level]).
  if (!k.podSecurityLevel.empty()) {
    c.need(k.capSysNice, "privileged", "spec.kubernetes.capSysNice", "CAP_SYS_NICE as root");
    c.need(k.hostNetwork, "privileged", "spec.kubernetes.hostNetwork", "the node's network namespace");
    c.need(k.hostIPC, "privileged", "spec.kubernetes.hostIPC", "the node's IPC namespace");
  }
  for (const auto& f : c.found()) {
    errors->push_back({f.path, "breaks Pod Security level " + level + ": " + f.rule + " needs level " + f.needs +
                                   "; set " + std::string(kLevelPath) + ": " + f.needs +
                                   " to allow it (the namespace must admit that level)"});
  }
}

}  // namespace ddp
