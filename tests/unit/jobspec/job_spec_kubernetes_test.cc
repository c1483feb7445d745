// spec.kubernetes: parsed with the rest of a DDPJob, every error naming its field path and
// location, unknown fields refused, toYaml() round-trips; Kubernetes quantities and names.
#include "common/jobspec/job_spec_kubernetes.h"

#include <gtest/gtest.h>

#include <string>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;
using spec_test::withSpec;

const char* kGpuJob = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata: {name: gpu}
spec:
  workers: {count: 4}
  device: cuda
  model: {type: mlp}
  data: {dataset: synthetic}
  epochs: 1
  checkpoint: {dir: /checkpoints/gpu, everySteps: 100}
  kubernetes:
    image: registry.example.com/ddp:0.1.0
    imagePullPolicy: Always
    resources:
      requests: {cpu: "4", memory: 16Gi}
      limits: {nvidia.com/gpu: 1, memory: 32Gi}
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 30}
    serviceAccountName: trainer
    checkpointVolumeClaim: ddp-checkpoints
    capSysNice: true
    runPolicy:
      cleanPodPolicy: All
      activeDeadlineSeconds: 86400
      ttlSecondsAfterFinished: 600
      schedulingPolicy: {scheduleTimeoutSeconds: 120, onScheduleTimeout: Retry}
)";

