// spec.kubernetes.podSecurityLevel (Note [Pod security level] in common/jobspec/pod_template.h)
// against its oracle, the fake API server's Pod Security checker (fake_pod_security.cc, written
// from the standards independently): for each template setting and each level, validation
// accepts the job exactly when the worker pod built from it meets the level, and a refusal names
// the field, the level broken and the level that allows it. Also the default level and the
// spec's own opt-ins against an explicit level.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/jobspec/pod_template.h"
#include "controller/launch/kubernetes/worker_objects.h"
#include "tests/unit/controller/kubernetes/fake_admission.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

const std::vector<std::string> kLevels = {"restricted", "baseline", "privileged"};
int rank(const std::string& level) { return level == "privileged" ? 2 : level == "baseline" ? 1 : 0; }

// A job whose spec.kubernetes holds `kubernetes` (lines indented by four spaces).
std::string job(const std::string& kubernetes) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm}\n"
         "spec:\n  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 1\n  kubernetes:\n" + kubernetes;
}

json podOf(const JobSpec& spec) {
  WorkerObjectsInput in;
  in.nameSpace = "ml";
  in.defaultImage = "ddp-service:0.1.0";
  in.spec = spec;
  in.launch.jobName = "fm";
  in.launch.workers = 1;
  in.launch.env.controllerUrl = "http://ddp.ml.svc:8081";
  in.launch.env.jobToken = "tok";
  return buildWorkerPod(in, 0);
}

struct Case {
  std::string name;
  std::string templateBody;  // under template:, indented by six spaces
  std::string needs;         // the lowest level that allows it
  std::string field;         // where a refusal points
};

class PodSecurityLevelTest : public ::testing::TestWithParam<Case> {};

TEST_P(PodSecurityLevelTest, RefusedExactlyWhenThePodBreaksTheLevel) {
  const Case& c = GetParam();
  for (const std::string& level : kLevels) {
    SCOPED_TRACE(level);
    const std::string yaml = job("    podSecurityLevel: " + level + "\n    template:\n" + c.templateBody);
    std::vector<SpecError> errors;
    auto spec = parseJobSpec(yaml, &errors);
    // The pod the template gives, whatever the level: from the job at privileged.
    auto built = parseJobSpec(job("    podSecurityLevel: privileged\n    template:\n" + c.templateBody));
    ASSERT_TRUE(built.isOk()) << built.status();
    const std::vector<std::string> broken = testing::podSecurityViolations(podOf(*built), level);
    if (rank(level) >= rank(c.needs)) {
      ASSERT_TRUE(spec.isOk()) << spec.status();
      EXPECT_TRUE(broken.empty()) << "accepted, but the pod breaks " << level << ": " << broken.front();
      continue;
    }
    EXPECT_FALSE(broken.empty()) << "refused, but the pod meets " << level;
    ASSERT_FALSE(spec.isOk());
    const SpecError* e = nullptr;
    for (const SpecError& x : errors) e = x.path == c.field ? &x : e;
    ASSERT_NE(e, nullptr) << spec.status();
    EXPECT_NE(e->message.find("breaks Pod Security level " + level), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("needs level " + c.needs), std::string::npos) << e->message;
    EXPECT_NE(e->message.find("spec.kubernetes.podSecurityLevel: " + c.needs), std::string::npos) << e->message;
  }
}

