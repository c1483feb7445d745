// Job::gauges(): the membership figures /metrics reads at scrape time (docs/METRICS.md).
#include "controller/jobs/job.h"

namespace ddp::controller {

JobGauges Job::gauges(TimePoint now) const {
  JobGauges g;
  g.job = record.name;
  g.generation = record.generation;
  for (const auto& [id, w] : workers) ++g.workersByState[w.rec.state];
  if (const auto& active = rdzv->active()) {
    g.worldSize = active->worldSize();
    g.heartbeatAgeSeconds.resize(static_cast<size_t>(g.worldSize));
    for (int r = 0; r < g.worldSize; ++r) {
      auto it = workers.find(active->members[static_cast<size_t>(r)]);
      if (it == workers.end()) continue;
      g.heartbeatAgeSeconds[static_cast<size_t>(r)] = std::chrono::duration<double>(now - it->second.lastSeen).count();
    }
  }
  return g;
}

}  // namespace ddp::controller
