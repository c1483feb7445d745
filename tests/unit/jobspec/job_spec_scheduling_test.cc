// spec.suspend, spec.managedBy and the gang fields of spec.kubernetes.runPolicy.schedulingPolicy
// (minAvailable, queue, priorityClass): parsed, validated with their path, round-tripped, and
// left out of toYaml() at their defaults.
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

TEST(JobSpecSchedulingTest, DefaultsAreNotWrittenOut) {
  auto r = parseJobSpec(spec_test::kMinimal);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_FALSE(r->suspend);
  EXPECT_TRUE(r->managedBy.empty());
  const SchedulingPolicySpec& sp = r->kubernetes.runPolicy.schedulingPolicy;
  EXPECT_FALSE(sp.minAvailable.has_value());
  EXPECT_TRUE(sp.queue.empty());
  EXPECT_TRUE(sp.priorityClass.empty());
  const std::string yaml = r->toYaml();
  EXPECT_FALSE(contains(yaml, "suspend")) << yaml;
  EXPECT_FALSE(contains(yaml, "managedBy")) << yaml;
  EXPECT_FALSE(contains(yaml, "minAvailable")) << yaml;
}

TEST(JobSpecSchedulingTest, ParsedAndRoundTripped) {
  auto r = parseJobSpec(withSpec(R"(  suspend: true
  managedBy: kueue.x-k8s.io/multikueue
  workers: {count: 4, min: 2, max: 8}
  kubernetes:
    runPolicy:
      schedulingPolicy: {minAvailable: 3, queue: research, priorityClass: high-priority}
)"));
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_TRUE(r->suspend);
  EXPECT_EQ(r->managedBy, "kueue.x-k8s.io/multikueue");
  const SchedulingPolicySpec& sp = r->kubernetes.runPolicy.schedulingPolicy;
  EXPECT_EQ(sp.minAvailable, 3);
  EXPECT_EQ(sp.queue, "research");
  EXPECT_EQ(sp.priorityClass, "high-priority");
  auto again = parseJobSpec(r->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status() << "\n" << r->toYaml();
  EXPECT_EQ(*again, *r);
}

TEST(JobSpecSchedulingTest, ThisControllersNameIsAValidManager) {
  auto r = parseJobSpec(withSpec(std::string("  managedBy: ") + kDdpControllerManager + "\n"));
  ASSERT_TRUE(r.isOk()) << r.status();
}

TEST(JobSpecSchedulingTest, BadValuesNameTheirField) {
  auto errors = errorsOf(withSpec(R"(  suspend: sometimes
  managedBy: no-domain
  workers: {count: 2, min: 2, max: 4}
  kubernetes:
    runPolicy:
      schedulingPolicy: {minAvailable: 5, queue: Bad_Queue, priorityClass: "high priority"}
)"));
  const SpecError* e = find(errors, "spec.suspend");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "boolean")) << e->message;
  e = find(errors, "spec.managedBy");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "domain-prefixed path")) << e->message;
  const std::string p = "spec.kubernetes.runPolicy.schedulingPolicy.";
  e = find(errors, p + "minAvailable");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "spec.workers.max (4)")) << e->message;
  EXPECT_NE(find(errors, p + "queue"), nullptr);
  EXPECT_NE(find(errors, p + "priorityClass"), nullptr);

  auto zero = errorsOf(withSpec("  kubernetes: {runPolicy: {schedulingPolicy: {minAvailable: 0}}}\n"));
  EXPECT_NE(find(zero, p + "minAvailable"), nullptr);
  std::string longName = "example.com/" + std::string(60, 'a');
  auto tooLong = errorsOf(withSpec("  managedBy: " + longName + "\n"));
  EXPECT_NE(find(tooLong, "spec.managedBy"), nullptr);
}

TEST(JobSpecSchedulingTest, MinAvailableUpToTheMostWorkers) {
  auto r = parseJobSpec(withSpec("  workers: {count: 2, min: 2, max: 4}\n"
                                 "  kubernetes: {runPolicy: {schedulingPolicy: {minAvailable: 4}}}\n"));
  ASSERT_TRUE(r.isOk()) << r.status();
}

}  // namespace
}  // namespace ddp
