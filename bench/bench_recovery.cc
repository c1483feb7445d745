// bench_recovery: how fast a job recovers in-process from a hung or killed worker (Note
// [Recovery] in controller/jobs/job_manager.h) and changes its size (docs/ELASTIC.md), on the
// README's MLP job (examples/fashion-mnist.yaml) with heartbeatSeconds 1, heartbeatMisses 3,
// hangSeconds 5, lastCallSeconds 2 and a checkpoint every --checkpoint-every steps.
//
//   build/bin/bench_recovery [--json] [--workers 2,4] [--repeats 3] [--scenarios hang,kill,shrink,grow]
//                            [--checkpoint-every 100] [--fault-at 0.4] [--worker-bin PATH]
//                            [--job examples/fashion-mnist.yaml]
// --job: the job file (e.g. examples/powersgd.yaml: PowerSGD's state across the changes).
//
// Each run is one job on a fresh in-process controller (the service's code path, local
// launcher, real ddp-worker processes). Once rank 0 has passed --fault-at of the job's steps,
// the bench sends the fault to rank 1 by PID: `hang` SIGSTOPs it, `kill` SIGKILLs it; `shrink`
// SIGKILLs it with the launcher's replacement held back in a job of workers min N-1, max N (the
// next generation goes on with N-1 after the last call); `grow` runs a job of N-1 workers (max
// N) and scales it to N (the new worker joins late, the generation ends for it). Per run, one
// JSON line:
//   {"bench":"recovery","scenario","workers","detect_s","resume_s","lost_steps",
//    "restarted_healthy","final_test_accuracy","baseline_test_accuracy","accuracy_delta_points",
//    "restarts","reason"}
//  - detect_s: from the signal to the controller's verdict event (Unresponsive / Exited; 0 for
//    grow: nothing to detect);
//  - resume_s: from the verdict (grow: the generation's end) to every rank of the new generation
//    having finished a step (the controller's Recovered / Resumed event; each worker sends its
//    heartbeat at once after its first step);
//  - lost_steps: the steps redone, as the controller's Recovered event gives them (the highest
//    step a member had reported minus the step the new generation resumed at: a survivor's own
//    state, Note [Healing from live peers], or the last committed checkpoint);
//  - restarted_healthy: worker processes other than the faulted one whose PID changed;
//  - baseline_test_accuracy: a run of the same job without a fault or a change (one per worker
//    count; for grow, of its N - 1 workers: the global batch it keeps).
// Targets (issues): hang detect <= 5 s and resume <= 2 s; kill detect <= 1 s and resume <= 2 s;
// restarted_healthy 0; lost_steps <= the checkpoint interval; shrink and grow resume <= 4 s
// (shrink includes the 2 s last call) and lost_steps <= 1 (healing); accuracy within 0.5
// points of the fixed-size run.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_args.h"
#include "bench/common/json_line.h"
#include "bench/common/temp_dir.h"
#include "common/jobspec/job_spec.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/pid_file.h"
#include "controller/service/controller.h"

namespace ddp::bench {
namespace {

struct Options {
  bool json = false;
  std::vector<int> workers = {2, 4};
  std::vector<std::string> scenarios = {"hang", "kill", "shrink", "grow"};
  int repeats = 3;
  int64_t checkpointEvery = 100;
  double faultAt = 0.4;
  std::string workerBin;
  std::string job = std::string(DDP_SOURCE_DIR) + "/examples/fashion-mnist.yaml";  // --job
};

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Run {
  bool ok = false;
  std::string error;
  double detect = 0, resume = 0, accuracy = 0;
  int64_t lost = 0;
  int restartedHealthy = 0, restarts = 0;
  std::string reason;
};

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  Result<JobSpec> spec(const std::string& name, const std::string& scenario, int workers, const std::string& dir) {
    DDP_ASSIGN_OR_RETURN(JobSpec s, loadJobSpecFile(o_.job));
    s.name = name;
    s.workers.count = s.workers.min = s.workers.max = workers;
    if (scenario == "shrink") s.workers.min = workers - 1;
    if (scenario == "grow") s.workers.count = s.workers.min = workers - 1;
    s.checkpoint.dir = dir + "/ckpt";
    s.checkpoint.everySteps = o_.checkpointEvery;
    s.maxRestarts = 3;
    s.timeouts.heartbeatSeconds = 1;
    s.timeouts.heartbeatMisses = 3;
    s.timeouts.hangSeconds = 5;
    s.timeouts.collectiveSeconds = 30;
    s.timeouts.lastCallSeconds = 2;
    DDP_RETURN_IF_ERROR(s.validate());
    return s;
  }