TEST(JobSpecKubernetesTest, DefaultsWhenTheSectionIsAbsent) {
  auto r = parseJobSpec(spec_test::kMinimal);
  ASSERT_TRUE(r.isOk()) << r.status();
  const KubernetesSpec& k = r->kubernetes;
  EXPECT_EQ(k, KubernetesSpec{});
  EXPECT_TRUE(k.image.empty());
  EXPECT_FALSE(k.capSysNice);  // restricted Pod Security by default (Note [Worker pod security])
  EXPECT_EQ(k.runPolicy.cleanPodPolicy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(k.runPolicy.activeDeadlineSeconds.has_value());
  EXPECT_FALSE(k.runPolicy.ttlSecondsAfterFinished.has_value());
  EXPECT_EQ(k.runPolicy.schedulingPolicy.scheduleTimeoutSeconds, kDefaultScheduleTimeoutSeconds);
  EXPECT_EQ(k.runPolicy.schedulingPolicy.onScheduleTimeout, ScheduleTimeoutAction::kFail);
}

TEST(JobSpecKubernetesTest, EveryFieldParsesAndRoundTrips) {
  auto r = parseJobSpec(kGpuJob);
  ASSERT_TRUE(r.isOk()) << r.status();
  const KubernetesSpec& k = r->kubernetes;
  EXPECT_EQ(k.image, "registry.example.com/ddp:0.1.0");
  EXPECT_EQ(k.imagePullPolicy, ImagePullPolicy::kAlways);
  EXPECT_EQ(k.resources.requests.at("cpu"), "4");
  EXPECT_EQ(k.resources.requests.at("memory"), "16Gi");
  EXPECT_EQ(k.resources.limits.at("nvidia.com/gpu"), "1");
  EXPECT_EQ(k.nodeSelector.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  ASSERT_EQ(k.tolerations.size(), 2u);
  EXPECT_EQ(k.tolerations[0].op, "Exists");
  EXPECT_FALSE(k.tolerations[0].tolerationSeconds.has_value());
  EXPECT_EQ(k.tolerations[1].value, "true");
  EXPECT_EQ(k.tolerations[1].tolerationSeconds, 30);
  EXPECT_EQ(k.serviceAccountName, "trainer");
  EXPECT_EQ(k.checkpointVolumeClaim, "ddp-checkpoints");
  EXPECT_TRUE(k.capSysNice);
  EXPECT_EQ(k.runPolicy.cleanPodPolicy, CleanPodPolicy::kAll);
  EXPECT_EQ(k.runPolicy.activeDeadlineSeconds, 86400);
  EXPECT_EQ(k.runPolicy.ttlSecondsAfterFinished, 600);
  EXPECT_EQ(k.runPolicy.schedulingPolicy.scheduleTimeoutSeconds, 120);
  EXPECT_EQ(k.runPolicy.schedulingPolicy.onScheduleTimeout, ScheduleTimeoutAction::kRetry);

  const std::string yaml = r->toYaml();
  EXPECT_TRUE(contains(yaml, "kubernetes:")) << yaml;
  auto back = parseJobSpec(yaml);
  ASSERT_TRUE(back.isOk()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, *r) << yaml;
  // The defaults round-trip too (optional fields stay unset).
  auto minimal = parseJobSpec(spec_test::kMinimal);
  ASSERT_TRUE(minimal.isOk());
  auto again = parseJobSpec(minimal->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status();
  EXPECT_EQ(*again, *minimal);
}

TEST(JobSpecKubernetesTest, UnknownFieldsAndWrongTypesNameTheirPath) {
  auto errors = errorsOf(withSpec(R"(  kubernetes:
    imag: x
    resources: {request: {cpu: 1}}
    tolerations: [{key: a, operatr: Exists}]
    runPolicy: {backoffLimit: 3, schedulingPolicy: {timeout: 1}}
    capSysNice: maybe
    nodeSelector: [a]
)"));
  const SpecError* e = find(errors, "spec.kubernetes.imag");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->line, 12);
  EXPECT_TRUE(contains(e->message, "unknown field")) << e->message;
  EXPECT_TRUE(contains(e->message, "checkpointVolumeClaim")) << e->message;  // lists the allowed
  EXPECT_NE(find(errors, "spec.kubernetes.resources.request"), nullptr);
  EXPECT_NE(find(errors, "spec.kubernetes.tolerations[0].operatr"), nullptr);
  // maxRestarts is the one restart budget: Kubeflow's backoffLimit is not taken.
  EXPECT_NE(find(errors, "spec.kubernetes.runPolicy.backoffLimit"), nullptr);
  EXPECT_NE(find(errors, "spec.kubernetes.runPolicy.schedulingPolicy.timeout"), nullptr);
  e = find(errors, "spec.kubernetes.capSysNice");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "expected a boolean")) << e->message;
  EXPECT_NE(find(errors, "spec.kubernetes.nodeSelector"), nullptr);
  e = find(errors, "spec.kubernetes");  // a section of the wrong type
  EXPECT_EQ(e, nullptr);
  auto notMap = errorsOf(withSpec("  kubernetes: [1]\n"));
  EXPECT_NE(find(notMap, "spec.kubernetes"), nullptr);
}

TEST(JobSpecKubernetesTest, BadValuesAreRefusedWithTheirPath) {
  auto errors = errorsOf(withSpec(R"(  kubernetes:
    image: "bad image"
    imagePullPolicy: Sometimes
    resources:
      requests: {cpu: 4x, memory: 64Gi, example.com/fpga: "1"}
      limits: {memory: 32Gi, example.com/fpga: "2", "bad name!": 1}
    nodeSelector: {zone: "not valid!"}
    tolerations:
      - {operator: Equal, value: a}
      - {key: a, operator: Exists, value: b, tolerationSeconds: 5}
      - {key: a, operator: Maybe, effect: NoWay}
    serviceAccountName: Trainer_SA
    runPolicy:
      cleanPodPolicy: Some
      activeDeadlineSeconds: 0
      ttlSecondsAfterFinished: -1
      schedulingPolicy: {scheduleTimeoutSeconds: 0}
)"));
  const std::string p = "spec.kubernetes.";
  for (const char* path :
       {"image", "imagePullPolicy", "resources.requests[cpu]", "resources.requests[memory]",
        "resources.requests[example.com/fpga]", "resources.limits[bad name!]",
        "nodeSelector[zone]", "tolerations[0].key", "tolerations[1].value",
        "tolerations[1].tolerationSeconds", "tolerations[2].operator", "tolerations[2].effect",
        "serviceAccountName", "runPolicy.cleanPodPolicy", "runPolicy.activeDeadlineSeconds",
        "runPolicy.ttlSecondsAfterFinished", "runPolicy.schedulingPolicy.scheduleTimeoutSeconds"}) {
    const SpecError* e = find(errors, p + path);
    ASSERT_NE(e, nullptr) << p + path;
    EXPECT_GT(e->line, 10) << p + path;  // located in the document
  }
  EXPECT_TRUE(contains(find(errors, p + "resources.requests[memory]")->message, "<= its limit"));
  EXPECT_TRUE(contains(find(errors, p + "resources.requests[example.com/fpga]")->message, "equal"));
  EXPECT_TRUE(contains(find(errors, p + "resources.requests[cpu]")->message, "quantity"));
}

TEST(JobSpecKubernetesTest, OneGpuPerWorkerAndOnlyForCuda) {
  auto twoGpus = errorsOf(withSpec("  device: cuda\n  kubernetes: {resources: {limits: {nvidia.com/gpu: 2}}}\n"));
  const SpecError* e = find(twoGpus, "spec.kubernetes.resources.limits[nvidia.com/gpu]");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "one GPU")) << e->message;
  auto onCpu = errorsOf(withSpec("  kubernetes: {resources: {requests: {nvidia.com/gpu: 1}}}\n"));
  e = find(onCpu, "spec.kubernetes.resources.requests[nvidia.com/gpu]");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "spec.device is cpu")) << e->message;
  auto half = errorsOf(withSpec("  device: cuda\n  kubernetes: {resources: {limits: {nvidia.com/gpu: 500m}}}\n"));
  EXPECT_NE(find(half, "spec.kubernetes.resources.limits[nvidia.com/gpu]"), nullptr);
  EXPECT_TRUE(parseJobSpec(withSpec("  device: cuda\n  kubernetes: {resources: {limits: {nvidia.com/gpu: 1}}}\n")).isOk());
}

