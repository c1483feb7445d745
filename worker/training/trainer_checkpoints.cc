// Trainer::Impl's checkpoint side: the snapshot and the checkpoint of a step (synchronous, or
// handed to the writer: Note [Asynchronous checkpoints]), the writer's reports, resume from the
// latest checkpoint and healing from live peers (Note [Healing from live peers]).
#include "common/log.h"
#include "worker/ddp/powersgd_state.h"
#include "worker/model/param_io.h"
#include "worker/training/model_description.h"
#include "worker/training/trainer_impl.h"

namespace ddp::runtime {

Result<bool> Trainer::Impl::healFromPeers(TrainResult* result) {
  // A committed checkpoint newer than every peer's state (the peers sat out generations that
  // went on without them) wins: rank 0 says which step that is.
  int64_t committed = -1;
  if (checkpoints && config.resume && isRank0()) {
    auto steps = checkpoints->store().ownCommittedSteps(checkpoints->job());
    if (steps.isOk() && !steps->empty()) committed = steps->back();
  }
  const PeerState* mine = io.peerState;
  int64_t newest[2] = {mine != nullptr ? mine->step : -1, committed};
  auto w = backend.allreduce(comm::viewOf(newest, 2), comm::ReduceOp::kMax);
  DDP_RETURN_IF_ERROR(w->wait(opDeadline()).withContext("peer state: newest step"));
  if (newest[0] < 0 || newest[1] > newest[0]) {
    if (newest[0] >= 0 && isRank0()) {
      DDP_LOG(Info) << "healing: checkpoint step " << newest[1] << " is newer than every peer's state (step "
                    << newest[0] << "): loading the checkpoint";
    }
    return false;
  }
  int source = -1;
  DDP_ASSIGN_OR_RETURN(std::optional<PeerState> peer, exchangePeerState(backend, mine, opDeadline(), &source));
  if (!peer) return false;
  LoadedCheckpoint loaded;
  loaded.path = "the state of rank " + std::to_string(source) + " (step " + std::to_string(peer->step) +
                ", generation " + std::to_string(peer->generation) + ")";
  loaded.shard.step = peer->step;
  loaded.shard.rank = source;
  loaded.shard.worldSize = peer->worldSize;
  loaded.savedWorldSize = peer->worldSize;
  loaded.shard.sections = std::move(peer->sections);
  auto section = [&](const char* name) {
    auto it = loaded.shard.sections.find(name);
    return it == loaded.shard.sections.end() ? std::string() : it->second;
  };
  loaded.optimizerShards = {section("optimizer")};  // replicated: one serves every rank
  if (auto hook = loaded.shard.sections.find("comm_hook"); hook != loaded.shard.sections.end()) {
    // PowerSGD without error feedback: iteration, RNG and Q memories, the same on every rank
    // (with error feedback there is no peer state: peerState()), loaded as this rank's own.
    auto ps = PowerSgdState::deserialize(hook->second);
    if (ps.isOk()) {
      ps->worldSize = backend.size();
      ps->rank = backend.rank();
      hook->second = ps->serialize();
    }
    loaded.commHookStates.assign(static_cast<size_t>(backend.size()), hook->second);
  }
  result->healed = true;
  DDP_RETURN_IF_ERROR(applyLoaded(loaded, result).withContext("healing from " + loaded.path));
  lastCheckpointStep = -1;  // nothing was read from the checkpoint directory
  return true;
}

std::optional<PeerState> Trainer::Impl::peerState() {
  // Sharded optimizer state and PowerSGD's error feedback lived partly on other ranks (the lost
  // one's only in the checkpoint); Join ranks are at different steps: the checkpoint is their
  // fallback.
  const bool powerSgd = config.hook == CommHookType::kPowerSgd || config.hook == CommHookType::kBatchedPowerSgd;
  if (config.sharding != ZeroMode::kNone || config.join || (powerSgd && config.powerSgd.useErrorFeedback)) {
    return std::nullopt;
  }
  if (reducer) reducer->stopCommThread();  // the hook's state is quiet from here on
  auto snap = snapshot();
  if (!snap.isOk()) {
    DDP_LOG(Warning) << "no state for the next generation: " << snap.status();
    return std::nullopt;
  }
  CheckpointShard& shard = snap->materialize();
  shard.sections["sampler"] = boundarySampler.serialize();
  PeerState p;
  p.step = state.step;
  p.worldSize = backend.size();
  p.sections = std::move(shard.sections);
  return p;
}

Status Trainer::Impl::resume(TrainResult* result) {
  if (io.exchangePeerState) {
    DDP_ASSIGN_OR_RETURN(bool healed, healFromPeers(result));
    if (healed) return Status::ok();
  }
  if (!checkpoints || !config.resume) return Status::ok();
  DDP_ASSIGN_OR_RETURN(LatestLoad latest, checkpoints->loadLatest(opDeadline()));
  // latest.startOverWarning (rank 0: checkpoints existed, none usable) is already logged at
  // Warning level; the heartbeat carries it to the controller's events.
  if (latest.startOverWarning) {
    progress.warning = *latest.startOverWarning;
    publishProgress();
  }
  if (!latest.checkpoint) return Status::ok();
  return applyLoaded(*latest.checkpoint, result);
}

Status Trainer::Impl::applyLoaded(const LoadedCheckpoint& loaded, TrainResult* result) {
  const CheckpointShard& shard = loaded.shard;
  DDP_ASSIGN_OR_RETURN(std::string_view ts, shard.section("trainer"));
  DDP_ASSIGN_OR_RETURN(TrainerState saved, TrainerState::decode(ts));
  if (saved.seed != state.seed || saved.batchSize != state.batchSize) {
    return failedPrecondition("checkpoint " + loaded.path + " was written by a run with seed " +
                              std::to_string(saved.seed) + " and batch size " + std::to_string(saved.batchSize) +
                              "; this job has seed " + std::to_string(state.seed) + " and batch size " +
                              std::to_string(state.batchSize) + " (use a fresh checkpoint directory)");
  }
  DDP_RETURN_IF_ERROR(restoreStandardization(shard, loaded.path));
  DDP_ASSIGN_OR_RETURN(std::string_view modelBytes, shard.section("model"));
  DDP_RETURN_IF_ERROR(model::loadParameters(modelBytes, model->parameters(), model->ops()).withContext(loaded.path));
  DDP_RETURN_IF_ERROR(optimizer->loadState(loaded.optimizerShards, backend.rank()).withContext(loaded.path));
  if (auto hs = shard.section("comm_hook"); hs.isOk() && reducer && reducer->commHook()->hasState()) {
    // Note [Checkpoints at any world size]: PowerSGD's error feedback is redistributed.
    DDP_ASSIGN_OR_RETURN(std::string hookState, commHookStateForWorld(config, loaded.commHookStates, backend.rank(),
                                                                      backend.size()));
    DDP_RETURN_IF_ERROR(reducer->commHook()->loadState(hookState).withContext(loaded.path));
  }
  DDP_ASSIGN_OR_RETURN(std::string_view ss, shard.section("sampler"));
  DDP_ASSIGN_OR_RETURN(data::SamplerState samplerState, data::SamplerState::deserialize(std::string(ss)));
  if (sampler) DDP_RETURN_IF_ERROR(sampler->restore(samplerState, saved.worldSize).withContext(loaded.path));
  state.step = saved.step;
  state.epoch = saved.epoch;
  state.scheduleStep = saved.scheduleStep;
  if (saved.worldSize != backend.size()) {
    // Note [Elastic batch]: the rest of the epoch is split over this world size.
    totalSteps = stepsToEnd();
    if (isRank0() && windows) {
      DDP_LOG(Info) << "resuming step " << saved.step << " written by " << saved.worldSize << " workers at world size "
                    << backend.size() << ": the same windows per step (Note [Token windows]), " << totalSteps
                    << " steps in all";
    } else if (isRank0()) {
      DDP_LOG(Info) << "resuming step " << saved.step << " written by " << saved.worldSize << " workers at world size "
                    << backend.size() << ": " << samplesLeftHere() << " samples of epoch " << saved.epoch + 1
                    << " left for rank 0, " << totalSteps << " steps in all";
    }
  }
  lastCheckpointStep = saved.step;
  result->resumed = true;
  result->startStep = saved.step;
  if (!result->healed) observeCheckpoint(shard, loaded.path);
  DDP_LOG(Info) << "resumed from " << loaded.path << " at step " << saved.step << ", epoch " << saved.epoch + 1;
  if (printing()) reporter.resume(saved.step, saved.epoch + 1, loaded.path);
  return Status::ok();
}

// Every section of this rank's checkpoint, copied into memory; the parameters' and a plain
// optimizer's encoding is deferred (Note [Asynchronous checkpoints]).
Result<CheckpointSnapshot> Trainer::Impl::snapshot() {
  CheckpointSnapshot snap;
  CheckpointShard& shard = snap.shard;
  shard.step = state.step;
  shard.rank = backend.rank();
  shard.worldSize = backend.size();
  shard.sections["trainer"] = state.encode();
  snap.deferred.emplace_back("model", [params = model::snapshotParameters(model->parameters(), model->ops())] {
    return model::encodeParameters(params);
  });
  DDP_ASSIGN_OR_RETURN(auto optimizerState, optimizer->snapshotState(opDeadline()));
  snap.deferred.emplace_back("optimizer", std::move(optimizerState));
  if (reducer && reducer->commHook()->hasState()) {
    DDP_ASSIGN_OR_RETURN(shard.sections["comm_hook"], reducer->commHook()->saveState());
  }
  shard.sections["sampler"] = samplerState().serialize();
  // For export and predict; a user's model (io.buildModel) is not one the description can name.
  if (!io.buildModel) shard.sections[kModelSpecSection] = describeModel(config).toYaml();
  if (!data->standardization.empty()) shard.sections["standardize"] = data->standardization.encode();
  return snap;
}

// Note [Standardization] (worker/data/standardize.h): the parameters were trained on inputs
// scaled by the checkpoint's statistics; statistics computed here differ only when the training
// files changed, and then the data is scaled again by the saved ones.
Status Trainer::Impl::restoreStandardization(const CheckpointShard& shard, const std::string& path) {
  auto section = shard.section("standardize");
  if (!section.isOk()) return Status::ok();  // nothing was standardized
  auto saved = data::Standardization::decode(*section);
  if (!saved.isOk()) return saved.status().withContext(path);
  if (*saved == data->standardization) return Status::ok();
  if (!data->standardization.empty() && saved->mean.size() != data->standardization.mean.size()) {
    return failedPrecondition(path + ": its standardization has " + std::to_string(saved->mean.size()) +
                              " statistics, this run's data " + std::to_string(data->standardization.mean.size()));
  }
  auto copy = std::make_shared<TrainingData>(*data);
  data::restandardize(data->standardization, *saved, &copy->train);
  data::restandardize(data->standardization, *saved, &copy->test);
  copy->standardization = *saved;
  data = std::move(copy);
  DDP_LOG(Warning) << "the training data's standardization differs from the one in " << path
                   << " (the training files changed?): the checkpoint's is used";
  return Status::ok();
}

void Trainer::Impl::reportWrittenCheckpoints() {
  if (!checkpoints) return;
  for (const WrittenCheckpoint& w : checkpoints->takeFinished()) {
    if (!w.ok) {
      if (printing() && isRank0()) reporter.checkpointFailed(w.step, w.message);
      continue;
    }
    if (!isRank0()) continue;  // rank 0 speaks for the committed checkpoint
    if (printing()) reporter.checkpoint(w.step, w.path, w.snapshotSeconds + w.writeSeconds + w.commitSeconds,
                                        CheckpointTimes{w.snapshotSeconds, w.writeSeconds, w.commitSeconds});
    progress.checkpoint = TrainingProgress::Checkpoint{w.step, w.bytes, w.path};
    publishProgress();
  }
}

Status Trainer::Impl::drainCheckpoints() {
  if (!checkpoints) return Status::ok();
  Status st = checkpoints->drain(Deadline::after(config.collectiveTimeout * 2));
  reportWrittenCheckpoints();
  return st;
}

Result<std::string> Trainer::Impl::checkpoint() {
  const auto t0 = SteadyClock::now();
  DDP_ASSIGN_OR_RETURN(CheckpointSnapshot snap, snapshot());
  if (checkpoints->asynchronous()) {
    // Note [Asynchronous checkpoints]: the step stalls only for the snapshot (and for the
    // previous checkpoint, if it is still being written).
    const double snapSeconds = secondsSince(t0);
    DDP_RETURN_IF_ERROR(checkpoints->saveAsync(std::move(snap), snapSeconds, opDeadline()));
    lastCheckpointStep = state.step;
    return checkpoints->store().stepDir(state.step);
  }
  const CheckpointShard& shard = snap.materialize();
  DDP_ASSIGN_OR_RETURN(std::string path, checkpoints->save(shard, opDeadline()));
  lastCheckpointStep = state.step;
  if (printing()) reporter.checkpoint(state.step, path, secondsSince(t0));
  observeCheckpoint(shard, path);
  return path;
}

}  // namespace ddp::runtime
