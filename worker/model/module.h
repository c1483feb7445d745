#pragma once
// Module: the model interface the engine trains. A user model implements the five virtuals
// (see docs/MODELS.md for a worked example); the built-in models are Sequential stacks.
//
// Contract:
//  - parameters(): a stable list (same order, same Parameter objects) for the module's life.
//    The index of a Parameter in this list is the index passed to GradReadyFn.
//  - forward(input, batch): input is device memory, batch x numel(inputShape()). Returns the
//    logits, batch x outputFeatures(), in memory owned by the module and valid until the next
//    forward. Buffers are preallocated per batch size (reserve) so steps do not allocate.
//    `input` must stay valid until the matching backward (layers read it for gradients).
//  - backward(gradOutput, ready): after forward, with d(loss)/d(logits). Accumulates into every
//    Parameter::grad (read afresh each time: the reducer may rebind it, see
//    worker/core/parameter.h), and calls ready(i) exactly once per parameter, as soon as its
//    gradient is final, in strictly descending i (reverse layer order) so that the reducer can
//    communicate while backward goes on. zeroGrad() clears gradients between steps.
//  - status(): the first device error (Note [Sticky device errors] in kernels/layer_ops.h).
// forwardBackward() and evaluate() wrap the above with softmax cross-entropy for
// classification: labels are host int32 in [0, outputFeatures()). On a typed batch with float
// targets (Batch::values, batch x outputFeatures()) the loss is the mean squared error instead
// (regression: torch.nn.MSELoss(), the mean over every value; `correct` stays 0).
// Thread model: one training thread; GradReadyFn runs on that thread, inside backward().

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"
#include "worker/model/layer.h"
#include "worker/model/trainable_model.h"

namespace ddp::model {

class Module : public TrainableModel {
 public:
  ~Module() override;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  std::string describe() const override = 0;
  std::vector<Parameter*> parameters() override = 0;
  virtual Shape inputShape() const = 0;
  virtual int64_t outputFeatures() const = 0;
  virtual const float* forward(const float* input, int batch) = 0;
  virtual void backward(const float* gradOutput, const GradReadyFn& ready) = 0;
  // Preallocates activations for batches up to `batch` (optional; forward grows as needed).
  void reserve(int /*batch*/) override {}
  // The mode of the next forward/backward: training with the step's dropout seed, or evaluation
  // (no dropout; the default). forwardBackward(Batch) sets it for its step.
  virtual void setTraining(bool /*training*/, uint64_t /*seed*/) {}
  // Grows the buffers backward needs for `batch` samples (optional; backward grows as needed).
  virtual void reserveBackward(int /*batch*/) {}
  // Floats of layer outputs one sample keeps during a step, or 0 when the batch must run whole
  // (Note [Sample chunks] in worker/model/sample_chunks.h; the default: run whole).
  virtual int64_t chunkFloatsPerSample() const { return 0; }
  // Samples per chunk of a training step of `batch` samples (Note [Sample chunks]): on the CPU
  // from chunkFloatsPerSample() with their gradients and the parameters with theirs; on a GPU
  // the whole batch.
  int samplesPerStepChunk(int batch);

  kernels::LayerOps& ops() override { return *ops_; }
  Device device() const { return ops_->device(); }
  Status status() const override { return ops_->status(); }

  // Sets every gradient to zero (through Parameter::grad).
  void zeroGrad() override;
  // Total number of scalar parameters.
  size_t numParameters() override;

  // One training step's compute: forward, softmax cross-entropy (mean over the batch, times
  // gradScale), backward with `ready`. Host inputs: images batch x numel(inputShape()), labels
  // in [0, outputFeatures()). Returns the batch's loss and accuracy (unscaled).
  Result<BatchStats> forwardBackward(const float* hostImages, const int32_t* hostLabels, int batch,
                                     const GradReadyFn& ready = {}, float gradScale = 1.f);
  // Forward and loss only.
  Result<BatchStats> evaluate(const float* hostImages, const int32_t* hostLabels, int batch);
  // TrainableModel: the same on a typed batch of features and one class per sample, or float
  // targets (Note [Typed batches]); InvalidArgument for any other kind of batch. Training mode
  // with `dropoutSeed` for this step (setTraining), evaluation mode after it.
  Result<BatchStats> forwardBackward(const Batch& batch, const GradReadyFn& ready = {}, float gradScale = 1.f,
                                     uint64_t dropoutSeed = 0) override;
  Result<BatchStats> evaluate(const Batch& batch) override;
  // Evaluates `count` samples in batches of `batchSize`.
  Result<BatchStats> evaluateAll(const float* hostImages, const int32_t* hostLabels, int64_t count,
                                 int batchSize);

 protected:
  explicit Module(std::unique_ptr<kernels::LayerOps> ops);

 private:
  using ChunkFn = std::function<Result<BatchStats>(int start, int n, const GradReadyFn& ready)>;
  // Runs `chunk` over [0, batch) in samplesPerStepChunk(batch) pieces, `ready` to the last one
  // only, and sums their stats.
  Result<BatchStats> inChunks(int batch, const GradReadyFn& ready, const ChunkFn& chunk);
  Status checkLabels(const int32_t* hostLabels, int batch) const;
  Result<BatchStats> lossForward(const float* hostImages, const int32_t* hostLabels, int batch);
  // Forward and the mean squared error against host `values` (batch x outputFeatures());
  // with `backward`, the gradient (times gradScale) and backward too.
  Result<BatchStats> regression(const float* hostFeatures, const float* hostValues, int batch, bool backward,
                                const GradReadyFn& ready, float gradScale);
  // One chunk of `n` samples of a batch of `batch`: forward, the MSE and, with `backward`,
  // backward of the loss gradient times gradScale / batch.
  Result<BatchStats> regressionChunk(const float* hostFeatures, const float* hostValues, int n, int batch,
                                     bool backward, const GradReadyFn& ready, float gradScale);
  const float* uploadFeatures(const float* hostFeatures, int batch);

  std::unique_ptr<kernels::LayerOps> ops_;
  // Loss scratch (device) and its host mirrors.
  kernels::DeviceBuffer input_, labels_, probs_, rowLoss_, rowCorrect_, dlogits_, values_;
  std::vector<float> hostLoss_;
  std::vector<int32_t> hostCorrect_;
};

}  // namespace ddp::model
