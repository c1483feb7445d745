#pragma once
// Test helpers for the job store tests: the tests' TempDir (tests/support/temp_dir.h) and a
// JobRecord with every field set.
// Thread model: TempDir is used by one thread; fullJob() is a pure function.

#include <string>

#include <gtest/gtest.h>

#include "controller/store/job_record.h"
#include "tests/support/temp_dir.h"

namespace ddp::controller::testing {

using test::TempDir;

// A job with every field set to a value that differs from its default; `seed` varies them.
inline JobRecord fullJob(const std::string& name, int64_t seed = 1) {
  JobRecord job;
  job.name = name;
  job.uid = "uid-" + name + "-" + std::to_string(seed);
  job.specYaml = "name: " + name + "\nworkers: 4\nmodel:\n  kind: mlp\n  note: \"quote ' and \\\" ;\"\n";
  job.workerToken = "tok-" + std::to_string(seed * 7919);
  job.createdMs = 1700000000000 + seed;
  job.startMs = 1700000000500 + seed;
  job.completionMs = 1700000009000 + seed;
  job.phase = JobPhase::kRestarting;
  job.setCondition(kConditionCreated, true, "Submitted", "job accepted", job.createdMs);
  job.setCondition(kConditionRunning, false, "WorkerExited", "rank 2 exited with 137",
                   job.startMs + 10);
  job.generation = 3 + seed;
  job.restarts = 2;
  job.progress.step = 120 + seed;
  job.progress.totalSteps = 1000;
  job.progress.epoch = 1;
  job.progress.epochs = 5;
  job.progress.loss = 0.123456789012345;
  job.progress.samplesPerSecond = 4321.5;
  job.progress.testAccuracy = 0.875;
  job.progress.etaSeconds = 93.25;
  job.progress.valLoss = 3.0625;
  job.progress.tokensPerSecond = 65536.5;
  job.progress.mfu = 0.3125;
  for (int rank = 0; rank < 2; ++rank) {
    WorkerRecord w;
    w.rank = rank;
    w.id = name + "-w" + std::to_string(rank);
    w.host = "host-" + std::to_string(rank);
    w.advertiseAddress = "10.0.0." + std::to_string(rank + 1) + ":2900" + std::to_string(rank);
    w.pid = 4000 + rank;
    w.pidStartTime = 987654321 + rank;
    w.state = rank == 0 ? "Running" : "Exited";
    w.lastHeartbeatMs = 1700000001000 + rank;
    w.step = 119 + rank;
    job.workers.push_back(w);
  }
  return job;
}

}  // namespace ddp::controller::testing
