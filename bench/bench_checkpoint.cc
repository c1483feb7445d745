// bench_checkpoint: what a checkpoint costs the training loop under the controller's
// asynchronous two-phase commit (Note [Asynchronous checkpoints] in
// worker/checkpointing/checkpoint_writer.h): the stall of the training thread (the snapshot into
// memory) against the background write and the commit, and the run time against the same job
// without checkpoints.
//
//   build/bin/bench_checkpoint [--json] [--models mlp,wide,cnn] [--workers 2] [--steps 600]
//                              [--every 50] [--worker-bin PATH]
//
// Models: `mlp` the README job's MLP (784-256-256-10), `wide` an MLP 784-2048-2048-10 (about
// 5.8 M parameters: a 47 MB shard with SGD momentum), `cnn` the CNN example. Each is trained
// --steps steps on Fashion-MNIST by --workers real ddp-worker processes under an in-process
// controller (the service's code path), once with a checkpoint every --every steps and once
// without. Rank 0's progress lines give each committed checkpoint's stall_s, write_s, commit_s.
// One JSON line per model:
//   {"bench":"checkpoint","model","workers","params","checkpoints","shard_bytes",
//    "stall_s_median","stall_s_max","write_s_median","commit_s_median",
//    "stall_over_write","train_s","train_s_no_checkpoints","overhead_ratio"}
//  - stall_over_write: stall_s_median / (write_s_median + commit_s_median): the part of a
//    synchronous checkpoint's cost the step still pays;
//  - overhead_ratio: train_s / train_s_no_checkpoints (1.0: checkpoints cost nothing).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/common/bench_args.h"
#include "bench/common/json_line.h"
#include "bench/common/temp_dir.h"
#include "common/jobspec/job_spec.h"
#include "controller/jobs/job_manager.h"
#include "controller/service/controller.h"