TEST(JobSpecKubernetesTest, CheckpointClaimNeedsACheckpointDirectory) {
  auto errors = errorsOf(withSpec("  kubernetes: {checkpointVolumeClaim: ckpt}\n"));
  const SpecError* e = find(errors, "spec.kubernetes.checkpointVolumeClaim");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "spec.checkpoint.dir")) << e->message;
  auto relative = errorsOf(withSpec("  checkpoint: {dir: ckpt}\n  kubernetes: {checkpointVolumeClaim: ckpt}\n"));
  EXPECT_NE(find(relative, "spec.kubernetes.checkpointVolumeClaim"), nullptr);
  EXPECT_TRUE(parseJobSpec(withSpec("  checkpoint: {dir: /ckpt}\n  kubernetes: {checkpointVolumeClaim: ckpt}\n")).isOk());
}

TEST(JobSpecKubernetesTest, QuantitiesReadAsKubernetesDoes) {
  struct Case { const char* text; double value; };
  for (const Case& c : {Case{"2", 2}, Case{"500m", 0.5}, Case{"16Gi", 16.0 * (1 << 30)},
                        Case{"1.5", 1.5}, Case{".5", 0.5}, Case{"1e3", 1000}, Case{"1E-3", 0.001},
                        Case{"3k", 3000}, Case{"128Mi", 128.0 * (1 << 20)}, Case{"+4", 4},
                        Case{"100n", 1e-7}, Case{"2M", 2e6}}) {
    auto q = parseKubernetesQuantity(c.text);
    ASSERT_TRUE(q.isOk()) << c.text << ": " << q.status();
    EXPECT_DOUBLE_EQ(*q, c.value) << c.text;
  }
  for (const char* bad : {"", "x", "4x", "1.2.3", "Gi", "1 Gi", "1e", "1e+", "--1", "1KiB", "."}) {
    auto q = parseKubernetesQuantity(bad);
    ASSERT_FALSE(q.isOk()) << bad;
    EXPECT_TRUE(contains(q.status().message(), "quantity")) << q.status();
  }
}

TEST(JobSpecKubernetesTest, KubernetesNames) {
  EXPECT_TRUE(isDnsSubdomain("ddp-checkpoints"));
  EXPECT_TRUE(isDnsSubdomain("a.b-c.d"));
  EXPECT_FALSE(isDnsSubdomain(""));
  EXPECT_FALSE(isDnsSubdomain("Upper"));
  EXPECT_FALSE(isDnsSubdomain("a..b"));
  EXPECT_FALSE(isDnsSubdomain("-a"));
  EXPECT_FALSE(isDnsSubdomain(std::string(254, 'a')));
  EXPECT_TRUE(isQualifiedName("nvidia.com/gpu"));
  EXPECT_TRUE(isQualifiedName("cpu"));
  EXPECT_TRUE(isQualifiedName("node.kubernetes.io/instance-type"));
  EXPECT_TRUE(isQualifiedName("Zone_A.1"));
  EXPECT_FALSE(isQualifiedName("a/b/c"));
  EXPECT_FALSE(isQualifiedName("/gpu"));
  EXPECT_FALSE(isQualifiedName("NVIDIA.com/gpu"));
  EXPECT_FALSE(isQualifiedName(std::string(64, 'a')));
}

// The parser allows exactly the keys the field table lists (job_spec_fields.h).
TEST(JobSpecKubernetesTest, FieldTableGivesTheAllowedKeys) {
  EXPECT_EQ(jobSpecFieldKeys(""),
            (std::vector<std::string>{"apiVersion", "kind", "metadata", "spec", "status"}));
  EXPECT_EQ(jobSpecFieldKeys("spec.workers"), (std::vector<std::string>{"count", "min", "max", "perPod"}));
  EXPECT_EQ(jobSpecFieldKeys("spec.kubernetes.tolerations[3]"),
            (std::vector<std::string>{"key", "operator", "value", "effect", "tolerationSeconds"}));
  EXPECT_TRUE(jobSpecFieldKeys("spec.epochs").empty());
  // Every key the table lists under spec is accepted somewhere: a document naming an unknown
  // one is refused with the allowed list taken from the table.
  auto errors = errorsOf(withSpec("  timeouts: {bogus: 1}\n"));
  const SpecError* e = find(errors, "spec.timeouts.bogus");
  ASSERT_NE(e, nullptr);
  for (const std::string& key : jobSpecFieldKeys("spec.timeouts")) {
    EXPECT_TRUE(contains(e->message, key)) << key;
  }
}

}  // namespace
}  // namespace ddp
