#pragma once
// RecoveryState: one job's in-process recovery after a verdict or a planned membership change
// (Note [Recovery] in job_manager.h, Note [Recovery figures] in job_recovery.cc): the generation
// that ended, its survivors, the culprits due for a replacement, and what the Recovered (or
// Resumed) event will say.
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace ddp::controller {

struct RecoveryState {
  int64_t abortedGeneration = 0;    // the generation a verdict (or a planned change) ended
  std::set<std::string> survivors;  // its members that get `abort` (not 410)
  // Note [Recovery figures]: whose communicator abort of `abortsGeneration` was counted, and the
  // step each survivor said it had completed when it rejoined.
  int64_t abortsGeneration = 0;
  std::set<std::string> abortsCounted;
  std::map<std::string, int64_t> stepAtRejoin;
  std::vector<std::string> toReplace;  // culprits whose replacement is due at replaceAt
  TimePoint replaceAt{};
  bool recovering = false;     // waiting for every member to finish a step
  bool plannedChange = false;  // ... after a membership change, not a verdict (event Resumed)
  TimePoint verdictAt{};
  int64_t stepAtVerdict = 0;  // the furthest step a member of the ended generation had reported
  std::set<std::string> steppedSinceVerdict;
  std::set<std::pair<int, int64_t>> stragglersSeen;  // (rank, seq) already reported

  // Generation `ended` is over (a verdict, or a planned change when `planned`): its members'
  // figures start again from `stepReached`.
  void begin(int64_t ended, TimePoint now, bool planned, int64_t stepReached);
  // Whether `workerId` survived generation `g` (it aborts and rejoins rather than being fenced).
  bool survived(int64_t g, const std::string& workerId) const {
    return g == abortedGeneration && survivors.count(workerId) > 0;
  }
  // Counts `workerId`'s communicator abort of generation `g` once: true the first time.
  bool countAbort(const std::string& workerId, int64_t g);
  // `workerId` finished a step of the new generation: true when all `worldSize` members have,
  // and the recovery is over.
  bool noteStepped(const std::string& workerId, int worldSize);
  // Where the ended generation stopped: the last step a rejoining survivor reported, else the
  // verdict's estimate (Note [Recovery figures]).
  int64_t endedAt() const;
  // Culprits wait for a replacement, and its backoff is over at `now`.
  bool replacementsDue(TimePoint now) const { return !toReplace.empty() && now >= replaceAt; }
};

}  // namespace ddp::controller
