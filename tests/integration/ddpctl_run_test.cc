// `ddpctl run` end to end with real processes: the ddpctl and ddp-worker binaries, the HTTP
// store, Gloo over loopback, real files. Nothing is faked. Jobs are kept short (a subset of
// Fashion-MNIST or synthetic data); the full-length README runs are opt-in (DDP_LONG_TESTS=1,
// see ddpctl_long_test.cc).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tests/integration/cli_process.h"
#include "common/checkpoint/atomic_file.h"
#include "common/checkpoint/checkpoint_store.h"
#include "common/usable_cores.h"
#include "worker/control/launch_env.h"
#include "tests/support/temp_dir.h"

namespace ddp {
namespace {

const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ddpctl_test") {}
};

std::string header(const std::string& name) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name + "}\nspec:\n";
}

// A synthetic job long enough to be interrupted (hundreds of steps), short enough for CI.
std::string syntheticJob(const std::string& name, const std::string& ckptDir, int epochs = 2) {
  return header(name) +
         "  workers: {count: 2}\n"
         "  model: {type: mlp, hidden: [128, 128]}\n"
         "  data:\n"
         "    dataset: synthetic\n"
         "    batchSize: 16\n"
         "    synthetic: {samples: 6400, features: 784, classes: 10, separation: 3.0}\n"
         "  optimizer: {type: adam, lr: 0.001, schedule: {type: cosine, warmupSteps: 20}}\n"
         "  epochs: " + std::to_string(epochs) + "\n"
         "  seed: 5\n"
         "  checkpoint: {dir: " + ckptDir + ", everySteps: 100, keep: 5}\n";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(DdpctlCliTest, HelpAndControllerCommands) {
  auto help = test::runCli({kDdpctl, "--help"}, 10);
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_TRUE(contains(help.out, "run JOB.yaml"));
  auto runHelp = test::runCli({kDdpctl, "run", "--help"}, 10);
  EXPECT_EQ(runHelp.exitCode, 0);
  EXPECT_TRUE(contains(runHelp.out, "--log-format"));
  // Client commands need a controller: an unreachable one is named as such, quickly.
  auto submit = test::runCli({kDdpctl, "get", "--server", "http://127.0.0.1:1", "--timeout", "2"}, 20);
  EXPECT_EQ(submit.exitCode, 1);
  EXPECT_TRUE(contains(submit.err, "cannot reach the controller at http://127.0.0.1:1")) << submit.err;
  auto unknown = test::runCli({kDdpctl, "run", "job.yaml", "--bogus"}, 10);
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown option '--bogus'"));
}

TEST(DdpctlCliTest, BadJobsExitNonZeroNamingTheField) {
  TempDir dir;
  const std::string body = "  model: {type: mlp}\n  data: {dataset: synthetic}\n";
  struct Case {
    const char* what;
    std::string yaml;
    std::string expect;
  };
  const Case cases[] = {
      {"syntax", header("bad") + body + "  epochs: [1\n", "YAML syntax error"},
      {"type", header("bad") + body + "  epochs: many\n", "spec.epochs (line 7, column 11): expected an integer"},
      {"unknown field", header("bad") + body + "  epochs: 1\n  optimiser: {lr: 0.1}\n", "spec.optimiser"},
      {"combination", header("bad") + body + "  epochs: 1\n  zero: dfa\n  optimizer: {type: sgd}\n", "spec.zero"},
      {"missing dataset", header("bad") + "  model: {type: mlp}\n  data: {dataset: fashion-mnist, dir: " +
                              dir.path() + "/nothing-here}\n  epochs: 1\n",
       "dataset-fashion-mnist"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = test::runCli({kDdpctl, "run", dir.write("job.yaml", c.yaml)}, 30);
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, c.expect)) << r.err;
    EXPECT_FALSE(contains(r.err, "starting")) << "no worker may start for an invalid job";
  }
}

// The README job's model and optimizer for 2 epochs on the full data set, with JSON lines.
TEST(DdpctlRunTest, ReadmeMlpTwoEpochsReportsAccuracyInJson) {
  TempDir dir;
  const std::string job = header("readme-short") +
                          "  workers: {count: 2}\n"
                          "  model: {type: mlp, hidden: [256, 256]}\n"
                          "  data: {dataset: fashion-mnist, batchSize: 64}\n"
                          "  optimizer: {type: adam, lr: 0.001, schedule: {type: cosine}}\n"
                          "  epochs: 2\n  seed: 1\n";
  auto r = test::runCli({kDdpctl, "run", dir.write("job.yaml", job), "--log-format", "json"}, 120);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  int evals = 0;
  for (const auto& line : r.outLines()) {
    ASSERT_EQ(line.front(), '{') << "stdout carries only JSON lines in json mode: " << line;
    if (contains(line, "\"event\":\"eval\"")) {
      ++evals;
      EXPECT_TRUE(contains(line, "\"test_accuracy\":"));
    }
  }
  EXPECT_EQ(evals, 2);
  const double acc = test::lastJsonNumber(r, "done", "test_accuracy");
  EXPECT_GE(acc, 0.865) << "2 epochs of the README job";
  EXPECT_GT(test::lastJsonNumber(r, "summary", "samples_per_s"), 0);
  std::printf("README MLP, 2 workers, 2 epochs: test accuracy %.4f, ddpctl wall time %.1f s\n", acc, r.seconds);
}

