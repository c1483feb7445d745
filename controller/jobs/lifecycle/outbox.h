#pragma once
// Outbox: what one job has to write to the JobStore (Note [Controller state and persistence] in
// job_manager.h): the record when its phase, conditions or workers changed (`dirty`) or, within
// persistEvery, its heartbeat figures (`figuresDirty`); events, checkpoint rows, the catalog a
// commit report left, flight records. take() empties it into one batch that is written outside
// the job's lock, in the order taken (Note [Persistence order] in job.h).
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/store/job_record.h"

namespace ddp::controller {

struct Outbox {
  bool dirty = false;         // phase / conditions / workers changed: write at the next tick
  bool figuresDirty = false;  // heartbeat figures changed: write within persistEvery
  std::vector<JobEvent> events;
  std::vector<CheckpointRecord> checkpoints;
  // Rank 0's last commit report's steps on disk: the stored catalog keeps only these. Note
  // [Two-phase checkpoint commit].
  std::optional<std::vector<int64_t>> catalog;
  std::map<int64_t, std::string> flightRecords;  // store documents, by verdict time

  struct Batch {
    std::vector<JobEvent> events;
    std::vector<CheckpointRecord> checkpoints;
    std::optional<std::vector<int64_t>> catalog;
    std::map<int64_t, std::string> flightRecords;
  };

  // Something is to be written now (`periodic`: persistEvery passed, the figures count too).
  bool due(bool periodic) const;
  // Everything pending, leaving the outbox empty and clean.
  Batch take();
};

}  // namespace ddp::controller
