// YAML -> KubernetesSpec: the spec.kubernetes section of a DDPJob (job_spec_kubernetes.h).
#include <string>
#include <vector>

#include "common/jobspec/job_spec_parser.h"

namespace ddp {
namespace {

const job_spec_detail::EnumTable<ImagePullPolicy> kPullPolicies = {
    {"IfNotPresent", ImagePullPolicy::kIfNotPresent},
    {"Always", ImagePullPolicy::kAlways},
    {"Never", ImagePullPolicy::kNever}};
const job_spec_detail::EnumTable<CleanPodPolicy> kCleanPodPolicies = {
    {"Running", CleanPodPolicy::kRunning}, {"All", CleanPodPolicy::kAll}, {"None", CleanPodPolicy::kNone}};
const job_spec_detail::EnumTable<ScheduleTimeoutAction> kTimeoutActions = {
    {"Fail", ScheduleTimeoutAction::kFail}, {"Retry", ScheduleTimeoutAction::kRetry}};

}  // namespace

namespace job_spec_detail {

void Parser::parseKubernetes(const YAML::Node& n, const std::string& p, KubernetesSpec* k) {
  if (!mapping(n, p)) return;
  getString(n, p, "image", &k->image);
  getEnum(n, p, "imagePullPolicy", kPullPolicies, &k->imagePullPolicy);
  const std::string rp = p + ".resources";
  if (n["resources"] && mapping(n["resources"], rp)) {
    getStringMap(n["resources"], rp, "requests", &k->resources.requests);
    getStringMap(n["resources"], rp, "limits", &k->resources.limits);
  }
  getStringMap(n, p, "nodeSelector", &k->nodeSelector);
  if (n["tolerations"]) parseTolerations(n["tolerations"], p + ".tolerations", &k->tolerations);
  getString(n, p, "serviceAccountName", &k->serviceAccountName);
  getString(n, p, "checkpointVolumeClaim", &k->checkpointVolumeClaim);
  getBool(n, p, "capSysNice", &k->capSysNice);
  if (n["runPolicy"]) parseRunPolicy(n["runPolicy"], p + ".runPolicy", &k->runPolicy);
}

void Parser::parseTolerations(const YAML::Node& n, const std::string& p, std::vector<TolerationSpec>* out) {
  if (!n.IsSequence()) {
    fail(n, p, "expected a sequence of tolerations, got " + describe(n));
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string ip = p + "[" + std::to_string(i) + "]";
    TolerationSpec t;
    if (mapping(n[i], ip)) {
      getString(n[i], ip, "key", &t.key);
      getString(n[i], ip, "operator", &t.op);
      getString(n[i], ip, "value", &t.value);
      getString(n[i], ip, "effect", &t.effect);
      if (n[i]["tolerationSeconds"]) {
        int64_t seconds = 0;
        if (readInt(n[i]["tolerationSeconds"], ip + ".tolerationSeconds", &seconds, 0,
                    std::numeric_limits<int64_t>::max())) {
          t.tolerationSeconds = seconds;
        }
      }
    }
    out->push_back(std::move(t));
  }
}

void Parser::parseRunPolicy(const YAML::Node& n, const std::string& p, RunPolicySpec* r) {
  if (!mapping(n, p)) return;
  getEnum(n, p, "cleanPodPolicy", kCleanPodPolicies, &r->cleanPodPolicy);
  for (auto [key, field] : {std::pair{"activeDeadlineSeconds", &r->activeDeadlineSeconds},
                            std::pair{"ttlSecondsAfterFinished", &r->ttlSecondsAfterFinished}}) {
    int64_t x = 0;
    if (n[key] && readInt(n[key], join(p, key), &x, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max())) {
      *field = x;
    }
  }
  const std::string sp = p + ".schedulingPolicy";
  if (n["schedulingPolicy"] && mapping(n["schedulingPolicy"], sp)) {
    getInt(n["schedulingPolicy"], sp, "scheduleTimeoutSeconds", &r->schedulingPolicy.scheduleTimeoutSeconds);
    getEnum(n["schedulingPolicy"], sp, "onScheduleTimeout", kTimeoutActions,
            &r->schedulingPolicy.onScheduleTimeout);
  }
}

}  // namespace job_spec_detail
}  // namespace ddp
