#pragma once
// FakeRbac: the RBAC authorizer of FakeKubeApiServer (FAKED: the API server's authorization),
// for one client identity (the controller's ServiceAccount). A request is allowed when a rule of
// a grant in its namespace (a RoleBinding's Role or ClusterRole), or of a cluster-wide grant (a
// ClusterRoleBinding's ClusterRole), names its API group, resource (with "/subresource") and
// verb, as the real authorizer matches them ("*" matches any); a request without a namespace
// (a collection across all namespaces) needs a cluster-wide grant. Besides, as the
// OwnerReferencesPermissionEnforcement admission plugin does (on by default on OpenShift), an
// object whose ownerReferences set blockOwnerDeletion: true may be written only by a client
// allowed to `update` the owner's `finalizers` subresource in the object's namespace.
// Thread model: a value; FakeKubeApiServer reads it under its own lock.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ddp::controller::kube::testing {

struct PolicyRule {
  std::vector<std::string> apiGroups, resources, verbs;
};

struct RbacGrant {
  std::string nameSpace;  // "" : cluster-wide (a ClusterRoleBinding)
  std::vector<PolicyRule> rules;
};

class FakeRbac {
 public:
  explicit FakeRbac(std::string user = "system:serviceaccount:ml:ddp") : user_(std::move(user)) {}

  void grant(RbacGrant g) { grants_.push_back(std::move(g)); }
  // Whether `verb` on `resource` ("pods", "pods/log") of `group` ("" core) in `ns` ("": across
  // namespaces) is allowed.
  bool allows(const std::string& verb, const std::string& group, const std::string& resource,
              const std::string& ns) const;
  // "" when allowed, else the message a real API server gives for the refusal (403 Forbidden).
  std::string refusal(const std::string& verb, const std::string& group, const std::string& resource,
                      const std::string& ns, const std::string& name) const;
  // The same for the owner references of `object`, written in `ns` (blockOwnerDeletion).
  std::string ownerRefusal(const nlohmann::json& object, const std::string& resource, const std::string& ns) const;
  // A request as the authorizer sees it.
  struct Request {
    std::string method;  // GET, POST, PUT, PATCH, DELETE
    bool watch = false;  // GET ...?watch=1
    std::string apiVersion, resource, sub, ns, name;  // "v1" or "group/version"; "pods"; "log"
  };
  // "" when `r` is allowed, else the API server's message: its verb (list, watch, get, create,
  // update, patch, delete), group, resource and namespace, and for a write the owner references
  // of `body` (blockOwnerDeletion).
  std::string requestRefusal(const Request& r, const std::string& body) const;
  // Drops every rule's `verb` on `group`/`resource` (a chart's Role without one of its rules).
  void revoke(const std::string& verb, const std::string& group, const std::string& resource);

  // The grants of ServiceAccount `saNamespace`/`saName` in a rendered manifest (multi-document
  // YAML, as helm template writes it): each RoleBinding and ClusterRoleBinding naming it as a
  // subject, with the rules of the Role or ClusterRole it refers to (aggregated ClusterRoles'
  // aggregationRule is not followed). InvalidArgument naming the document when one is malformed.
  static Result<FakeRbac> fromManifest(const std::string& yaml, const std::string& saNamespace,
                                       const std::string& saName);

 private:
  std::string user_;
  std::vector<RbacGrant> grants_;
};

}  // namespace ddp::controller::kube::testing