  // One job; `scenario` "" runs it without a fault.
  Run run(const std::string& scenario, int workers) {
    Run out;
    auto tempDir = TempDir::make("ddp-bench-recovery");
    if (!tempDir.isOk()) {
      out.error = tempDir.status().toString();
      return out;
    }
    const std::string& dir = tempDir->path();  // removed when run() returns, after the controller
    controller::ControllerConfig c;
    c.listenPort = 0;
    c.stateDir = dir + "/state";
    c.workerBinary = o_.workerBin;
    c.tieWorkersToProcess = true;
    c.logLevel = log::Level::kError;
    c.persistEvery = std::chrono::milliseconds(200);
    c.workerLogFormat = "json";
    auto ctl = controller::Controller::start(c);
    if (!ctl.isOk()) {
      out.error = ctl.status().toString();
      return out;
    }
    auto& jobs = (*ctl)->jobs();
    const std::string name = "recovery";
    auto s = spec(name, scenario, workers, dir);
    if (!s.isOk() || !jobs.submit(*s).isOk()) {
      out.error = s.isOk() ? "submit failed" : s.status().toString();
      return finish(**ctl, out);
    }
    auto record = [&] { return jobs.get(name).isOk() ? *jobs.get(name) : controller::JobRecord{}; };
    auto waitUntil = [&](double secs, auto pred) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
      while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return false;
    };
    std::map<int, int64_t> pidsBefore;
    double faultAt = 0;
    if (!scenario.empty()) {
      const bool reached = waitUntil(600, [&] {
        auto r = record();
        return r.phase == controller::JobPhase::kRunning && r.progress.totalSteps > 0 &&
               r.progress.step >= static_cast<int64_t>(o_.faultAt * static_cast<double>(r.progress.totalSteps));
      });
      if (!reached) {
        out.error = "the job did not reach the fault point";
        return finish(**ctl, out);
      }
      for (const auto& w : record().workers) pidsBefore[w.rank] = w.pid;
      faultAt = wallSeconds();
      const int64_t victim = pidsBefore.count(1) ? pidsBefore.at(1) : 0;
      if (Status st = injectFault(**ctl, name, scenario, workers, victim); !st.isOk()) {
        out.error = st.message();
        return finish(**ctl, out);
      }
    }
    const bool done = waitUntil(900, [&] { return jobs.isFinished(name); });
    auto rec = record();
    if (!done || rec.phase != controller::JobPhase::kSucceeded) {
      out.error = "the job ended " + std::string(controller::jobPhaseName(rec.phase));
      return finish(**ctl, out);
    }
    out.accuracy = rec.progress.testAccuracy.value_or(0);
    out.restarts = rec.restarts;
    if (!scenario.empty()) readRecovery(jobs.events(name), scenario, faultAt, pidsBefore, rec, out);
    out.ok = true;
    return finish(**ctl, out);
  }

  // Kills (SIGKILL), stops (hang: SIGSTOP) or, for grow, scales the job to `workers`; `victim`
  // is rank 1's PID.
  Status injectFault(controller::Controller& ctl, const std::string& name, const std::string& scenario, int workers,
                     int64_t victim) {
    if (scenario == "grow") {
      auto scaled = ctl.jobs().scale(name, workers);
      return scaled.isOk() ? Status::ok() : internalError("scale: " + scaled.status().toString());
    }
    if (scenario == "hang") {
      auto st = controller::readProcStat(victim);
      stopped_ = {victim, st.isOk() ? st->startTime : 0};
    }
    if (scenario == "shrink") ctl.launcher().holdReplacements(name, true);
    ::kill(static_cast<pid_t>(victim), scenario == "hang" ? SIGSTOP : SIGKILL);
    return Status::ok();
  }

  // The verdict, resume and lost steps from the job's events, and which healthy workers restarted.
  static void readRecovery(const Result<std::vector<controller::JobEvent>>& events, const std::string& scenario,
                           double faultAt, const std::map<int, int64_t>& pidsBefore, const controller::JobRecord& rec,
                           Run& out) {
    double verdictAt = 0;
    for (const auto& e : events.isOk() ? *events : std::vector<controller::JobEvent>{}) {
      if ((e.reason == "Unresponsive" || e.reason == "Exited" || e.reason == "CollectiveStuck" ||
           e.reason == "CollectiveFailed" || e.reason == "NoProgress") && verdictAt == 0) {
        verdictAt = static_cast<double>(e.timeMs) / 1000;
        out.reason = e.reason;
      }
      std::smatch m;
      static const std::regex redone("steps redone: ([0-9]+)");
      static const std::regex again("stepping again ([0-9.]+) s after");
      const bool resumed = e.reason == "Recovered" || e.reason == "Resumed";
      if (resumed && out.resume == 0 && std::regex_search(e.message, m, redone)) out.lost = std::stoll(m[1]);
      if (resumed && out.resume == 0 && std::regex_search(e.message, m, again)) out.resume = std::stod(m[1]);
      if (e.reason == "WorkersJoined" && out.reason.empty()) out.reason = e.reason;
    }
    out.detect = scenario == "grow" ? 0 : verdictAt - faultAt;
    // The healthy workers: every rank but the faulted 1 (grow: every rank of the first generation).
    for (const auto& [rank, pid] : pidsBefore) {
      if (rank == 1 && scenario != "grow") continue;
      bool same = false;
      for (const auto& w : rec.workers) same = same || w.pid == pid;
      if (!same) ++out.restartedHealthy;
    }
  }

