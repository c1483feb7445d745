// The job name rule (common/jobspec/job_names.h, Note [Job names]): a job name must be a DNS-1035
// label short enough that every object named after it is a valid Kubernetes name; the parser
// refuses a name that breaks either rule at metadata.name, naming the rule.
#include <gtest/gtest.h>

#include <string>

#include "common/jobspec/job_names.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;

std::string jobNamed(const std::string& name) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: '" + name +
         "'}\nspec: {model: {type: mlp}, data: {dataset: synthetic}, steps: 1}\n";
}

// The oracle: the longest generated name spelled out, the last slot's pod.
std::string lastPodOf(const std::string& job) { return job + "-worker-" + std::to_string(kMaxWorkersPerJob - 1); }

TEST(JobNamesTest, TheLongestAllowedNameMakesA63CharacterPodName) {
  EXPECT_EQ(lastPodOf(std::string(kMaxJobNameLength, 'a')).size(), 63u);
  EXPECT_EQ(lastPodOf(std::string(kMaxJobNameLength + 1, 'a')).size(), 64u);
  EXPECT_TRUE(checkJobName(std::string(kMaxJobNameLength, 'a')).isOk());
  EXPECT_TRUE(parseJobSpec(jobNamed(std::string(kMaxJobNameLength, 'a'))).isOk());
}

TEST(JobNamesTest, ALongerNameIsRefusedNamingTheRule) {
  const std::string name(kMaxJobNameLength + 1, 'a');
  auto errors = errorsOf(jobNamed(name));
  const SpecError* e = find(errors, "metadata.name");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "at most 51 characters")) << e->message;
  EXPECT_TRUE(contains(e->message, lastPodOf(name))) << e->message;
  EXPECT_TRUE(contains(e->message, "got 52")) << e->message;
}

TEST(JobNamesTest, ANameStartingWithADigitIsRefusedAsNoDns1035Label) {
  auto errors = errorsOf(jobNamed("7up"));
  const SpecError* e = find(errors, "metadata.name");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "DNS-1035")) << e->message;
  EXPECT_TRUE(contains(e->message, "starting with a letter")) << e->message;
  EXPECT_TRUE(parseJobSpec(jobNamed("up7")).isOk());
}

TEST(JobNamesTest, DnsLabelForms) {
  for (const char* ok : {"a", "a-1", "abc9"}) {
    EXPECT_TRUE(isDns1035Label(ok)) << ok;
    EXPECT_TRUE(isDns1123Label(ok)) << ok;
  }
  EXPECT_FALSE(isDns1035Label("1a"));
  EXPECT_TRUE(isDns1123Label("1a"));
  for (const char* bad : {"", "-a", "a-", "A", "a_b", "a.b"}) {
    EXPECT_FALSE(isDns1035Label(bad)) << bad;
    EXPECT_FALSE(isDns1123Label(bad)) << bad;
  }
  EXPECT_TRUE(isDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(isDns1123Label(std::string(64, 'a')));
}

}  // namespace
}  // namespace ddp
