// Note [Allowed path roots]: which directories a job may name, against real directories and
// symbolic links in a temporary folder.
#include "controller/jobs/admission/path_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "tests/support/temp_dir.h"

namespace ddp::controller {
namespace {

class PathPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir((dir_ + "/state").c_str(), 0700);
    ::mkdir((dir_ + "/state/checkpoints").c_str(), 0700);
    ::mkdir((dir_ + "/data").c_str(), 0700);
    ASSERT_EQ(::symlink("/etc", (dir_ + "/data/escape").c_str()), 0);
  }
  PathPolicy policy() const { return PathPolicy({dir_ + "/state/checkpoints", dir_ + "/data"}, dir_ + "/state"); }
  test::TempDir tmp_{"path-policy"};
  const std::string dir_ = tmp_.path();
};

TEST_F(PathPolicyTest, PathsUnderARootAreAllowed) {
  EXPECT_TRUE(policy().check("spec.checkpoint.dir", "").isOk()) << "unset";
  EXPECT_TRUE(policy().check("spec.checkpoint.dir", dir_ + "/data/run1/ckpt").isOk());
  EXPECT_TRUE(policy().check("spec.checkpoint.dir", dir_ + "/data").isOk());
  EXPECT_TRUE(policy().check("spec.checkpoint.dir", dir_ + "/state/checkpoints/job").isOk())
      << "a root the operator put inside the state dir";
}

TEST_F(PathPolicyTest, EverythingElseIsRefusedNamingTheField) {
  for (const std::string& bad : {std::string("/etc"), std::string("/"), dir_ + "/data/../state/token",
                                 dir_ + "/data/escape/cron.d", dir_ + "/database"}) {
    SCOPED_TRACE(bad);
    Status st = policy().check("spec.checkpoint.dir", bad);
    ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().rfind("spec.checkpoint.dir: ", 0), 0u) << st;
  }
  Status escape = policy().check("spec.checkpoint.dir", dir_ + "/data/escape/cron.d");
  EXPECT_NE(escape.message().find("(/etc/cron.d) is outside the directories jobs may use"), std::string::npos) << escape;
  Status relative = policy().check("spec.checkpoint.dir", "checkpoints/run");
  EXPECT_NE(relative.message().find("'checkpoints/run' is not an absolute path"), std::string::npos) << relative;
  Status state = policy().check("spec.checkpoint.dir", dir_ + "/state/jobs");
  EXPECT_NE(state.message().find("is inside the controller's state directory"), std::string::npos) << state;
}

TEST_F(PathPolicyTest, EveryDirectoryButTheStateDirWithTheRootAsRoot) {
  PathPolicy anywhere({"/"}, dir_ + "/state");
  EXPECT_TRUE(anywhere.check("spec.checkpoint.dir", "/var/tmp/mine").isOk());
  EXPECT_FALSE(anywhere.check("spec.checkpoint.dir", dir_ + "/state").isOk());
  EXPECT_TRUE(PathPolicy().check("spec.checkpoint.dir", "/anything").isOk()) << "the default: unconfined";
}

TEST(DefaultPathRootsTest, TheStateDirsCheckpointsAndTheTemporaryFolder) {
  EXPECT_EQ(defaultPathRoots("/var/lib/ddp", nullptr), (std::vector<std::string>{"/var/lib/ddp/checkpoints", "/tmp"}));
  EXPECT_EQ(defaultPathRoots("/s", "/scratch"), (std::vector<std::string>{"/s/checkpoints", "/scratch"}));
}

}  // namespace
}  // namespace ddp::controller
