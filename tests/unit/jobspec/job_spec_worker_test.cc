// spec.worker.command (docs/EXTENDING.md): parsed as a list of strings, written back by toYaml
// only when set (documents without it are unchanged), refused when it is not a list of strings
// or names no program.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;
using spec_test::jobWithSpec;

const std::string kBody = "  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 1\n";

TEST(JobSpecWorkerTest, TheCommandRoundTripsAndIsLeftOutWhenEmpty) {
  auto spec = parseJobSpec(jobWithSpec(kBody + "  worker:\n    command: [/opt/t/bin/trainer, --width, \"32\", \"a b\"]\n"));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  EXPECT_EQ(spec->worker.command, (std::vector<std::string>{"/opt/t/bin/trainer", "--width", "32", "a b"}));
  auto again = parseJobSpec(spec->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status() << "\n" << spec->toYaml();
  EXPECT_EQ(again->worker, spec->worker);
  EXPECT_EQ(*again, *spec);

  auto plain = parseJobSpec(jobWithSpec(kBody));
  ASSERT_TRUE(plain.isOk()) << plain.status();
  EXPECT_TRUE(plain->worker.command.empty());
  EXPECT_EQ(plain->toYaml().find("worker:"), std::string::npos) << plain->toYaml();
}

TEST(JobSpecWorkerTest, ACommandMustBeAListOfStringsNamingAProgram) {
  auto notList = errorsOf(jobWithSpec(kBody + "  worker:\n    command: /opt/trainer\n"));
  ASSERT_NE(find(notList, "spec.worker.command"), nullptr);
  EXPECT_TRUE(contains(find(notList, "spec.worker.command")->message, "expected a sequence of strings"));
  auto nested = errorsOf(jobWithSpec(kBody + "  worker:\n    command: [/opt/trainer, [x]]\n"));
  ASSERT_NE(find(nested, "spec.worker.command[1]"), nullptr);
  auto empty = errorsOf(jobWithSpec(kBody + "  worker:\n    command: [\"\", x]\n"));
  ASSERT_NE(find(empty, "spec.worker.command[0]"), nullptr);
  EXPECT_TRUE(contains(find(empty, "spec.worker.command[0]")->message, "must name the worker program"));
  auto unknown = errorsOf(jobWithSpec(kBody + "  worker:\n    image: x\n"));
  EXPECT_NE(find(unknown, "spec.worker.image"), nullptr);
}

}  // namespace
}  // namespace ddp
