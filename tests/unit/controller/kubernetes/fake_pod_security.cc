// The Pod Security Standards (baseline and restricted) as the fake API server enforces them
// (podSecurityViolations in fake_admission.h). FAKED: written from the Kubernetes
// documentation's table of the standards ("Pod Security Standards", policy version latest),
// not from the pod-security-admission library; tests/kubernetes/pod_security.mjs is a second,
// independent reading of the same table that the Kubernetes checks run.
#include <set>

#include "tests/unit/controller/kubernetes/fake_admission.h"

namespace ddp::controller::kube::testing {
namespace {

using nlohmann::json;

// Capabilities baseline allows a container to add.
const std::set<std::string> kBaselineCapabilities = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID",
                                                     "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID",
                                                     "SETPCAP", "SETUID", "SYS_CHROOT"};
const std::set<std::string> kSafeSysctls = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                                            "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                                            "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                                            "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                            "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"};
const std::set<std::string> kRestrictedVolumes = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                                  "persistentVolumeClaim", "projected", "secret"};
const std::set<std::string> kSelinuxTypes = {"", "container_t", "container_init_t", "container_kvm_t",
                                             "container_engine_t"};

std::vector<json> containersOf(const json& spec) {
  std::vector<json> out;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    for (const json& c : spec.value(list, json::array())) out.push_back(c);
  }
  return out;
}

std::string quoted(const json& c) { return "container \"" + c.value("name", "") + "\""; }

void baseline(const json& spec, std::vector<std::string>* out) {
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (spec.value(host, false)) out->push_back(std::string("host namespaces (") + host + "=true)");
  }
  for (const json& v : spec.value("volumes", json::array())) {
    if (v.contains("hostPath")) out->push_back("hostPath volumes (volume \"" + v.value("name", "") + "\")");
  }
  const json podSc = spec.value("securityContext", json::object());
  if (podSc.value("seccompProfile", json::object()).value("type", "") == "Unconfined") {
    out->push_back("seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
  }
  for (const json& s : podSc.value("sysctls", json::array())) {
    if (!kSafeSysctls.count(s.value("name", ""))) out->push_back("forbidden sysctls (" + s.value("name", "") + ")");
  }
  for (const json& c : containersOf(spec)) {
    const json sc = c.value("securityContext", json::object());
    if (sc.value("privileged", false)) out->push_back("privileged (" + quoted(c) + " must not set securityContext.privileged=true)");
    for (const json& cap : sc.value("capabilities", json::object()).value("add", json::array())) {
      if (!kBaselineCapabilities.count(cap.get<std::string>())) {
        out->push_back("non-default capabilities (" + quoted(c) + " must not include \"" + cap.get<std::string>() +
                       "\" in securityContext.capabilities.add)");
      }
    }
    for (const json& p : c.value("ports", json::array())) {
      if (p.value("hostPort", 0) != 0) out->push_back("hostPort (" + quoted(c) + " uses hostPort " + std::to_string(p.value("hostPort", 0)) + ")");
    }
    if (sc.value("seccompProfile", json::object()).value("type", "") == "Unconfined") {
      out->push_back("seccompProfile (" + quoted(c) + " must not set securityContext.seccompProfile.type to \"Unconfined\")");
    }
    if (sc.value("procMount", "Default") != "Default") out->push_back("procMount (" + quoted(c) + " must not set securityContext.procMount)");
    const json se = sc.value("seLinuxOptions", json::object());
    if (!kSelinuxTypes.count(se.value("type", "")) || se.contains("user") || se.contains("role")) {
      out->push_back("seLinuxOptions (" + quoted(c) + " set forbidden securityContext.seLinuxOptions)");
    }
    if (sc.value("windowsOptions", json::object()).value("hostProcess", false)) out->push_back("hostProcess");
  }
}

void restricted(const json& spec, std::vector<std::string>* out) {
  for (const json& v : spec.value("volumes", json::array())) {
    bool allowed = false;
    for (const auto& [k, _] : v.items()) allowed = allowed || kRestrictedVolumes.count(k);
    if (!allowed) out->push_back("restricted volume types (volume \"" + v.value("name", "") + "\")");
  }
  const json podSc = spec.value("securityContext", json::object());
  const bool podNonRoot = podSc.value("runAsNonRoot", false);
  const std::string podSeccomp = podSc.value("seccompProfile", json::object()).value("type", "");
  const bool podSeccompOk = podSeccomp == "RuntimeDefault" || podSeccomp == "Localhost";
  if (podSc.contains("runAsUser") && podSc["runAsUser"] == 0) out->push_back("runAsUser=0 (pod must not set runAsUser=0)");
  for (const json& c : containersOf(spec)) {
    const json sc = c.value("securityContext", json::object());
    if (!sc.contains("allowPrivilegeEscalation") || sc["allowPrivilegeEscalation"] != false) {
      out->push_back("allowPrivilegeEscalation != false (" + quoted(c) + " must set securityContext.allowPrivilegeEscalation=false)");
    }
    const json caps = sc.value("capabilities", json::object());
    bool dropsAll = false;
    for (const json& d : caps.value("drop", json::array())) dropsAll = dropsAll || d == "ALL";
    if (!dropsAll) out->push_back("unrestricted capabilities (" + quoted(c) + " must set securityContext.capabilities.drop=[\"ALL\"])");
    for (const json& a : caps.value("add", json::array())) {
      if (a != "NET_BIND_SERVICE") {
        out->push_back("unrestricted capabilities (" + quoted(c) + " must not include \"" + a.get<std::string>() +
                       "\" in securityContext.capabilities.add)");
      }
    }
    const bool nonRoot = sc.contains("runAsNonRoot") ? sc["runAsNonRoot"] == true : podNonRoot;
    if (!nonRoot) out->push_back("runAsNonRoot != true (" + quoted(c) + " must set securityContext.runAsNonRoot=true)");
    if (sc.contains("runAsUser") && sc["runAsUser"] == 0) out->push_back("runAsUser=0 (" + quoted(c) + " must not set runAsUser=0)");
    const std::string seccomp = sc.value("seccompProfile", json::object()).value("type", "");
    const bool seccompOk = seccomp.empty() ? podSeccompOk : seccomp == "RuntimeDefault" || seccomp == "Localhost";
    if (!seccompOk) {
      out->push_back("seccompProfile (" + quoted(c) + " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")");
    }
  }
}

}  // namespace

std::vector<std::string> podSecurityViolations(const json& pod, const std::string& level) {
  std::vector<std::string> out;
  if (level == "privileged") return out;
  const json spec = pod.value("spec", json::object());
  baseline(spec, &out);
  if (level == "restricted") restricted(spec, &out);
  return out;
}

}  // namespace ddp::controller::kube::testing
