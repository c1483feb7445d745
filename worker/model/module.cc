#include "worker/model/module.h"

#include <algorithm>

#include "worker/model/sample_chunks.h"

namespace ddp::model {

Module::Module(std::unique_ptr<kernels::LayerOps> ops)
    : ops_(std::move(ops)), input_(ops_.get()), labels_(ops_.get()), probs_(ops_.get()),
      rowLoss_(ops_.get()), rowCorrect_(ops_.get()), dlogits_(ops_.get()), values_(ops_.get()) {}

Module::~Module() = default;

void Module::zeroGrad() {
  for (Parameter* p : parameters()) ops_->fillZero(p->grad, p->bytes());
}

size_t Module::numParameters() {
  size_t n = 0;
  for (Parameter* p : parameters()) n += p->numel();
  return n;
}

Status Module::checkLabels(const int32_t* hostLabels, int batch) const {
  const int classes = static_cast<int>(outputFeatures());
  for (int i = 0; i < batch; ++i) {
    if (hostLabels[i] < 0 || hostLabels[i] >= classes) {
      return invalidArgument("label " + std::to_string(hostLabels[i]) + " at batch row " + std::to_string(i) +
                             " is outside [0, " + std::to_string(classes) + ")");
    }
  }
  return Status::ok();
}

int Module::samplesPerStepChunk(int batch) {
  if (!device().isCpu()) return batch;
  const auto paramBytes = static_cast<int64_t>(2 * numParameters() * sizeof(float));
  return samplesPerChunk(2 * chunkFloatsPerSample() * static_cast<int64_t>(sizeof(float)), paramBytes, batch);
}

Result<BatchStats> Module::inChunks(int batch, const GradReadyFn& ready, const ChunkFn& chunk) {
  const int per = samplesPerStepChunk(batch);
  if (per < batch) {  // the buffers keep their whole-batch sizes (Note [Sample chunks])
    reserve(batch);
    reserveBackward(batch);
  }
  BatchStats total;
  for (int start = 0; start < batch; start += per) {
    const int n = std::min(per, batch - start);
    DDP_ASSIGN_OR_RETURN(BatchStats s, chunk(start, n, start + n == batch ? ready : GradReadyFn{}));
    total += s;
  }
  return total;
}

Result<BatchStats> Module::lossForward(const float* hostImages, const int32_t* hostLabels,
                                       int batch) {
  if (batch <= 0) return invalidArgument("batch must be > 0, got " + std::to_string(batch));
  DDP_RETURN_IF_ERROR(checkLabels(hostLabels, batch));
  const int classes = static_cast<int>(outputFeatures());
  const float* input = uploadFeatures(hostImages, batch);
  labels_.reserve(batch * sizeof(int32_t));
  ops_->copyToDevice(labels_.data(), hostLabels, batch * sizeof(int32_t));
  const float* logits = forward(input, batch);
  probs_.reserve(static_cast<size_t>(batch) * classes * sizeof(float));
  rowLoss_.reserve(batch * sizeof(float));
  rowCorrect_.reserve(batch * sizeof(int32_t));
  ops_->softmaxCrossEntropyForward(logits, labels_.i32(), batch, classes, probs_.f32(),
                                   rowLoss_.f32(), rowCorrect_.i32());
  hostLoss_.resize(batch);
  hostCorrect_.resize(batch);
  ops_->copyToHost(hostLoss_.data(), rowLoss_.data(), batch * sizeof(float));
  ops_->copyToHost(hostCorrect_.data(), rowCorrect_.data(), batch * sizeof(int32_t));
  DDP_RETURN_IF_ERROR(ops_->status().withContext("model forward"));
  BatchStats stats;
  for (int i = 0; i < batch; ++i) {
    stats.lossSum += hostLoss_[i];
    stats.correct += hostCorrect_[i];
  }
  stats.count = batch;
  return stats;
}

const float* Module::uploadFeatures(const float* hostFeatures, int batch) {
  if (device().isCpu()) return hostFeatures;
  const size_t inBytes = static_cast<size_t>(batch) * shapeNumel(inputShape()) * sizeof(float);
  input_.reserve(inBytes);
  ops_->copyToDevice(input_.data(), hostFeatures, inBytes);
  return input_.f32();
}

Result<BatchStats> Module::regression(const float* hostFeatures, const float* hostValues, int batch, bool backward,
                                      const GradReadyFn& ready, float gradScale) {
  if (batch <= 0) return invalidArgument("batch must be > 0, got " + std::to_string(batch));
  if (!backward) return regressionChunk(hostFeatures, hostValues, batch, batch, false, ready, gradScale);
  const int64_t inNumel = shapeNumel(inputShape()), cols = outputFeatures();
  return inChunks(batch, ready, [&](int start, int n, const GradReadyFn& r) {
    return regressionChunk(hostFeatures + start * inNumel, hostValues + start * cols, n, batch, true, r, gradScale);
  });
}

Result<BatchStats> Module::regressionChunk(const float* hostFeatures, const float* hostValues, int n, int batch,
                                           bool backward, const GradReadyFn& ready, float gradScale) {
  const int cols = static_cast<int>(outputFeatures());
  const size_t valueBytes = static_cast<size_t>(n) * cols * sizeof(float);
  const float* input = uploadFeatures(hostFeatures, n);
  values_.reserve(valueBytes);
  ops_->copyToDevice(values_.data(), hostValues, valueBytes);
  const float* pred = forward(input, n);
  rowLoss_.reserve(n * sizeof(float));
  float* dpred = nullptr;
  if (backward) {
    dlogits_.reserve(valueBytes);
    dpred = dlogits_.f32();
  }
  ops_->meanSquaredError(pred, values_.f32(), n, cols, gradScale / static_cast<float>(batch), rowLoss_.f32(), dpred);
  hostLoss_.resize(n);
  ops_->copyToHost(hostLoss_.data(), rowLoss_.data(), n * sizeof(float));
  DDP_RETURN_IF_ERROR(ops_->status().withContext("model forward"));
  if (backward) {
    this->backward(dpred, ready);
    DDP_RETURN_IF_ERROR(ops_->status().withContext("model backward"));
  }
  BatchStats stats;
  for (int i = 0; i < n; ++i) stats.lossSum += hostLoss_[i];
  stats.count = n;
  return stats;
}

// Labels are checked for the whole batch first: a bad one fails the step before any gradient
// moved. Each row's loss gradient is gradScale / batch whatever the chunk (Note [Sample chunks]).
Result<BatchStats> Module::forwardBackward(const float* hostImages, const int32_t* hostLabels,
                                           int batch, const GradReadyFn& ready, float gradScale) {
  if (batch <= 0) return invalidArgument("batch must be > 0, got " + std::to_string(batch));
  DDP_RETURN_IF_ERROR(checkLabels(hostLabels, batch));
  const int64_t inNumel = shapeNumel(inputShape());
  const int classes = static_cast<int>(outputFeatures());
  const float rowScale = gradScale / static_cast<float>(batch);
  return inChunks(batch, ready, [&](int start, int n, const GradReadyFn& r) -> Result<BatchStats> {
    DDP_ASSIGN_OR_RETURN(BatchStats stats, lossForward(hostImages + start * inNumel, hostLabels + start, n));
    dlogits_.reserve(static_cast<size_t>(n) * classes * sizeof(float));
    ops_->softmaxCrossEntropyBackward(probs_.f32(), labels_.i32(), n, classes, rowScale, dlogits_.f32());
    backward(dlogits_.f32(), r);
    DDP_RETURN_IF_ERROR(ops_->status().withContext("model backward"));
    return stats;
  });
}

Result<BatchStats> Module::evaluate(const float* hostImages, const int32_t* hostLabels, int batch) {
  return lossForward(hostImages, hostLabels, batch);
}

namespace {
Status checkFeatureBatch(const Batch& b) {
  if (b.features == nullptr || b.tokens != nullptr || b.tokensPerSample != 0 ||
      (b.classes == nullptr) == (b.values == nullptr)) {
    return invalidArgument("this model reads features with one class or one row of float targets per sample (got "
                           "another kind of batch)");
  }
  return Status::ok();
}
}  // namespace

Result<BatchStats> Module::forwardBackward(const Batch& batch, const GradReadyFn& ready, float gradScale,
                                           uint64_t dropoutSeed) {
  DDP_RETURN_IF_ERROR(checkFeatureBatch(batch));
  setTraining(true, dropoutSeed);
  Result<BatchStats> r = batch.values != nullptr
                             ? regression(batch.features, batch.values, batch.size, true, ready, gradScale)
                             : forwardBackward(batch.features, batch.classes, batch.size, ready, gradScale);
  setTraining(false, 0);
  return r;
}

Result<BatchStats> Module::evaluate(const Batch& batch) {
  DDP_RETURN_IF_ERROR(checkFeatureBatch(batch));
  if (batch.values != nullptr) return regression(batch.features, batch.values, batch.size, false, {}, 1.f);
  return lossForward(batch.features, batch.classes, batch.size);
}

Result<BatchStats> Module::evaluateAll(const float* hostImages, const int32_t* hostLabels,
                                       int64_t count, int batchSize) {
  if (batchSize <= 0) return invalidArgument("evaluation batch size must be > 0");
  BatchStats total;
  const int64_t inNumel = shapeNumel(inputShape());
  for (int64_t start = 0; start < count; start += batchSize) {
    const int n = static_cast<int>(std::min<int64_t>(batchSize, count - start));
    DDP_ASSIGN_OR_RETURN(BatchStats s,
                         lossForward(hostImages + start * inNumel, hostLabels + start, n));
    total += s;
  }
  return total;
}

}  // namespace ddp::model
