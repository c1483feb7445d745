#pragma once
// The admission rules FakeKubeApiServer applies to the objects it is sent (creates, PUTs and
// PATCHes; not FakeKubeApiServer::put, which writes as another client would), as a real API
// server does, so that a name or a pod the cluster would refuse is refused in the tests too:
//  - names (422 Invalid): a Service's is a DNS-1035 label, a Namespace's a DNS-1123 label,
//    every other kind's a DNS-1123 subdomain; a pod's spec.hostname and spec.subdomain are
//    DNS-1123 labels; every label value has at most 63 characters of [A-Za-z0-9-_.], starting
//    and ending with an alphanumeric;
//  - Pod Security admission (403 Forbidden) for pods: the level of the pod's namespace's
//    `pod-security.kubernetes.io/enforce` label (privileged, baseline, restricted: the Pod
//    Security Standards, podSecurityViolations()); no label or no Namespace object: privileged.
// FAKED: the rules are written here from the Kubernetes documentation, independently of the
// code under test (apimachinery's validation and the pod-security-admission library).
// Thread model: pure functions.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::controller::kube::testing {

struct AdmissionRefusal {
  int code = 0;        // 422 or 403
  std::string reason;  // "Invalid", "Forbidden"
  std::string message;
};

// `resource` as in the fake's paths ("pods", "services", "ddp.dev/v1/ddpjobs"); `kind` its kind;
// `nameSpace` the object's Namespace object when there is one.
std::optional<AdmissionRefusal> admit(const std::string& resource, const std::string& kind,
                                      const nlohmann::json& object, const nlohmann::json* nameSpace);

// The Pod Security Standards checks a pod fails at `level` ("baseline" or "restricted"; the
// restricted level includes baseline's), each as the API server words it ("allowPrivilegeEscalation
// != false (container \"worker\" must set securityContext.allowPrivilegeEscalation=false)").
// Empty: the pod meets the level. "privileged" allows everything.
std::vector<std::string> podSecurityViolations(const nlohmann::json& pod, const std::string& level);

}  // namespace ddp::controller::kube::testing
