#pragma once
// GptConfig, the shape of a decoder-only transformer, and GptBlock, one of its pre-norm blocks:
//   x = x + dropout(proj(attention(rope?(qkv(norm1(x))))))
//   x = x + dropout(mproj(gelu_tanh(fc(norm2(x)))))
// with a fused QKV projection and causal multi-head attention (docs/MODELS.md, "gpt"). A block
// works on the residual stream in place: forward adds its two branches to x, backward adds the
// gradient through them to dx. It keeps every activation its backward needs, in buffers grown to
// the largest batch seen (a step allocates nothing after the first of its size).
// Parameters, in order: norm1 gain (and bias for layernorm), qkv weight and bias, proj weight
// and bias, norm2 gain (and bias), fc weight and bias, mproj weight and bias; backward reports
// them ready in descending order.
// Thread model: one training thread.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"
#include "worker/model/layer.h"

namespace ddp::model {

enum class GptNormKind : uint8_t { kLayerNorm = 0, kRmsNorm };
// The precision of the GPT's matmuls (spec.precision; Note [bf16 matmuls] in kernels/bf16_ops.h).
enum class GptPrecision : uint8_t { kFp32 = 0, kBf16 };

struct GptConfig {
  int vocabSize = 256;
  int contextLength = 128;
  int layers = 4;
  int heads = 4;
  int dModel = 128;
  int mlpHidden = 0;  // 0: 4 x dModel
  GptNormKind norm = GptNormKind::kLayerNorm;
  bool rope = false;  // rotary positions instead of a learned position embedding
  bool tiedEmbeddings = true;
  float dropout = 0;
  float normEps = 1e-5f;
  float ropeBase = 10000.f;
  GptPrecision precision = GptPrecision::kFp32;

  int hidden() const { return mlpHidden > 0 ? mlpHidden : 4 * dModel; }
  int headDim() const { return dModel / heads; }
  // InvalidArgument naming the field (spec.model.<field>) when the shape cannot be built.
  Status validate() const;
};

// The GPT's GEMMs in its precision: LayerOps::gemm and causalAttention* for fp32, their bf16
// versions (bf16 operands, fp32 accumulation) for bf16. Every matmul of the model goes through it.
struct GptMatmul {
  kernels::LayerOps* ops = nullptr;
  GptPrecision precision = GptPrecision::kFp32;
  void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, const float* b, float beta,
            float* c) const;
  void attentionForward(const float* qkv, int batch, int seq, int heads, int headDim, float* out, float* probs) const;
  void attentionBackward(const float* qkv, const float* probs, const float* dout, int batch, int seq, int heads,
                         int headDim, float* dqkv) const;
};

// A layernorm or rmsnorm over dModel and the statistics its backward needs.
struct GptNormLayer {
  GptNormKind kind = GptNormKind::kLayerNorm;
  float eps = 1e-5f;
  int dim = 0;
  ParamStorage gain, bias;  // bias only for layernorm
  kernels::DeviceBuffer mean, rstd;
  void allocate(kernels::LayerOps* ops, const GptConfig& c, const std::string& name);
  std::vector<Parameter*> parameters();
  void reserve(int rows);
  void forward(kernels::LayerOps& ops, const float* x, float* y, int rows);
  // dx overwritten; the gain (and bias) gradients accumulate.
  void backward(kernels::LayerOps& ops, const float* x, const float* dy, float* dx, int rows);
  // Reports the bias (layernorm), then the gain, ready; `first` is the gain's index.
  void ready(const GradReadyFn& fn, size_t first) const;
};

class GptBlock {
 public:
  GptBlock(kernels::LayerOps* ops, const GptConfig& config, int index);
  std::vector<Parameter*> parameters();
  // GPT-2 init from per-parameter generators seeded by mix(seed, firstIndex + j): weights
  // N(0, 0.02), the two residual projections N(0, 0.02 / sqrt(2 layers)), biases 0, gains 1.
  void initialize(uint64_t seed, size_t firstIndex);
  // `x` (batch*T x dModel) gains the block's two branches. Dropout (training only, p > 0) draws
  // its masks from `dropoutSeed` (Note [Dropout mask] in kernels/transformer_ops.h).
  void forward(float* x, int batch, bool training, uint64_t dropoutSeed);
  // After forward: `dx` (the gradient of the residual stream after the block) becomes the
  // gradient before it; parameter gradients accumulate; ready(firstIndex + j) in descending j.
  void backward(float* dx, int batch, uint64_t dropoutSeed, const GradReadyFn& ready, size_t firstIndex);

 private:
  struct Dense {
    ParamStorage weight, bias;
    int in = 0, out = 0;
  };
  void reserve(int rows, int batch);
  void linearForward(Dense& l, const float* x, float* y, int rows);
  void linearBackward(Dense& l, const float* x, const float* dy, float* dx, int rows);

  kernels::LayerOps* ops_;
  GptConfig c_;
  GptMatmul mm_;
  int index_;
  GptNormLayer norm1_, norm2_;
  Dense qkv_, proj_, fc_, mproj_;
  // Saved for backward (rows = batch * T).
  kernels::DeviceBuffer xIn_, h1_, qkvOut_, probs_, att_, xMid_, h2_, f_, g_;
  // Backward scratch.
  kernels::DeviceBuffer branch_, dh_, dqkv_, datt_, dg_;
  int reservedRows_ = 0;
};

}  // namespace ddp::model