std::string modelBytes(const std::string& ckptDir, int rank) {
  runtime::CheckpointStore store(ckptDir);
  auto latest = store.findLatestComplete();
  EXPECT_TRUE(latest.isOk());
  if (!latest.isOk() || !latest->manifest) return "";
  auto shard = store.readShard(*latest->manifest, rank);
  EXPECT_TRUE(shard.isOk());
  if (!shard.isOk()) return "";
  auto m = shard->section("model");
  return m.isOk() ? std::string(*m) : "";
}

// SIGTERM to ddpctl mid-run: every worker checkpoints the same step and exits; running the same
// command again resumes and ends with parameters bitwise equal to an uninterrupted run. Then a
// corrupted newest checkpoint makes the rerun fall back to the previous one, still bitwise equal.
// Eight epochs (1600 steps of well under a millisecond; the stop lands 60-150 steps after the
// signal on an idle machine): the signal, sent at step 250, must land before the run ends (with
// two epochs, 150 steps after it, a loaded machine sometimes finished first).
TEST(DdpctlRunTest, SigtermThenRerunResumesBitwiseAndSkipsCorruptCheckpoint) {
  TempDir dir;
  const std::string refCkpt = dir.path() + "/ref", ckpt = dir.path() + "/run";
  constexpr int kEpochs = 8;
  auto ref = test::runCli({kDdpctl, "run", dir.write("ref.yaml", syntheticJob("resume", refCkpt, kEpochs))}, 120);
  ASSERT_EQ(ref.exitCode, 0) << ref.err;

  const std::string job = dir.write("run.yaml", syntheticJob("resume", ckpt, kEpochs));
  bool sent = false;
  auto stopped = test::runCli({kDdpctl, "run", job}, 120, [&](pid_t pid, const std::string& line) {
    if (!sent && contains(line, "step 250/")) {
      ::kill(pid, SIGTERM);
      sent = true;
    }
  });
  ASSERT_TRUE(sent);
  EXPECT_EQ(stopped.exitCode, 128 + SIGTERM) << stopped.err;
  EXPECT_TRUE(contains(stopped.out, "stopped at step")) << stopped.out;
  EXPECT_TRUE(contains(stopped.err, "run the same command again to resume")) << stopped.err;
  runtime::CheckpointStore store(ckpt);
  auto latest = store.findLatestComplete(2);
  ASSERT_TRUE(latest.isOk() && latest->manifest.has_value());
  const int64_t stopStep = latest->manifest->step;
  EXPECT_GT(stopStep, 250);
  EXPECT_LT(stopStep, 1200);  // mid-run
  std::cout << "stopped at step " << stopStep << " of 1600 (signal at step 250)\n";

  // Damage the stop checkpoint: the rerun must report it and fall back to step 200.
  {
    auto data = runtime::readFile(store.shardPath(stopStep, 1));
    ASSERT_TRUE(data.isOk());
    std::string d = *data;
    d[d.size() / 2] ^= 0x11;
    ASSERT_TRUE(runtime::writeFileAtomic(store.shardPath(stopStep, 1), d).isOk());
  }
  auto resumed = test::runCli({kDdpctl, "run", job}, 120);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "skipping checkpoint step " + std::to_string(stopStep))) << resumed.err;
  EXPECT_TRUE(contains(resumed.out, "resumed from")) << resumed.out;
  EXPECT_TRUE(contains(resumed.out, "at step " + std::to_string((stopStep - 1) / 100 * 100))) << resumed.out;
  for (int r = 0; r < 2; ++r) {
    const std::string a = modelBytes(refCkpt, r), b = modelBytes(ckpt, r);
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "rank " << r << ": resumed parameters differ from the uninterrupted run";
  }
}

// --time-limit stops the job like SIGTERM does: every worker checkpoints, ddpctl exits 124.
TEST(DdpctlRunTest, TimeLimitStopsWithACheckpoint) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  auto r = test::runCli({kDdpctl, "run", dir.write("job.yaml", syntheticJob("limited", ckpt, 200)), "--time-limit", "3"}, 60);
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_TRUE(contains(r.err, "time limit")) << r.err;
  runtime::CheckpointStore store(ckpt);
  auto latest = store.findLatestComplete(2);
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value()) << "the stop wrote a complete checkpoint";
  EXPECT_TRUE(contains(r.out, "stopped at step " + std::to_string(latest->manifest->step))) << r.out;
}

