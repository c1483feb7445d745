// WorkerCommandPolicy (Note [Worker commands]): which spec.worker.command programs the local
// launcher may run, against real files: listed programs and folders, symbolic links resolved
// before the check, and refusals that name the field and the controller flag.
#include "controller/jobs/admission/worker_command_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace ddp::controller {
namespace {

std::string program(const std::string& path, mode_t mode = 0755) {
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(WorkerCommandPolicyTest, ByDefaultEveryCommandIsRefusedNamingTheFlag) {
  const WorkerCommandPolicy none;
  EXPECT_TRUE(none.check({}).isOk()) << "no command: ddp-worker, always allowed";
  const Status st = none.check({"/bin/true"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("spec.worker.command"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--allow-worker-command"), std::string::npos) << st.message();
  EXPECT_TRUE(WorkerCommandPolicy::allowAny().check({"/bin/true", "x"}).isOk());
  EXPECT_TRUE(WorkerCommandPolicy::allowAny().check({"relative-name"}).isOk()) << "a pod's PATH finds it";
}

TEST(WorkerCommandPolicyTest, ListedProgramsAndProgramsUnderListedFoldersAreAllowed) {
  test::TempDir dir("ddp_cmd_policy");
  ASSERT_EQ(::mkdir((dir.path() + "/bin").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir.path() + "/binary").c_str(), 0755), 0);
  const std::string inFolder = program(dir.path() + "/bin/trainer");
  const std::string listed = program(dir.path() + "/one-trainer");
  const std::string other = program(dir.path() + "/other-trainer");
  const std::string sibling = program(dir.path() + "/binary/trainer");  // "/bin" is not a prefix of "/binary"
  const WorkerCommandPolicy p({dir.path() + "/bin", listed});
  EXPECT_TRUE(p.check({inFolder, "--flag"}).isOk());
  EXPECT_TRUE(p.check({listed}).isOk());
  EXPECT_NE(p.check({other}).message().find("is not among the programs"), std::string::npos);
  EXPECT_FALSE(p.check({sibling}).isOk());
  // A link inside the folder to a program outside it is judged by its target.
  ASSERT_EQ(::symlink(other.c_str(), (dir.path() + "/bin/link").c_str()), 0);
  const Status viaLink = p.check({dir.path() + "/bin/link"});
  EXPECT_FALSE(viaLink.isOk());
  EXPECT_NE(viaLink.message().find(other), std::string::npos) << viaLink.message();
}

TEST(WorkerCommandPolicyTest, TheProgramMustBeAnAbsolutePathToAnExecutableFile) {
  test::TempDir dir("ddp_cmd_policy");
  const std::string plain = program(dir.path() + "/not-executable", 0644);
  const WorkerCommandPolicy p({dir.path()});
  EXPECT_NE(p.check({"trainer"}).message().find("spec.worker.command[0]: 'trainer' must be an absolute path"),
            std::string::npos);
  EXPECT_NE(p.check({dir.path() + "/missing"}).message().find("No such file"), std::string::npos);
  EXPECT_NE(p.check({plain}).message().find("is not an executable file"), std::string::npos);
  EXPECT_NE(p.check({dir.path()}).message().find("is not an executable file"), std::string::npos);
}

}  // namespace
}  // namespace ddp::controller
