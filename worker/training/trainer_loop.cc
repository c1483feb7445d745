// Trainer::Impl::run(): the step loop and its phases (Note [Trainer step] in trainer.h). Each
// phase is one function here; what it decides comes from the pure pieces (command_word.h,
// checkpoint_policy.h, epoch_boundary.h, step_log.h) and what a test injects from
// TrainerIo::faults (training_faults.h).
#include <algorithm>
#include <chrono>
#include <thread>

#include "common/log.h"
#include "common/split_mix_rng.h"
#include "worker/training/epoch_boundary.h"
#include "worker/training/trainer_impl.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {

Result<TrainResult> Trainer::Impl::run() {
  RunContext run;
  DDP_RETURN_IF_ERROR(beginRun(run));
  if (windows) {
    DDP_ASSIGN_OR_RETURN(LoopExit exit, runLanguageModel(run));
    if (exit == LoopExit::kStopped) return std::move(run.result);
    return endRun(run);
  }
  bool finished = state.step >= totalSteps;
  while (!finished && state.epoch < config.epochs) {
    DDP_ASSIGN_OR_RETURN(LoopExit exit, runEpoch(run));
    if (exit == LoopExit::kStopped) return std::move(run.result);
    if (exit == LoopExit::kStoppedAtEpochEnd) break;
    finished = state.step >= totalSteps;
  }
  return endRun(run);
}

Status Trainer::Impl::beginRun(RunContext& run) {
  DDP_RETURN_IF_ERROR(resume(&run.result));
  boundarySampler = samplerState();
  compressionBase = compressionStats();
  run.start = SteadyClock::now();
  if (printing()) {
    reporter.start(config.job, backend.size(), model->describe(), model->numParameters(), totalSteps, config.epochs);
  }
  run.logStart = SteadyClock::now();
  run.ready = reducer ? reducer->gradReadyFn() : optimizer->fusedAdam()->gradReadyFn();
  run.onDevice = !model->device().isCpu();
  if (run.onDevice) {
    // Note [CUDA gradient readiness]. A failed synchronisation is sticky in the ops and
    // reported by forwardBackward's status check.
    run.ready = [inner = std::move(run.ready), &ops = model->ops()](size_t index) {
      (void)ops.synchronize();
      inner(index);
    };
  }
  return Status::ok();
}

// The steps of one epoch (or what is left of it), then the epoch's end.
Result<LoopExit> Trainer::Impl::runEpoch(RunContext& run) {
  // A fresh epoch starts at position 0; a resumed one continues where the sampler was.
  if (sampler->epoch() != static_cast<uint64_t>(state.epoch)) sampler->setEpoch(static_cast<uint64_t>(state.epoch));
  data::BatchIterator it(data->train, *sampler, localBatch);
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<join::Join> joinScope, openJoin());
  while (stepDue(state.step, totalSteps, sampler->remaining())) {
    DDP_ASSIGN_OR_RETURN(bool stopped, stepPhases(run, &it));
    if (stopped) return LoopExit::kStopped;
  }
  DDP_RETURN_IF_ERROR(closeJoin(std::move(joinScope)));
  return endEpoch(run);
}

Result<LoopExit> Trainer::Impl::runLanguageModel(RunContext& run) {
  while (state.step < totalSteps) {
    DDP_ASSIGN_OR_RETURN(bool stopped, stepPhases(run, nullptr));
    if (stopped) return LoopExit::kStopped;
    if (canEvaluate() && stepEvaluationDue(state.step, config.evalEverySteps, totalSteps)) {
      DDP_RETURN_IF_ERROR(evaluatePhase(run, 1));
    }
  }
  // Resumed at the very end, or the last step's evaluation was not due: evaluate once.
  if (canEvaluate() && run.lastEvalStep != state.step) DDP_RETURN_IF_ERROR(evaluatePhase(run, 1));
  state.epoch = 1;
  run.result.epochsCompleted = 1;
  return LoopExit::kContinue;
}

Result<std::unique_ptr<join::Join>> Trainer::Impl::openJoin() {
  if (!ddpJoin) return std::unique_ptr<join::Join>();
  join::JoinOptions jo;
  jo.throwOnEarlyTermination = config.joinThrow;
  jo.hookOptions.divideByInitialWorldSize = config.joinDivideByInitialWorldSize;
  std::vector<join::Joinable*> joinables = {ddpJoin.get()};
  if (optimizer->zero() != nullptr) joinables.push_back(optimizer->zero());
  return join::Join::create(joinables, jo);
}

Status Trainer::Impl::closeJoin(std::unique_ptr<join::Join> scope) {
  if (!scope) return Status::ok();
  // This rank is out of data: shadow the others' steps until every rank is (Join).
  const int64_t before = state.step;
  DDP_RETURN_IF_ERROR(scope->finish(opDeadline()).withContext("join after step " + std::to_string(before)));
  if (scope->rounds() > 0) {
    DDP_LOG(Info) << "joined after step " << before << "; shadowed " << scope->rounds() << " steps of other ranks";
  }
  return Status::ok();
}