// The worker of `ddpctl` whose launcher slot (= rank in a fresh job) is `rank`: a child of any
// of ddpctl's threads (the launcher forks from its own thread) with DDP_WORKER_ID <job>-w<rank>.
pid_t workerPid(pid_t ddpctl, const std::string& job, int rank) {
  const std::string tasks = "/proc/" + std::to_string(ddpctl) + "/task";
  DIR* d = ::opendir(tasks.c_str());
  if (d == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = ::readdir(d)) {
    std::ifstream in(tasks + "/" + e->d_name + "/children");
    pid_t child;
    while (found < 0 && in >> child) {
      std::ifstream env("/proc/" + std::to_string(child) + "/environ");
      std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
      if (all.find("DDP_WORKER_ID=" + job + "-w" + std::to_string(rank) + '\0') != std::string::npos) found = child;
    }
  }
  ::closedir(d);
  return found;
}

// With no restarts left (spec.maxRestarts: 0) a dead worker fails the run: the rank and its last
// lines are reported and the others stop. (With restarts left the job recovers in-process:
// tests/fault/recovery_fault_test.cc.)
TEST(DdpctlRunTest, DeadWorkerWithNoRestartsLeftIsReportedAndTheOthersStop) {
  TempDir dir;
  // Eight epochs (1600 steps): the kill at step 100 must land well before the run could end.
  const std::string job = dir.write("job.yaml", syntheticJob("crash", dir.path() + "/ckpt", 8) + "  maxRestarts: 0\n");
  bool killed = false;
  auto r = test::runCli({kDdpctl, "run", job, "--grace", "10"}, 120, [&](pid_t pid, const std::string& line) {
    if (!killed && contains(line, "step 100/")) {
      pid_t w = workerPid(pid, "crash", 1);
      ASSERT_GT(w, 0);
      ::kill(w, SIGKILL);
      killed = true;
    }
  });
  ASSERT_TRUE(killed);
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "worker rank 1 killed by signal 9")) << r.err;
  EXPECT_TRUE(contains(r.err, "last ")) << r.err;
  EXPECT_TRUE(contains(r.err, "lines of rank 1:")) << r.err;
  EXPECT_LT(r.seconds, 60);
}

TEST(DdpctlRunTest, UnevenInputsWithJoinFinishAndThrowModeStopsEveryone) {
  TempDir dir;
  const std::string base = header("uneven") +
                           "  workers: {count: 2}\n"
                           "  model: {type: mlp, hidden: [64]}\n"
                           "  data:\n"
                           "    dataset: synthetic\n"
                           "    batchSize: 16\n"
                           "    synthetic: {samples: 2000, features: 784, classes: 10}\n"
                           "    uneven: {enabled: true, counts: [1200, 800]}\n"
                           "  optimizer: {type: sgd, lr: 0.05}\n"
                           "  epochs: 1\n";
  auto ok = test::runCli({kDdpctl, "run", dir.write("join.yaml", base + "  join: {enabled: true}\n")}, 60);
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_TRUE(contains(ok.out, "test accuracy")) << ok.out;
  auto thrown = test::runCli(
      {kDdpctl, "run", dir.write("throw.yaml", base + "  join: {enabled: true, throwOnEarlyTermination: true}\n")}, 60);
  EXPECT_EQ(thrown.exitCode, 1) << thrown.err;
  EXPECT_TRUE(contains(thrown.err, "last error")) << thrown.err;
  EXPECT_TRUE(contains(thrown.err, "throwOnEarlyTermination")) << thrown.err;
}

// Note [Comm thread priority]: with more compute threads than cores, ddpctl asks the workers
// for normal-priority comm threads (and says so) unless the job chose; the job still trains.
TEST(DdpctlRunTest, MoreComputeThreadsThanCoresGetsNormalCommPriorityUnlessTheJobChose) {
  const int threads = std::min(256, usableCores());  // 2 workers x threads > cores
  TempDir dir;
  const std::string base = header("prio") +
                           "  workers: {count: 2}\n"
                           "  threadsPerWorker: " + std::to_string(threads) + "\n"
                           "  model: {type: mlp, hidden: [32]}\n"
                           "  data:\n"
                           "    dataset: synthetic\n"
                           "    batchSize: 16\n"
                           "    synthetic: {samples: 512, features: 784, classes: 10}\n"
                           "  optimizer: {type: sgd, lr: 0.05}\n"
                           "  epochs: 1\n";
  const std::string notice = "communication threads at normal priority";
  auto autoRun = test::runCli({kDdpctl, "run", dir.write("auto.yaml", base)}, 60);
  EXPECT_EQ(autoRun.exitCode, 0) << autoRun.err;
  EXPECT_TRUE(contains(autoRun.out + autoRun.err, notice)) << autoRun.out << autoRun.err;
  auto chosen = test::runCli({kDdpctl, "run", dir.write("rt.yaml", base + "  commThreadPriority: realtime\n")}, 60);
  EXPECT_EQ(chosen.exitCode, 0) << chosen.err;
  EXPECT_FALSE(contains(chosen.out + chosen.err, notice)) << chosen.out << chosen.err;
}

}  // namespace
}  // namespace ddp