namespace ddp::bench {
namespace {

struct Options {
  bool json = false;
  std::vector<std::string> models = {"mlp", "wide", "cnn"};
  int workers = 2;
  int64_t steps = 600;
  int64_t every = 50;
  std::string workerBin;
};

struct Run {
  bool ok = false;
  std::string error;
  double trainSeconds = 0;
  std::vector<double> stall, write, commit;
  int64_t shardBytes = 0;
  int64_t params = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Result<JobSpec> specFor(const std::string& model, const Options& o, const std::string& dir, bool checkpoints) {
  const std::string file = model == "cnn" ? "/examples/fashion-mnist-cnn.yaml" : "/examples/fashion-mnist.yaml";
  DDP_ASSIGN_OR_RETURN(JobSpec s, loadJobSpecFile(std::string(DDP_SOURCE_DIR) + file));
  s.name = "ckpt-" + model;
  s.workers.count = s.workers.min = s.workers.max = o.workers;
  if (model == "wide") s.model.hidden = {2048, 2048};
  s.steps = o.steps;
  s.epochs = 0;
  s.checkpoint = {};
  if (checkpoints) {
    s.checkpoint.dir = dir + "/ckpt";
    s.checkpoint.everySteps = o.every;
    s.checkpoint.keep = 2;
  }
  DDP_RETURN_IF_ERROR(s.validate());
  return s;
}

// Rank 0's JSON progress lines: the checkpoints (stall, write, commit) and the run's time.
void readRank0(const std::string& log, Run* out) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    const std::string ev = j.value("event", "");
    if (ev == "checkpoint" && j.contains("stall_s")) {
      out->stall.push_back(j.value("stall_s", 0.0));
      out->write.push_back(j.value("write_s", 0.0));
      out->commit.push_back(j.value("commit_s", 0.0));
    } else if (ev == "done") {
      out->trainSeconds = j.value("elapsed_s", 0.0);
    } else if (ev == "start") {
      out->params = j.value("params", int64_t{0});
    }
  }
}

Run runJob(const std::string& model, const Options& o, bool checkpoints) {
  Run out;
  auto tempDir = TempDir::make("ddp-bench-checkpoint");
  if (!tempDir.isOk()) {
    out.error = tempDir.status().toString();
    return out;
  }
  const std::string& dir = tempDir->path();  // removed on return, after the controller
  controller::ControllerConfig c;
  c.listenPort = 0;
  c.stateDir = dir + "/state";
  c.workerBinary = o.workerBin;
  c.tieWorkersToProcess = true;
  c.logLevel = log::Level::kError;
  c.workerLogFormat = "json";
  auto ctl = controller::Controller::start(c);
  if (!ctl.isOk()) {
    out.error = ctl.status().toString();
    return out;
  }
  auto s = specFor(model, o, dir, checkpoints);
  auto& jobs = (*ctl)->jobs();
  if (!s.isOk() || !jobs.submit(*s).isOk()) {
    out.error = s.isOk() ? "submit failed" : s.status().toString();
  } else {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(15);
    while (!jobs.isFinished(s->name) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto rec = jobs.get(s->name);
    if (!rec.isOk() || rec->phase != controller::JobPhase::kSucceeded) {
      out.error = "the job did not succeed";
    } else {
      readRank0(c.stateDir + "/jobs/" + s->name + "/logs/" + s->name + "-w0.log", &out);
      auto cps = jobs.checkpoints(s->name);
      if (cps.isOk() && !cps->empty()) out.shardBytes = cps->back().bytes / o.workers;
      out.ok = out.trainSeconds > 0 && (!checkpoints || !out.stall.empty());
      if (!out.ok) out.error = "rank 0's progress lines lack the figures";
    }
  }
  (void)(*ctl)->launcher().stopJob(s.isOk() ? s->name : "", std::chrono::seconds(1));
  (*ctl)->stop();
  return out;
}

int runAll(const Options& o) {
  int failures = 0;
  for (const auto& model : o.models) {
    Run base = runJob(model, o, false);
    Run ck = runJob(model, o, true);
    if (!base.ok || !ck.ok) {
      std::fprintf(stderr, "bench_checkpoint: %s failed: %s\n", model.c_str(), (base.ok ? ck : base).error.c_str());
      ++failures;
      continue;
    }
    const double stall = median(ck.stall), write = median(ck.write), commit = median(ck.commit);
    JsonLine j;
    j.add("bench", "checkpoint").add("model", model).add("workers", o.workers).add("params", ck.params)
        .add("checkpoints", static_cast<int64_t>(ck.stall.size())).add("shard_bytes", ck.shardBytes)
        .add("stall_s_median", stall).add("stall_s_max", *std::max_element(ck.stall.begin(), ck.stall.end()))
        .add("write_s_median", write).add("commit_s_median", commit)
        .add("stall_over_write", write + commit > 0 ? stall / (write + commit) : 0.0)
        .add("train_s", ck.trainSeconds).add("train_s_no_checkpoints", base.trainSeconds)
        .add("overhead_ratio", ck.trainSeconds / base.trainSeconds);
    if (o.json) {
      j.print();
    } else {
      std::printf("%-5s %d workers %9lld params  %2zu checkpoints of %6.1f MB/rank: stall %.4f s (max %.4f), "
                  "write %.3f s, commit %.3f s; run %.1f s vs %.1f s without (x%.3f)\n",
                  model.c_str(), o.workers, static_cast<long long>(ck.params), ck.stall.size(),
                  static_cast<double>(ck.shardBytes) / 1e6, stall, *std::max_element(ck.stall.begin(), ck.stall.end()),
                  write, commit, ck.trainSeconds, base.trainSeconds, ck.trainSeconds / base.trainSeconds);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using namespace ddp::bench;
  Options o;
  o.workerBin = programDir() + "/ddp-worker";
  for (ArgReader args(argc, argv, "bench_checkpoint"); args.next();) {
    const std::string a = args.flag();
    auto value = [&] { return args.value(); };
    if (a == "--json") {
      o.json = true;
    } else if (a == "--models") {
      o.models = splitList(value());
    } else if (a == "--workers") {
      o.workers = std::atoi(value().c_str());
    } else if (a == "--steps") {
      o.steps = std::atoll(value().c_str());
    } else if (a == "--every") {
      o.every = std::atoll(value().c_str());
    } else if (a == "--worker-bin") {
      o.workerBin = value();
    } else {
      std::fprintf(stderr, "usage: bench_checkpoint [--json] [--models mlp,wide,cnn] [--workers 2] [--steps 600] "
                           "[--every 50] [--worker-bin PATH]\n");
      return 2;
    }
  }
  for (const auto& m : o.models) {
    if (m != "mlp" && m != "wide" && m != "cnn") {
      std::fprintf(stderr, "bench_checkpoint: --models: unknown model '%s' (mlp, wide, cnn)\n", m.c_str());
      return 2;
    }
  }
  if (o.workers < 1 || o.steps < 1 || o.every < 1 || o.every > o.steps) {
    std::fprintf(stderr, "bench_checkpoint: --workers, --steps and --every must be positive, --every <= --steps\n");
    return 2;
  }
  return runAll(o);
}