const std::string kC = "spec.kubernetes.template.containerSecurityContext";
const std::string kP = "spec.kubernetes.template.securityContext";
INSTANTIATE_TEST_SUITE_P(
    Settings, PodSecurityLevelTest,
    ::testing::Values(
        Case{"Nothing", "      labels: {team: vision}\n", "restricted", ""},
        Case{"NetBindService", "      containerSecurityContext: {capabilities: {add: [NET_BIND_SERVICE]}}\n", "restricted", ""},
        Case{"LocalhostSeccomp", "      containerSecurityContext: {seccompProfile: {type: Localhost, localhostProfile: w.json}}\n",
             "restricted", ""},
        Case{"OtherUser", "      containerSecurityContext: {runAsUser: 2000}\n", "restricted", ""},
        Case{"Root", "      containerSecurityContext: {runAsUser: 0}\n", "baseline", kC + ".runAsUser"},
        Case{"PodRoot", "      securityContext: {runAsUser: 0}\n", "baseline", kP + ".runAsUser"},
        Case{"NotNonRoot", "      containerSecurityContext: {runAsNonRoot: false}\n", "baseline", kC + ".runAsNonRoot"},
        Case{"Escalation", "      containerSecurityContext: {allowPrivilegeEscalation: true}\n", "baseline",
             kC + ".allowPrivilegeEscalation"},
        Case{"Chown", "      containerSecurityContext: {capabilities: {add: [CHOWN]}}\n", "baseline", kC + ".capabilities.add"},
        Case{"NfsVolume", "      volumes: [{name: d, nfs: {server: nfs.example.com, path: /d}}]\n", "baseline",
             "spec.kubernetes.template.volumes[0].nfs"},
        Case{"IpcLock", "      containerSecurityContext: {capabilities: {add: [IPC_LOCK]}}\n", "privileged",
             kC + ".capabilities.add"},
        Case{"Privileged", "      containerSecurityContext: {privileged: true}\n", "privileged", kC + ".privileged"},
        Case{"UnconfinedSeccomp", "      securityContext: {seccompProfile: {type: Unconfined}}\n", "privileged",
             kP + ".seccompProfile.type"},
        Case{"UnsafeSysctl", "      securityContext: {sysctls: [{name: kernel.msgmax, value: '65536'}]}\n", "privileged",
             kP + ".sysctls"},
        Case{"ProcMount", "      containerSecurityContext: {procMount: Unmasked}\n", "privileged", kC + ".procMount"},
        Case{"SeLinuxType", "      containerSecurityContext: {seLinuxOptions: {type: spc_t}}\n", "privileged",
             kC + ".seLinuxOptions"},
        Case{"HostPath", "      volumes: [{name: h, hostPath: {path: /var/data}}]\n", "privileged",
             "spec.kubernetes.template.volumes[0].hostPath"}),
    [](const auto& info) { return info.param.name; });

// Empty: restricted, or privileged when the spec's own opt-ins already need a privileged
// namespace (capSysNice, hostNetwork, hostIPC); a level set explicitly refuses those beyond it.
TEST(PodSecurityLevelDefaultTest, TheDefaultFollowsTheOptInsAndAnExplicitLevelBindsThem) {
  const std::string ipcLock = "    template:\n      containerSecurityContext: {capabilities: {add: [IPC_LOCK]}}\n";
  std::vector<SpecError> errors;
  EXPECT_FALSE(parseJobSpec(job(ipcLock), &errors).isOk());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("breaks Pod Security level restricted"), std::string::npos) << errors[0].message;
  for (const char* optIn : {"capSysNice", "hostNetwork", "hostIPC"}) {
    SCOPED_TRACE(optIn);
    auto spec = parseJobSpec(job("    " + std::string(optIn) + ": true\n" + ipcLock));
    ASSERT_TRUE(spec.isOk()) << spec.status();
    EXPECT_EQ(effectivePodSecurityLevel(spec->kubernetes), "privileged");
    for (const char* level : {"restricted", "baseline"}) {
      errors.clear();
      EXPECT_FALSE(parseJobSpec(job("    " + std::string(optIn) + ": true\n    podSecurityLevel: " + level + "\n"),
                                &errors).isOk());
      ASSERT_EQ(errors.size(), 1u);
      EXPECT_EQ(errors[0].path, "spec.kubernetes." + std::string(optIn));
      EXPECT_NE(errors[0].message.find("needs level privileged"), std::string::npos) << errors[0].message;
    }
  }
  EXPECT_EQ(effectivePodSecurityLevel(KubernetesSpec{}), "restricted");
  errors.clear();
  EXPECT_FALSE(parseJobSpec(job("    podSecurityLevel: strict\n"), &errors).isOk());
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].path, "spec.kubernetes.podSecurityLevel");
}

}  // namespace
}  // namespace ddp::controller::kube
