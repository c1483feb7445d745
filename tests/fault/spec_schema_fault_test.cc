// A worker built from another release than its controller (Note [Validated once]): the real
// ddp-worker process, given an assignment whose specSchema is not its own, exits with the
// bad-config code (2) at once, before any rendezvous, and its final heartbeat says which two
// schema versions differ. Faked: the controller (tests/support/fake_controller.h speaks the
// worker routes' wire format); the worker is the real binary, started by this test and waited
// for by pid (killed by pid if it outlives the bound).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "tests/support/fake_controller.h"

extern char** environ;

namespace ddp {
namespace {

const char* kSpec =
    "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: schema}\n"
    "spec:\n  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 5\n";

// Starts ddp-worker against `url`; returns its pid.
pid_t startWorker(const std::string& url) {
  std::vector<std::string> args = {DDP_TEST_BIN_DIR "/ddp-worker"};
  std::vector<std::string> env = {"DDP_CONTROLLER_URL=" + url, "DDP_JOB_NAME=schema", "DDP_JOB_TOKEN=tok",
                                  "DDP_WORKER_ID=schema-w0", "PATH=/usr/bin:/bin"};
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(env);
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()), 0);
  return pid;
}

// The exit status, waiting at most `limit`; kills the process by pid (and reports -1) past it.
int waitExit(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

TEST(SpecSchemaFaultTest, AWorkerOfAnotherSpecSchemaRefusesItsAssignmentNamingBoth) {
  testing::FakeController fake("schema", "tok");
  runtime::Assignment a;
  a.rank = 0;
  a.worldSize = 1;
  a.generation = 1;
  a.specYaml = kSpec;
  a.specSchema = kJobSpecSchemaVersion + 1;
  fake.setAssignment(a);
  const pid_t pid = startWorker(fake.url());
  ASSERT_GT(pid, 0);
  EXPECT_EQ(waitExit(pid, std::chrono::seconds(30)), 2) << "the bad-config exit code";
  const auto beats = fake.heartbeats();
  ASSERT_FALSE(beats.empty()) << "a final heartbeat says why";
  const runtime::Heartbeat& last = beats.back().report;
  EXPECT_EQ(last.state, runtime::WorkerState::kFailed);
  const std::string want = "the controller sends job spec schema " + std::to_string(kJobSpecSchemaVersion + 1) +
                           " and this worker reads schema " + std::to_string(kJobSpecSchemaVersion);
  EXPECT_NE(last.message.find(want), std::string::npos) << last.message;
}

// The same worker with its own schema takes the spec and goes on (a Running heartbeat, sent once
// the spec and the trainer's config are accepted): the refusal above is the schema's. The fake
// has no store, so the worker goes no further; the test kills it by pid.
TEST(SpecSchemaFaultTest, AWorkerOfTheSameSpecSchemaAcceptsTheSpec) {
  testing::FakeController fake("schema", "tok");
  runtime::Assignment a;
  a.rank = 0;
  a.worldSize = 1;
  a.generation = 1;
  a.specYaml = kSpec;
  a.specSchema = kJobSpecSchemaVersion;
  fake.setAssignment(a);
  const pid_t pid = startWorker(fake.url());
  ASSERT_GT(pid, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool running = false;
  while (!running && std::chrono::steady_clock::now() < until) {
    for (const auto& b : fake.heartbeats()) running = running || b.report.state == runtime::WorkerState::kRunning;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(running) << "no Running heartbeat within 20 s";
}

}  // namespace
}  // namespace ddp
