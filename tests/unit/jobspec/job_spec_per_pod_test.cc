// spec.workers.perPod and the pod fields beside it (spec.kubernetes.shmSize, hostNetwork,
// hostIPC): parsed, emitted, and refused where the pods could not be built (Note [Several ranks
// per pod] in worker/control/pod_supervisor.h): count, min and max whole pods, a GPU per rank.
#include <gtest/gtest.h>

#include <string>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;
using spec_test::withSpec;

TEST(JobSpecPerPodTest, FieldsParseAndRoundTrip) {
  auto spec = parseJobSpec(withSpec("  workers: {count: 8, min: 4, max: 16, perPod: 4}\n"
                                    "  device: cuda\n"
                                    "  kubernetes: {shmSize: 8Gi, hostNetwork: true, hostIPC: true,\n"
                                    "               resources: {limits: {nvidia.com/gpu: 4}}}\n"));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  EXPECT_EQ(spec->workers.perPod, 4);
  EXPECT_EQ(spec->kubernetes.shmSize, "8Gi");
  EXPECT_TRUE(spec->kubernetes.hostNetwork);
  EXPECT_TRUE(spec->kubernetes.hostIPC);
  auto again = parseJobSpec(spec->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status() << spec->toYaml();
  EXPECT_EQ(*again, *spec);
}

TEST(JobSpecPerPodTest, DefaultsAreOneRankPerPodAndNoHostNamespaces) {
  auto spec = parseJobSpec(withSpec(""));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  EXPECT_EQ(spec->workers.perPod, 1);
  EXPECT_EQ(spec->kubernetes.shmSize, "");
  EXPECT_FALSE(spec->kubernetes.hostNetwork);
  EXPECT_FALSE(spec->kubernetes.hostIPC);
}

TEST(JobSpecPerPodTest, CountMinAndMaxMustBeWholePods) {
  auto errors = errorsOf(withSpec("  workers: {count: 6, min: 3, max: 9, perPod: 2}\n"));
  for (const std::string path : {"spec.workers.min", "spec.workers.max"}) {
    const SpecError* e = find(errors, path);
    ASSERT_NE(e, nullptr) << path;
    EXPECT_TRUE(contains(e->message, "multiple of spec.workers.perPod (2 ranks per pod")) << e->message;
    EXPECT_EQ(e->line, 11) << e->toString();
  }
  EXPECT_EQ(find(errors, "spec.workers.count"), nullptr);  // 6 is three pods
  auto count = errorsOf(withSpec("  workers: {count: 5, perPod: 2}\n"));
  const SpecError* e = find(count, "spec.workers.count");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "got 5")) << e->message;
}

TEST(JobSpecPerPodTest, PerPodIsBounded) {
  const auto zero = errorsOf(withSpec("  workers: {count: 2, perPod: 0}\n"));
  EXPECT_NE(find(zero, "spec.workers.perPod"), nullptr);
  const auto many = errorsOf(withSpec("  workers: {count: 130, perPod: 65}\n"));
  EXPECT_NE(find(many, "spec.workers.perPod"), nullptr);
}

TEST(JobSpecPerPodTest, ANamedGpuCountMustBeOnePerRankOfThePod) {
  const std::string pods = "  workers: {count: 8, perPod: 4}\n  device: cuda\n";
  auto one = errorsOf(withSpec(pods + "  kubernetes: {resources: {limits: {nvidia.com/gpu: 1}}}\n"));
  const SpecError* e = find(one, "spec.kubernetes.resources.limits[nvidia.com/gpu]");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "must be 4, spec.workers.perPod")) << e->message;
  EXPECT_TRUE(parseJobSpec(withSpec(pods + "  kubernetes: {resources: {limits: {nvidia.com/gpu: 4}}}\n")).isOk());
  EXPECT_TRUE(parseJobSpec(withSpec(pods)).isOk());  // none named: the launcher asks for 4
}

TEST(JobSpecPerPodTest, ShmSizeMustBeAPositiveQuantity) {
  // The errors are kept: find() points into the vector it is given.
  const auto lots = errorsOf(withSpec("  kubernetes: {shmSize: lots}\n"));
  ASSERT_NE(find(lots, "spec.kubernetes.shmSize"), nullptr);
  const auto zero = errorsOf(withSpec("  kubernetes: {shmSize: \"0\"}\n"));
  const SpecError* e = find(zero, "spec.kubernetes.shmSize");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "> 0")) << e->message;
  EXPECT_TRUE(parseJobSpec(withSpec("  kubernetes: {shmSize: 512Mi}\n")).isOk());
}

}  // namespace
}  // namespace ddp
