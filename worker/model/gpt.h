#pragma once
// Gpt: a decoder-only transformer language model (GPT-2 style; docs/MODELS.md, "gpt"):
//   token embedding (+ learned position embedding unless rope) -> GptBlock x layers -> final
//   norm -> LM head (tied to the token embedding by default)
// trained with the token-level softmax cross-entropy, the mean over every token of the batch.
// Inputs are typed batches of token windows (Note [Typed batches] in batch.h): tokens and
// classes both batch x contextLength, classes[i] the token after tokens[i]. The LM head and its
// loss run over chunks of rows, so batch*T x vocab logits never all live at once.
// Parameters, in order: embed.tokens, embed.positions (learned only), each block's (gpt_block.h),
// norm.weight (and norm.bias for layernorm), head.weight (untied only). Backward reports them
// ready in strictly descending order; with tied embeddings embed.tokens, which the head also
// uses, is reported last.
// Init as GPT-2 (GptBlock::initialize); embeddings N(0, 0.02); every rank bitwise identical
// from the seed.
// Thread model: one training thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"
#include "worker/model/batch.h"
#include "worker/model/gpt_block.h"
#include "worker/model/module.h"
#include "worker/model/trainable_model.h"

namespace ddp::model {

class Gpt final : public TrainableModel {
 public:
  // Builds and initializes the model on `ops`' device. InvalidArgument naming the field when
  // the configuration cannot be built (GptConfig::validate).
  static Result<std::unique_ptr<Gpt>> create(const GptConfig& config, std::unique_ptr<kernels::LayerOps> ops,
                                             uint64_t seed);
  ~Gpt() override;
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  std::string describe() const override;
  const GptConfig& config() const { return c_; }
  std::vector<Parameter*> parameters() override { return params_; }
  size_t numParameters() override;
  void zeroGrad() override;
  kernels::LayerOps& ops() override { return *ops_; }
  Status status() const override { return ops_->status(); }

  // Forward, loss (mean over the batch's tokens, times gradScale) and backward with `ready`.
  // Returns the loss summed over tokens, the correct next-token guesses and the token count.
  // `dropoutSeed` seeds this step's dropout masks (derive it from the job seed, rank and step).
  Result<BatchStats> forwardBackward(const Batch& batch, const GradReadyFn& ready = {}, float gradScale = 1.f,
                                     uint64_t dropoutSeed = 0) override;
  // Forward and loss only (no dropout).
  Result<BatchStats> evaluate(const Batch& batch) override;
  // Inference: the logits at every position of `batch` windows of contextLength tokens, on the
  // host, batch x contextLength x vocabSize (no dropout). A window shorter than the context is
  // padded at its end: positions up to the last real token do not see the padding (causal).
  Result<std::vector<float>> logits(const int32_t* tokens, int batch);

 private:
  Gpt(const GptConfig& config, std::unique_ptr<kernels::LayerOps> ops);
  void initialize(uint64_t seed);
  Status upload(const Batch& batch);
  void forwardTrunk(int batch, bool training, uint64_t dropoutSeed);
  // The LM head and the loss over chunks of rows; with `train`, dxf_ and the head's gradient.
  void headAndLoss(int rows, float scale, bool train);
  void backwardTrunk(int batch, uint64_t dropoutSeed, const GradReadyFn& ready);
  Result<BatchStats> readStats(int rows);
  const float* headWeight() const;
  float* headGrad();

  GptConfig c_;
  std::unique_ptr<kernels::LayerOps> ops_;
  GptMatmul mm_;  // the LM head's GEMMs in the model's precision
  ParamStorage tokens_, positions_, head_;
  GptNormLayer norm_;
  std::vector<std::unique_ptr<GptBlock>> blocks_;
  std::vector<size_t> blockFirst_;  // index of each block's first parameter
  std::vector<Parameter*> params_;
  size_t normIndex_ = 0, headIndex_ = 0;
  // Activations and scratch (rows = batch * contextLength).
  kernels::DeviceBuffer ids_, labels_, posIds_, x_, xf_, dxf_, logits_, rowLoss_, rowCorrect_;
  int reservedRows_ = 0;
  std::vector<float> hostLoss_;
  std::vector<int32_t> hostCorrect_;
};

}  // namespace ddp::model
