// validateSchedulingSpec: spec.managedBy and the gang fields of
// spec.kubernetes.runPolicy.schedulingPolicy (minAvailable, queue, priorityClass); and the
// one rule between versions of a DDPJob, managedByChangeError.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace ddp {

void validateSchedulingSpec(const JobSpec& spec, std::vector<SpecError>* errors) {
  const auto check = [errors](bool ok, const std::string& path, const std::string& message) {
    if (!ok) errors->push_back({path, message});
  };
  // As Kubernetes' Job and Kubeflow's TrainJob have it: a domain-prefixed path of at most 63
  // characters ("ddp.dev/ddp-controller", "kueue.x-k8s.io/multikueue").
  const std::string& by = spec.managedBy;
  if (!by.empty()) {
    const size_t slash = by.find('/');
    check(by.size() <= 63 && slash != std::string::npos && slash > 0 && slash + 1 < by.size() &&
              isDnsSubdomain(std::string_view(by).substr(0, slash)),
          "spec.managedBy",
          "must be a domain-prefixed path of at most 63 characters, e.g. " + std::string(kDdpControllerManager) +
              " (got '" + by + "')");
  }
  const SchedulingPolicySpec& sp = spec.kubernetes.runPolicy.schedulingPolicy;
  const std::string p = "spec.kubernetes.runPolicy.schedulingPolicy.";
  if (sp.minAvailable) {
    check(*sp.minAvailable <= spec.workers.max, p + "minAvailable",
          "must be <= spec.workers.max (" + std::to_string(spec.workers.max) + "): a gang of " +
              std::to_string(*sp.minAvailable) + " pods would never be complete (got " +
              std::to_string(*sp.minAvailable) + ")");
  }
  if (!sp.queue.empty()) {
    check(isDnsSubdomain(sp.queue), p + "queue", "must be a DNS subdomain name, a Volcano Queue's (got '" + sp.queue + "')");
  }
  if (!sp.priorityClass.empty()) {
    check(isDnsSubdomain(sp.priorityClass), p + "priorityClass",
          "must be a DNS subdomain name, a PriorityClass's (got '" + sp.priorityClass + "')");
  }
}

std::optional<SpecError> managedByChangeError(std::string_view before, std::string_view after) {
  if (before == after) return std::nullopt;
  auto shown = [](std::string_view v) { return v.empty() ? std::string("unset") : "'" + std::string(v) + "'"; };
  return SpecError{"spec.managedBy",
                   "cannot change once the DDPJob exists (was " + shown(before) + ", now " + shown(after) +
                       "): a job is never managed by two controllers in turn; delete the DDPJob and create it "
                       "again to hand it to another manager (rule managed-by-immutable)"};
}

}  // namespace ddp
