#pragma once
// The fault tests' harness: an in-process ddp-controller (the real service code: HTTP API,
// SQLite job table, local launcher) whose local launcher starts real ddp-worker processes over
// loopback, and helpers to wait on the job's record and events. Faults are real signals sent by
// PID to worker processes this harness's controller started (or that startWorker started: the
// external launcher, where the test plays the launcher; startWorker can prefix the command, as
// `ip netns exec NS`, which execs the worker in place). finalModel reads a run's final
// parameters from its checkpoints; runWithFault runs a job with one signal sent mid-run.
// Cleanup: the destructor SIGCONTs every worker it stopped (while the process is still the one
// it stopped: same start time), stops the controller, SIGKILLs every worker process named in
// the launcher's pid files and every worker it started itself (reaping them); then removes the
// temporary directory.
// Thread model: the test's thread only.

#include <dirent.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/checkpoint/checkpoint_store.h"
#include "common/jobspec/job_spec.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/pid_file.h"
#include "controller/service/controller.h"
#include "tests/support/launcher_pid_files.h"
#include "tests/support/temp_dir.h"

namespace ddp::test {

inline const std::string kFaultBin = DDP_TEST_BIN_DIR;

// Start time of a live process (Note [Pid files and process identity]); 0 when it is gone.
inline int64_t processStartTime(int64_t pid) {
  auto st = controller::readProcStat(pid);
  return st.isOk() && st->alive() ? st->startTime : 0;
}

// The model section of `rank`'s shard in the newest complete checkpoint in `dir` (a run's final
// one), and its step in *step; "" when there is none or it cannot be read. Runs that end with
// the same parameters have equal sections (byte for byte).
inline std::string finalModel(const std::string& dir, int64_t* step, int rank = 0) {
  runtime::CheckpointStore store(dir);
  auto latest = store.findLatestComplete();
  if (!latest.isOk() || !latest->manifest) return "";
  *step = latest->manifest->step;
  auto shard = store.readShard(*latest->manifest, rank);
  if (!shard.isOk()) return "";
  auto model = shard->section("model");
  return model.isOk() ? std::string(*model) : "";
}

class FaultHarness {
 public:
  // `launcher`: "local" (the controller starts the workers) or "external" (startWorker does).
  // `listenHost`: where the controller listens ("0.0.0.0": every address of this namespace).
  // `stopGrace`: how long a stopping job's workers get before SIGTERM/SIGKILL. `configure`
  // changes the rest of the controller's configuration.
  explicit FaultHarness(const std::string& launcher = "local", const std::string& listenHost = "127.0.0.1",
                        Duration stopGrace = std::chrono::seconds(5),
                        const std::function<void(controller::ControllerConfig&)>& configure = nullptr) {
    controller::ControllerConfig c;
    c.listenHost = listenHost;
    c.listenPort = 0;
    c.stateDir = dir_ + "/state";
    c.workerBinary = kFaultBin + "/ddp-worker";
    c.persistEvery = std::chrono::milliseconds(200);
    c.stopGrace = stopGrace;
    c.logLevel = log::Level::kWarning;
    c.launcher = launcher;
    if (configure) configure(c);
    auto started = controller::Controller::start(c);
    if (started.isOk()) {
      controller_ = std::move(*started);
    } else {
      startError_ = started.status().toString();
    }
  }
  ~FaultHarness() {
    for (const auto& [pid, start] : stopped_) {
      if (processStartTime(pid) == start) ::kill(static_cast<pid_t>(pid), SIGCONT);
    }
    if (controller_) controller_->stop();
    killLauncherWorkers(dir_ + "/state");
    for (pid_t pid : started_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    // DDP_TEST_KEEP_DIR=1 keeps the directory (controller state, every worker's log) to debug a
    // failed run.
    const char* keep = std::getenv("DDP_TEST_KEEP_DIR");
    if (keep != nullptr && std::string(keep) == "1") {
      tempDir_.keep();
      std::fprintf(stderr, "FaultHarness: kept %s (DDP_TEST_KEEP_DIR=1)\n", dir_.c_str());
    }
  }

  bool ok() const { return controller_ != nullptr; }
  const std::string& startError() const { return startError_; }
  const std::string& dir() const { return dir_; }
  int port() const { return controller_->port(); }
  int workerPort() const { return controller_->workerPort(); }  // Note [Two listeners]
  controller::JobManager& jobs() { return controller_->jobs(); }
  controller::Controller& controller() { return *controller_; }

  Status submit(const std::string& yaml) {
    DDP_ASSIGN_OR_RETURN(JobSpec spec, parseJobSpec(yaml));
    return jobs().submit(spec).status();
  }
  controller::JobRecord record(const std::string& job) {
    auto r = jobs().get(job);
    return r.isOk() ? *r : controller::JobRecord{};
  }
  std::vector<controller::JobEvent> events(const std::string& job) {
    auto e = jobs().events(job);
    return e.isOk() ? *e : std::vector<controller::JobEvent>{};
  }
  // The first event with `reason` (nullptr when none yet).
  std::unique_ptr<controller::JobEvent> event(const std::string& job, const std::string& reason) {
    for (const auto& e : events(job)) {
      if (e.reason == reason) return std::make_unique<controller::JobEvent>(e);
    }
    return nullptr;
  }
  std::string describeEvents(const std::string& job) {
    std::string out;
    for (const auto& e : events(job)) out += "  " + e.type + " " + e.reason + ": " + e.message + "\n";
    return out;
  }
  // Polls `pred` every 50 ms until it holds or `seconds` pass.
  bool waitFor(double seconds, const std::function<bool()>& pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pred();
  }
  bool waitPhase(const std::string& job, const std::string& phase, double seconds) {
    return waitFor(seconds, [&] { return controller::jobPhaseName(record(job).phase) == phase; });
  }
  // Waits until the job's rank 0 has stepped past `step` with every rank running; false when the
  // job ended or `seconds` passed first.
  bool waitTraining(const std::string& job, int64_t step, double seconds) {
    bool running = false;
    waitFor(seconds, [&] {
      auto r = record(job);
      running = r.phase == controller::JobPhase::kRunning && r.progress.step > step;
      return running || controller::isTerminal(r.phase);
    });
    return running;
  }
  // The pid of the worker holding `rank` in the job's record (0 when none).
  int64_t pidOfRank(const std::string& job, int rank) {
    for (const auto& w : record(job).workers) {
      if (w.rank == rank) return w.pid;
    }
    return 0;
  }
  // How startWorker starts a worker; the defaults start it as the local launcher would.
  struct WorkerStart {
    std::vector<std::string> prefix;  // argv before the worker binary (`ip netns exec NS`: it execs)
    std::string controllerUrl;        // empty: the controller's worker URL
    std::string advertiseAddress;     // empty: the worker's default (127.0.0.1)
    std::string logName;              // empty: the worker id (DIR/<logName>.log)
  };
  // External launcher: starts ddp-worker `workerId` of `job` as this process's child (output
  // appended to DIR/<workerId>.log). Returns its pid. Everything the child needs is built before
  // the fork: the controller's threads run in this process, so the child only redirects and execs.
  pid_t startWorker(const std::string& job, const std::string& workerId, const WorkerStart& how = {}) {
    const std::string log = dir_ + "/" + (how.logName.empty() ? workerId : how.logName) + ".log";
    std::vector<std::string> args = how.prefix;
    args.push_back(kFaultBin + "/ddp-worker");
    std::vector<std::string> env = {
        "DDP_CONTROLLER_URL=" + (how.controllerUrl.empty() ? controller_->workerUrl() : how.controllerUrl),
        "DDP_JOB_NAME=" + job, "DDP_JOB_TOKEN=" + record(job).workerToken, "DDP_WORKER_ID=" + workerId};
    if (!how.advertiseAddress.empty()) env.push_back("DDP_ADVERTISE_ADDR=" + how.advertiseAddress);
    const size_t set = env.size();  // this process's environment, less the names set above
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const std::string_view name = entry.substr(0, entry.find('=') + 1);  // "NAME="
      bool overridden = false;
      for (size_t i = 0; i < set; ++i) overridden = overridden || env[i].starts_with(name);
      if (!overridden) env.emplace_back(entry);
    }
    auto pointers = [](std::vector<std::string>& strings) {
      std::vector<char*> out;
      for (auto& s : strings) out.push_back(s.data());
      out.push_back(nullptr);
      return out;
    };
    std::vector<char*> argv = pointers(args);
    std::vector<char*> envp = pointers(env);
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execvpe(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    if (pid > 0) started_.push_back(pid);
    return pid;
  }
  // Waits (bounded) for a child started by startWorker; its exit status, or -1 if still running.
  int waitWorker(pid_t pid, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        std::erase(started_, pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  // The world sizes of the job's generations, in order (its RendezvousClosed events).
  std::vector<int> generationSizes(const std::string& job) {
    std::vector<int> out;
    for (const auto& e : events(job)) {
      if (e.reason != "RendezvousClosed") continue;
      const auto with = e.message.find(" with ");
      if (with != std::string::npos) out.push_back(std::stoi(e.message.substr(with + 6)));
    }
    return out;
  }
  // The log of a worker the controller's local launcher started (its output: progress lines).
  std::string launchedWorkerLog(const std::string& job, const std::string& workerId) {
    std::ifstream in(dir_ + "/state/jobs/" + job + "/logs/" + workerId + ".log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string workerLog(const std::string& workerId) {
    std::ifstream in(dir_ + "/" + workerId + ".log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // Sends `sig` to a worker process of this harness's job by PID; remembers SIGSTOPs for cleanup.
  void signal(int64_t pid, int sig) {
    if (pid <= 0) return;
    if (sig == SIGSTOP) stopped_.emplace_back(pid, processStartTime(pid));
    ::kill(static_cast<pid_t>(pid), sig);
  }

 private:
  TempDir tempDir_{"ddp-fault"};  // removed after every member below is gone
  const std::string dir_ = tempDir_.path();
  std::string startError_;
  std::unique_ptr<controller::Controller> controller_;
  std::vector<std::pair<int64_t, int64_t>> stopped_;  // (pid, start time)
  std::vector<pid_t> started_;  // children started by startWorker, not yet reaped
};

// One run of the job `name` (`yaml`, checkpointing to `checkpointDir`) with `sig` sent to the
// worker of `rank` (of 2) once rank 0 has stepped past `afterStep`: SIGKILL, a dead worker
// (verdict Exited); SIGSTOP, a hung one (Unresponsive; the recovery kills the stopped process).
// Expects the job to recover once, keeping the other worker's process and replacing the
// faulty one, and to succeed within `seconds`. Returns the model of its final checkpoint and
// that checkpoint's step (finalModel).
inline std::string runWithFault(FaultHarness& h, const std::string& name, const std::string& yaml,
                                const std::string& checkpointDir, int rank, int sig, int64_t afterStep,
                                double seconds, int64_t* step) {
  EXPECT_TRUE(h.submit(yaml).isOk());
  EXPECT_TRUE(h.waitTraining(name, afterStep, seconds)) << h.describeEvents(name);
  const int64_t other = h.pidOfRank(name, 1 - rank);
  const int64_t victim = h.pidOfRank(name, rank);
  EXPECT_GT(victim, 0);
  h.signal(victim, sig);
  EXPECT_TRUE(h.waitPhase(name, "Succeeded", seconds)) << h.describeEvents(name);
  auto verdict = h.event(name, sig == SIGKILL ? "Exited" : "Unresponsive");
  EXPECT_NE(verdict, nullptr) << h.describeEvents(name);
  if (verdict) {
    const std::string who = sig == SIGKILL ? "worker rank " + std::to_string(rank) + " killed by signal 9"
                                           : "worker rank " + std::to_string(rank) + " (" + name + "-w";
    EXPECT_NE(verdict->message.find(who), std::string::npos) << verdict->message;
  }
  EXPECT_NE(h.event(name, "Recovered"), nullptr) << h.describeEvents(name);
  EXPECT_EQ(h.pidOfRank(name, 1 - rank), other) << "the survivor kept its process";
  EXPECT_EQ(processStartTime(victim), 0) << "the faulty worker was killed and replaced";
  EXPECT_EQ(h.record(name).restarts, 1);
  return finalModel(checkpointDir, step);
}

// A short synthetic job with the fault-test timeouts (heartbeat 1 s x 3, hang 5 s).
// Steps of a fault job that a test acts on while it runs (waitTraining, then a signal): the
// controller learns the step from heartbeats (every 1 s here), and on an idle machine the job
// does over 1000 steps a second, so a job of a few thousand steps could end between two reports.
inline constexpr int64_t kMidRunSteps = 6000;

inline std::string faultJobYaml(const std::string& name, const std::string& checkpointDir, int64_t steps,
                                int maxRestarts, const std::string& extraSpec = "") {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name +
         "\nspec:\n"
         "  workers:\n    count: 2\n"
         "  model:\n    type: mlp\n    hidden: [32]\n"
         "  data:\n    dataset: synthetic\n    batchSize: 16\n"
         "    synthetic:\n      samples: 4096\n      features: 32\n      classes: 4\n"
         "  optimizer:\n    type: sgd\n    lr: 0.05\n    momentum: 0.9\n"
         "  steps: " + std::to_string(steps) + "\n  seed: 11\n  maxRestarts: " + std::to_string(maxRestarts) +
         "\n  checkpoint:\n    dir: " + checkpointDir + "\n    everySteps: 20\n    keep: 2\n"
         "  timeouts:\n    heartbeatSeconds: 1\n    heartbeatMisses: 3\n    hangSeconds: 5\n"
         "    collectiveSeconds: 30\n    lastCallSeconds: 1\n" +
         extraSpec;
}

}  // namespace ddp::test
