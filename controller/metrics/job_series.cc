#include "controller/metrics/job_series.h"

namespace ddp::controller {

JobSeries::JobSeries(MetricFamilies& f, std::string job)
    : restarts(f.restarts.Add({{"job", job}})),
      worldSize(f.worldSize.Add({{"job", job}})),
      generation(f.generation.Add({{"job", job}})),
      steps(f.steps.Add({{"job", job}})),
      samples(f.samples.Add({{"job", job}})),
      samplesPerSecond(f.samplesPerSecond.Add({{"job", job}})),
      loss(f.loss.Add({{"job", job}})),
      testAccuracy(f.testAccuracy.Add({{"job", job}})),
      valLoss(f.valLoss.Add({{"job", job}})),
      perplexity(f.perplexity.Add({{"job", job}})),
      tokensPerSecond(f.tokensPerSecond.Add({{"job", job}})),
      mfu(f.mfu.Add({{"job", job}})),
      progress(f.progress.Add({{"job", job}})),
      eta(f.eta.Add({{"job", job}})),
      stepSeconds(f.stepSeconds.Add({{"job", job}}, stepBuckets())),
      commBytes(f.commBytes.Add({{"job", job}})),
      commExposed(f.commExposed.Add({{"job", job}})),
      compression(f.compression.Add({{"job", job}})),
      deaths(f.deaths.Add({{"job", job}})),
      aborts(f.aborts.Add({{"job", job}})),
      recovery(f.recovery.Add({{"job", job}}, recoveryBuckets())),
      checkpointBytes(f.checkpointBytes.Add({{"job", job}})),
      checkpointsCommitted(f.checkpointsCommitted.Add({{"job", job}})),
      checkpointFailures(f.checkpointFailures.Add({{"job", job}})),
      checkpointsFailing(f.checkpointsFailing.Add({{"job", job}})),
      f_(f),
      job_(std::move(job)) {
  compression.Set(1);
  for (const char* state : kWorkerStates) workers_[state] = &f_.workers.Add({{"job", job_}, {"state", state}});
  for (const char* reason : kHangReasons) hangs_[reason] = &f_.hangs.Add({{"job", job_}, {"reason", reason}});
  for (CheckpointPhase p : {CheckpointPhase::kSnapshot, CheckpointPhase::kWrite, CheckpointPhase::kCommit}) {
    checkpointSeconds_[p] =
        &f_.checkpointSeconds.Add({{"job", job_}, {"phase", checkpointPhaseName(p)}}, checkpointBuckets());
  }
}

JobSeries::~JobSeries() {
  f_.restarts.Remove(&restarts);
  f_.worldSize.Remove(&worldSize);
  f_.generation.Remove(&generation);
  f_.steps.Remove(&steps);
  f_.samples.Remove(&samples);
  f_.samplesPerSecond.Remove(&samplesPerSecond);
  f_.loss.Remove(&loss);
  f_.testAccuracy.Remove(&testAccuracy);
  f_.valLoss.Remove(&valLoss);
  f_.perplexity.Remove(&perplexity);
  f_.tokensPerSecond.Remove(&tokensPerSecond);
  f_.mfu.Remove(&mfu);
  f_.progress.Remove(&progress);
  f_.eta.Remove(&eta);
  f_.stepSeconds.Remove(&stepSeconds);
  f_.commBytes.Remove(&commBytes);
  f_.commExposed.Remove(&commExposed);
  f_.compression.Remove(&compression);
  f_.deaths.Remove(&deaths);
  f_.aborts.Remove(&aborts);
  f_.recovery.Remove(&recovery);
  f_.checkpointBytes.Remove(&checkpointBytes);
  f_.checkpointsCommitted.Remove(&checkpointsCommitted);
  f_.checkpointFailures.Remove(&checkpointFailures);
  f_.checkpointsFailing.Remove(&checkpointsFailing);
  for (auto& [state, g] : workers_) f_.workers.Remove(g);
  for (auto* g : heartbeatAges_) f_.heartbeatAge.Remove(g);
  for (auto& [reason, c] : hangs_) f_.hangs.Remove(c);
  for (auto& [phase, h] : checkpointSeconds_) f_.checkpointSeconds.Remove(h);
}

void JobSeries::setWorkers(const std::map<std::string, int>& counts) {
  for (auto& [state, g] : workers_) g->Set(0);
  for (const auto& [state, n] : counts) {
    auto it = workers_.find(state);
    if (it == workers_.end()) {
      // A state outside kWorkerStates (the set is the controller's own, so still bounded).
      it = workers_.emplace(state, &f_.workers.Add({{"job", job_}, {"state", state}})).first;
    }
    it->second->Set(n);
  }
}

void JobSeries::setHeartbeatAges(const std::vector<double>& ages) {
  while (heartbeatAges_.size() > ages.size()) {
    f_.heartbeatAge.Remove(heartbeatAges_.back());
    heartbeatAges_.pop_back();
  }
  ensureRanks(ages.size());
  for (size_t r = 0; r < ages.size(); ++r) heartbeatAges_[r]->Set(ages[r]);
}

void JobSeries::zeroHeartbeatAges() {
  for (auto* g : heartbeatAges_) g->Set(0);
}

void JobSeries::ensureRanks(size_t ranks) {
  while (heartbeatAges_.size() < ranks) {
    heartbeatAges_.push_back(
        &f_.heartbeatAge.Add({{"job", job_}, {"rank", std::to_string(heartbeatAges_.size())}}));
  }
}

prometheus::Counter& JobSeries::hangs(const std::string& reason) {
  auto it = hangs_.find(reason);
  if (it == hangs_.end()) it = hangs_.emplace(reason, &f_.hangs.Add({{"job", job_}, {"reason", reason}})).first;
  return *it->second;
}

prometheus::Histogram& JobSeries::checkpointSeconds(CheckpointPhase phase) { return *checkpointSeconds_.at(phase); }

}  // namespace ddp::controller