  Run finish(controller::Controller& ctl, Run out) {
    // The worker this run SIGSTOPped, if the controller did not replace it (a failed run).
    if (stopped_.pid > 0 && controller::isSameLiveProcess(stopped_)) ::kill(static_cast<pid_t>(stopped_.pid), SIGKILL);
    stopped_ = {};
    (void)ctl.launcher().stopJob("recovery", std::chrono::seconds(1));
    ctl.stop();
    return out;
  }

  int main() {
    // Fixed-size runs of each scenario's job: N workers, or N - 1 for grow (its job is submitted
    // with N - 1 and keeps that global batch when it grows).
    std::map<int, double> baseline;
    std::vector<int> counts = o_.workers;
    if (std::find(o_.scenarios.begin(), o_.scenarios.end(), "grow") != o_.scenarios.end()) {
      for (int w : o_.workers) counts.push_back(w - 1);
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    for (int w : counts) {
      Run b = run("", w);
      if (!b.ok) {
        std::fprintf(stderr, "bench_recovery: baseline with %d workers failed: %s\n", w, b.error.c_str());
        return 1;
      }
      baseline[w] = b.accuracy;
      if (!o_.json) std::printf("# baseline %d workers: test accuracy %.4f\n", w, b.accuracy);
    }
    int failures = 0;
    for (int rep = 0; rep < o_.repeats; ++rep) {
      for (const auto& sc : o_.scenarios) {
        for (int w : o_.workers) {
          Run r = run(sc, w);
          if (!r.ok) {
            std::fprintf(stderr, "bench_recovery: %s with %d workers failed: %s\n", sc.c_str(), w, r.error.c_str());
            ++failures;
            continue;
          }
          const int fixed = sc == "grow" ? w - 1 : w;
          JsonLine j;
          j.add("bench", "recovery").add("scenario", sc).add("workers", w).add("detect_s", r.detect)
              .add("resume_s", r.resume).add("lost_steps", r.lost).add("restarted_healthy", r.restartedHealthy)
              .add("final_test_accuracy", r.accuracy).add("baseline_test_accuracy", baseline[fixed])
              .add("accuracy_delta_points", (r.accuracy - baseline[fixed]) * 100).add("restarts", r.restarts)
              .add("reason", r.reason);
          j.print();
        }
      }
    }
    return failures == 0 ? 0 : 1;
  }

 private:
  Options o_;
  controller::ProcessIdentity stopped_;  // the worker this run SIGSTOPped (pid 0: none)
};

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using namespace ddp::bench;
  Options o;
  o.workerBin = programDir() + "/ddp-worker";
  for (ArgReader args(argc, argv, "bench_recovery"); args.next();) {
    const std::string a = args.flag();
    auto value = [&] { return args.value(); };
    if (a == "--json") {
      o.json = true;
    } else if (a == "--workers") {
      o.workers.clear();
      for (const auto& w : splitList(value())) o.workers.push_back(std::atoi(w.c_str()));
    } else if (a == "--scenarios") {
      o.scenarios = splitList(value());
    } else if (a == "--repeats") {
      o.repeats = std::atoi(value().c_str());
    } else if (a == "--checkpoint-every") {
      o.checkpointEvery = std::atoll(value().c_str());
    } else if (a == "--fault-at") {
      o.faultAt = std::atof(value().c_str());
    } else if (a == "--worker-bin") {
      o.workerBin = value();
    } else if (a == "--job") {
      o.job = value();
    } else {
      std::fprintf(stderr,
                   "usage: bench_recovery [--json] [--workers 2,4] [--repeats 3] [--scenarios hang,kill,shrink,grow] "
                   "[--checkpoint-every 100] [--fault-at 0.4] [--worker-bin PATH] [--job FILE]\n");
      return 2;
    }
  }
  for (int w : o.workers) {
    if (w < 2) {
      std::fprintf(stderr, "bench_recovery: --workers: every count must be >= 2 (rank 1 is the one faulted)\n");
      return 2;
    }
  }
  for (const auto& s : o.scenarios) {
    if (s != "hang" && s != "kill" && s != "shrink" && s != "grow") {
      std::fprintf(stderr, "bench_recovery: --scenarios: unknown scenario '%s' (hang, kill, shrink, grow)\n", s.c_str());
      return 2;
    }
  }
  if (o.repeats < 1) {
    std::fprintf(stderr, "bench_recovery: --repeats must be >= 1\n");
    return 2;
  }
  return Bench(std::move(o)).main();
}