Result<bool> Trainer::Impl::stepPhases(RunContext& run, data::BatchIterator* it) {
  stallIfInjected();
  const bool agree = commandWordDue(state.step + 1, config.stopCheckEverySteps, config.join);
  DDP_ASSIGN_OR_RETURN(model::BatchStats stats, runStep(run, it, agree));
  recordStep(run, stats);
  logStep(run, stats);
  if (checkpoints && checkpointPolicy().afterStep(state.step, samplesLeftHere())) {
    DDP_RETURN_IF_ERROR(checkpoint().status());
  }
  if (!agree) return false;
  return actOnCommandWord(run);
}

void Trainer::Impl::stallIfInjected() {
  if (io.faults == nullptr) return;
  const std::optional<double> seconds = io.faults->stallBeforeStep(state.step + 1);
  if (!seconds) return;
  DDP_LOG(Warning) << "fault injection: stalling before step " << state.step + 1 << " for " << *seconds << " s";
  const auto until = SteadyClock::now() + std::chrono::duration<double>(*seconds);
  while (SteadyClock::now() < until && !(io.stop != nullptr && io.stop->load())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A stop asked of this rank: SIGTERM, the controller's stop, or an injected one for the step
// about to run.
bool Trainer::Impl::stopRequestedHere() const {
  return (io.stop != nullptr && io.stop->load()) ||
         (io.faults != nullptr && io.faults->stopRequestedDuring(state.step + 1));
}

CommandWord Trainer::Impl::localCommandWord() const {
  return {stopRequestedHere(), io.checkpointNow != nullptr && io.checkpointNow->load()};
}

// The micro-batches (forward, backward, reduction) and the optimizer step.
Result<model::BatchStats> Trainer::Impl::runStep(RunContext& run, data::BatchIterator* it, bool agree) {
  int micro = config.gradAccumulation;
  if (sampler) {
    const int64_t remainingBatches = (sampler->remaining() + localBatch - 1) / localBatch;
    micro = static_cast<int>(std::min<int64_t>(config.gradAccumulation, remainingBatches));
  }
  model::BatchStats stepStats;
  for (int m = 0; m < micro; ++m) {
    DDP_ASSIGN_OR_RETURN(model::BatchStats s, microBatch(run, it, m, micro));
    stepStats += s;
  }
  // Note [Command word placement]: issued once the gradients are reduced, overlapping the
  // optimizer step.
  if (agree) command.issue(backend, localCommandWord());
  DDP_RETURN_IF_ERROR(optimizerStep(run));
  return stepStats;
}

Result<model::Batch> Trainer::Impl::nextBatch(RunContext& run, data::BatchIterator* it, int m, int micro) {
  model::Batch b;
  if (it != nullptr) {
    if (!it->next(&run.batch)) return internalError("sampler ran out of data mid-step");
    b.size = run.batch.size;
    b.features = run.batch.images.data();
    if (data->train.floatTargets) {
      b.values = run.batch.values.data();  // a regression (spec.loss: mse)
    } else {
      b.classes = run.batch.labels.data();
    }
    return b;
  }
  // Note [Token windows]: micro-batch m of step s reads sampler step s x micro + m.
  const uint64_t index = static_cast<uint64_t>(state.step) * static_cast<uint64_t>(micro) + static_cast<uint64_t>(m);
  const std::vector<int64_t> starts = windows->trainStarts(index);
  DDP_RETURN_IF_ERROR(data->trainTokens.fill(starts, config.gpt.contextLength, config.gpt.vocabSize, &run.tokens)
                          .withContext("training tokens of step " + std::to_string(state.step + 1)));
  b.size = run.tokens.size;
  b.tokensPerSample = run.tokens.contextLength;
  b.tokens = run.tokens.inputs.data();
  b.classes = run.tokens.targets.data();
  return b;
}

Result<model::BatchStats> Trainer::Impl::microBatch(RunContext& run, data::BatchIterator* it, int m, int micro) {
  StepTimings& timings = run.result.timings;
  auto t0 = SteadyClock::now();
  DDP_ASSIGN_OR_RETURN(model::Batch batch, nextBatch(run, it, m, micro));
  timings.data += secondsSince(t0);
  float scale = 1.0f / static_cast<float>(micro);
  if (!shares.empty()) {  // Note [Elastic batch]: this rank's part of the block's mean
    const int64_t block = sampler ? sampler->blockTotal() : windows->globalBatch();
    scale *= static_cast<float>(backend.size() * batch.size) / static_cast<float>(block);
  }
  // Dropout (Note [Trainer step]): from the seed, this rank's slice of the global batch (its first
  // window's global index: rank x local batch at equal shares) and the micro-batch's sampler step.
  const uint64_t slice = windows ? static_cast<uint64_t>(windows->firstIndex()) : static_cast<uint64_t>(backend.rank());
  const uint64_t dropoutSeed = SplitMixRng::mix(
      SplitMixRng::mix(config.seed, slice),
      static_cast<uint64_t>(state.step) * static_cast<uint64_t>(micro) + static_cast<uint64_t>(m));
  const std::string where = "step " + std::to_string(state.step);
  if (ddpJoin) {
    DDP_RETURN_IF_ERROR(ddpJoin->beginIteration(opDeadline()).withContext(where));
  } else if (reducer) {
    DDP_RETURN_IF_ERROR(reducer->setNoSync(m + 1 < micro));
  }
  t0 = SteadyClock::now();
  DDP_ASSIGN_OR_RETURN(model::BatchStats s, model->forwardBackward(batch, run.ready, scale, dropoutSeed));
  timings.compute += secondsSince(t0);
  t0 = SteadyClock::now();
  if (ddpJoin) {
    DDP_RETURN_IF_ERROR(ddpJoin->finalize(opDeadline()).withContext(where));
  } else if (reducer) {
    DDP_RETURN_IF_ERROR(reducer->finalize(opDeadline()).withContext(where));
  } else {
    // DistributedFusedAdam copied each gradient into its bucket when it was marked ready and
    // accumulates the reduced shards itself: the model's gradients restart from zero.
    model->zeroGrad();
  }
  timings.exposedComm += secondsSince(t0);
  return s;
}

Status Trainer::Impl::optimizerStep(RunContext& run) {
  const auto t0 = SteadyClock::now();
  optimizer->setLr(config.lr.lrAt(static_cast<int64_t>(state.scheduleStep + 1e-9)) * lrScale);
  if (run.onDevice) DDP_RETURN_IF_ERROR(model->ops().synchronize().withContext("step " + std::to_string(state.step)));
  // Clipping by spec.optimizer.maxGradNorm happens inside (OptimizerRunner::step).
  DDP_RETURN_IF_ERROR(optimizer->step(opDeadline()).withContext("optimizer step " + std::to_string(state.step)));
  model->zeroGrad();
  run.result.timings.optimizer += secondsSince(t0);
  return Status::ok();
}

// The step is done: the position moves on, the figures and the writer's reports go out.
void Trainer::Impl::recordStep(RunContext& run, const model::BatchStats& stats) {
  ++state.step;
  state.scheduleStep += scheduleIncrement;
  boundarySampler = samplerState();
  ++run.result.timings.steps;
  run.result.stepLosses.push_back(stats.meanLoss());
  if (windows) {  // the stats count tokens
    run.samplesHere += stats.count / config.gpt.contextLength;
    run.tokensHere += stats.count;
  } else {
    run.samplesHere += stats.count;
  }
  observeStep(run.result.timings, run.samplesHere, run.tokensHere, stats.meanLoss());
  reportWrittenCheckpoints();
}

void Trainer::Impl::logStep(RunContext& run, const model::BatchStats& stats) {
  run.log.add(stats);
  if (!printing() || !StepLog::due(state.step, config.logEverySteps, totalSteps)) return;
  StepReport r = run.log.take(secondsSince(run.logStart), backend.size(), totalSteps - state.step);
  r.step = state.step;
  r.totalSteps = totalSteps;
  r.epoch = state.epoch + 1;
  r.epochs = config.epochs;
  r.lr = config.lr.lrAt(static_cast<int64_t>(state.scheduleStep - scheduleIncrement + 1e-9)) * lrScale;  // the step's
  if (windows) {  // the log counted tokens
    r.tokensPerSecond = r.samplesPerSecond;
    r.samplesPerSecond /= config.gpt.contextLength;
  }
  reporter.step(r);
  run.logStart = SteadyClock::now();
}

Result<bool> Trainer::Impl::actOnCommandWord(RunContext& run) {
  DDP_ASSIGN_OR_RETURN(CommandWord agreed, command.await(opDeadline()));
  const CommandAction action = commandAction(agreed);
  if (action == CommandAction::kNone) return false;
  if (action == CommandAction::kCheckpoint && io.checkpointNow != nullptr) io.checkpointNow->store(false);
  if (checkpoints && CheckpointPolicy::onCommand(state.step, lastCheckpointStep)) {
    DDP_RETURN_IF_ERROR(checkpoint().status());
  }
  if (action == CommandAction::kCheckpoint) return false;
  DDP_RETURN_IF_ERROR(drainCheckpoints());
  TrainResult& result = run.result;
  result.stopped = true;
  if (printing()) reporter.stop(state.step, checkpoints ? "stop requested; checkpoint written" : "stop requested (no checkpoint directory)");
  DDP_LOG(Info) << "stop requested: stopped at step " << state.step;
  result.steps = state.step;
  result.epochsCompleted = state.epoch;
  result.trainSeconds = secondsSince(run.start);
  return true;
}

// The pass over the epoch ended: evaluation, then (when the epoch is done) the next epoch's
// start, its checkpoint and, with Join, the stop agreed at epoch boundaries.
Result<LoopExit> Trainer::Impl::endEpoch(RunContext& run) {
  const EpochBoundary boundary = epochBoundary(sampler->remaining(), state.step, totalSteps, config.evalEachEpoch);
  if (boundary.evaluate) DDP_RETURN_IF_ERROR(evaluatePhase(run, state.epoch + 1));
  if (!boundary.epochDone) return LoopExit::kContinue;
  ++state.epoch;
  run.result.epochsCompleted = state.epoch;
  if (state.epoch < config.epochs) sampler->setEpoch(static_cast<uint64_t>(state.epoch));
  boundarySampler = sampler->state();
  // Note [Checkpoint policy]: a periodic checkpoint due at the epoch's last step is taken here.
  if (checkpoints && checkpointPolicy().atEpochEnd(state.step, lastCheckpointStep)) {
    DDP_RETURN_IF_ERROR(checkpoint().status());
  }
  if (!config.join) return LoopExit::kContinue;
  DDP_ASSIGN_OR_RETURN(LoopExit exit, joinStopAtEpochEnd());
  if (exit == LoopExit::kStoppedAtEpochEnd) run.result.stopped = true;
  return exit;
}

// Join: the stop request is agreed on at epoch boundaries only.
Result<LoopExit> Trainer::Impl::joinStopAtEpochEnd() {
  DDP_ASSIGN_OR_RETURN(bool agreed, command.agreeOnStop(backend, stopRequestedHere(), opDeadline()));
  if (!joinStopEndsRun(agreed, state.epoch, config.epochs)) return LoopExit::kContinue;
  if (checkpoints && checkpointPolicy().atJoinStop()) DDP_RETURN_IF_ERROR(checkpoint().status());
  if (printing()) reporter.stop(state.step, "stop requested");
  return LoopExit::kStoppedAtEpochEnd;
}

Status Trainer::Impl::evaluatePhase(RunContext& run, int epochLabel) {
  DDP_ASSIGN_OR_RETURN(model::BatchStats ev, evaluate());
  run.result.testAccuracy = ev.accuracy();
  run.result.testLoss = ev.meanLoss();
  run.result.evalAccuracies.push_back(ev.accuracy());
  std::optional<double> valLoss;
  if (windows) {
    valLoss = ev.meanLoss();
    run.result.valLoss = valLoss;
    run.result.valLosses.push_back(*valLoss);
    run.result.evalSteps.push_back(state.step);
    run.lastEvalStep = state.step;
  }
  observeEval(ev.accuracy(), valLoss);
  if (printing()) {
    reporter.eval({state.step, epochLabel, ev.meanLoss(), ev.accuracy(), secondsSince(run.start), windows.has_value()});
  }
  return Status::ok();
}

// After the loop: the final evaluation and checkpoint, the writer drained, the run's figures.
Result<TrainResult> Trainer::Impl::endRun(RunContext& run) {
  TrainResult& result = run.result;
  // Nothing evaluated in this process (e.g. resumed at the very end): evaluate once.
  if (canEvaluate() && finalEvaluationDue(result.stopped, result.evalAccuracies.size())) {
    DDP_RETURN_IF_ERROR(evaluatePhase(run, state.epoch));
  }
  if (checkpoints && checkpointPolicy().atRunEnd(state.step, lastCheckpointStep, result.stopped)) {
    DDP_RETURN_IF_ERROR(checkpoint().status());
  }
  DDP_RETURN_IF_ERROR(drainCheckpoints());
  result.steps = state.step;
  result.trainSeconds = secondsSince(run.start);
  const StepTimings& t = result.timings;
  const double stepSeconds = t.compute + t.exposedComm + t.optimizer + t.data;
  result.samplesPerSecond = stepSeconds > 0 ? static_cast<double>(run.samplesHere) * backend.size() / stepSeconds : 0;
  result.tokensPerSecond = stepSeconds > 0 ? static_cast<double>(run.tokensHere) * backend.size() / stepSeconds : 0;
  result.timings.hook = reducer ? reducer->stats().hookSeconds : 0.0;
  if (printing() && !result.stopped) {
    reporter.done(state.step, state.epoch, result.testAccuracy, result.trainSeconds, result.valLoss);
  }
  if (printing()) reporter.summary({t.steps, result.samplesPerSecond, t.compute, t.exposedComm, t.hook, t.optimizer, t.data});
  return std::move(result);
}

}  // namespace ddp::runtime
