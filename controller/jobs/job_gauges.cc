// JobManager::gauges(): the membership figures /metrics reads at scrape time (docs/METRICS.md).
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

std::vector<JobGauges> JobManager::gauges() {
  const TimePoint now = clock_.now();
  std::vector<JobGauges> out;
  for (const auto& job : snapshot()) {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->removed) continue;
    JobGauges g;
    g.job = job->record.name;
    g.generation = job->record.generation;
    for (const auto& [id, w] : job->workers) ++g.workersByState[w.rec.state];
    if (const auto& active = job->rdzv->active()) {
      g.worldSize = active->worldSize();
      g.heartbeatAgeSeconds.resize(static_cast<size_t>(g.worldSize));
      for (int r = 0; r < g.worldSize; ++r) {
        auto it = job->workers.find(active->members[static_cast<size_t>(r)]);
        if (it == job->workers.end()) continue;
        g.heartbeatAgeSeconds[static_cast<size_t>(r)] = std::chrono::duration<double>(now - it->second.lastSeen).count();
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace ddp::controller
