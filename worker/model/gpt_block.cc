// GptBlock and GptConfig (gpt_block.h).
#include "worker/model/gpt_block.h"

#include <cmath>

#include "common/split_mix_rng.h"

namespace ddp::model {

Status GptConfig::validate() const {
  auto bad = [](const std::string& field, const std::string& why) {
    return invalidArgument("spec.model." + field + ": " + why);
  };
  if (vocabSize < 2) return bad("vocabSize", "must be >= 2, got " + std::to_string(vocabSize));
  if (contextLength < 1) return bad("contextLength", "must be >= 1");
  if (layers < 1) return bad("layers", "must be >= 1");
  if (heads < 1) return bad("heads", "must be >= 1");
  if (dModel < 1 || dModel % heads != 0) {
    return bad("dModel", "must be a positive multiple of heads (" + std::to_string(dModel) + " % " +
                             std::to_string(heads) + ")");
  }
  if (rope && headDim() % 2 != 0) return bad("positions", "rope needs an even head size, got " + std::to_string(headDim()));
  if (mlpHidden < 0) return bad("mlpHidden", "must be >= 0");
  if (!(dropout >= 0 && dropout < 1)) return bad("dropout", "must be in [0, 1)");
  return Status::ok();
}

void GptMatmul::gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, const float* b,
                     float beta, float* c) const {
  if (precision == GptPrecision::kBf16) {
    ops->gemmBf16(transA, transB, m, n, k, alpha, a, b, beta, c);
  } else {
    ops->gemm(transA, transB, m, n, k, alpha, a, b, beta, c);
  }
}

void GptMatmul::attentionForward(const float* qkv, int batch, int seq, int heads, int headDim, float* out,
                                 float* probs) const {
  if (precision == GptPrecision::kBf16) {
    ops->causalAttentionForwardBf16(qkv, batch, seq, heads, headDim, out, probs);
  } else {
    ops->causalAttentionForward(qkv, batch, seq, heads, headDim, out, probs);
  }
}

void GptMatmul::attentionBackward(const float* qkv, const float* probs, const float* dout, int batch, int seq,
                                  int heads, int headDim, float* dqkv) const {
  if (precision == GptPrecision::kBf16) {
    ops->causalAttentionBackwardBf16(qkv, probs, dout, batch, seq, heads, headDim, dqkv);
  } else {
    ops->causalAttentionBackward(qkv, probs, dout, batch, seq, heads, headDim, dqkv);
  }
}

void GptNormLayer::allocate(kernels::LayerOps* ops, const GptConfig& c, const std::string& name) {
  kind = c.norm;
  eps = c.normEps;
  dim = c.dModel;
  gain.allocate(ops, name + ".weight", {dim});
  if (kind == GptNormKind::kLayerNorm) bias.allocate(ops, name + ".bias", {dim});
  mean.setOps(ops);
  rstd.setOps(ops);
}

std::vector<Parameter*> GptNormLayer::parameters() {
  if (kind == GptNormKind::kLayerNorm) return {&gain.param, &bias.param};
  return {&gain.param};
}

void GptNormLayer::reserve(int rows) {
  mean.reserve(static_cast<size_t>(rows) * sizeof(float));
  rstd.reserve(static_cast<size_t>(rows) * sizeof(float));
}

void GptNormLayer::forward(kernels::LayerOps& ops, const float* x, float* y, int rows) {
  const auto* g = static_cast<const float*>(gain.param.data);
  if (kind == GptNormKind::kLayerNorm) {
    ops.layerNormForward(x, g, static_cast<const float*>(bias.param.data), rows, dim, eps, y, mean.f32(), rstd.f32());
  } else {
    ops.rmsNormForward(x, g, rows, dim, eps, y, rstd.f32());
  }
}

void GptNormLayer::backward(kernels::LayerOps& ops, const float* x, const float* dy, float* dx, int rows) {
  const auto* g = static_cast<const float*>(gain.param.data);
  auto* dg = static_cast<float*>(gain.param.grad);
  if (kind == GptNormKind::kLayerNorm) {
    ops.layerNormBackward(x, g, mean.f32(), rstd.f32(), dy, rows, dim, dx, dg, static_cast<float*>(bias.param.grad),
                          /*accumulateParams=*/true);
  } else {
    ops.rmsNormBackward(x, g, rstd.f32(), dy, rows, dim, dx, dg, /*accumulateParams=*/true);
  }
}

void GptNormLayer::ready(const GradReadyFn& fn, size_t first) const {
  if (!fn) return;
  if (kind == GptNormKind::kLayerNorm) fn(first + 1);
  fn(first);
}

GptBlock::GptBlock(kernels::LayerOps* ops, const GptConfig& config, int index)
    : ops_(ops), c_(config), mm_{ops, config.precision}, index_(index) {
  const std::string p = "blocks." + std::to_string(index) + ".";
  const int64_t d = c_.dModel, h = c_.hidden();
  auto dense = [&](Dense& l, const std::string& name, int64_t in, int64_t out) {
    l.weight.allocate(ops, p + name + ".weight", {out, in});
    l.bias.allocate(ops, p + name + ".bias", {out});
    l.in = static_cast<int>(in);
    l.out = static_cast<int>(out);
  };
  norm1_.allocate(ops, c_, p + "norm1");
  dense(qkv_, "attn.qkv", d, 3 * d);
  dense(proj_, "attn.proj", d, d);
  norm2_.allocate(ops, c_, p + "norm2");
  dense(fc_, "mlp.fc", d, h);
  dense(mproj_, "mlp.proj", h, d);
  for (kernels::DeviceBuffer* b : {&xIn_, &h1_, &qkvOut_, &probs_, &att_, &xMid_, &h2_, &f_, &g_, &branch_, &dh_, &dqkv_,
                                   &datt_, &dg_}) {
    b->setOps(ops);
  }
}

std::vector<Parameter*> GptBlock::parameters() {
  std::vector<Parameter*> out = norm1_.parameters();
  for (Dense* l : {&qkv_, &proj_}) out.insert(out.end(), {&l->weight.param, &l->bias.param});
  for (Parameter* q : norm2_.parameters()) out.push_back(q);
  for (Dense* l : {&fc_, &mproj_}) out.insert(out.end(), {&l->weight.param, &l->bias.param});
  return out;
}

void GptBlock::initialize(uint64_t seed, size_t firstIndex) {
  const float residualStd = 0.02f / std::sqrt(2.f * static_cast<float>(c_.layers));
  std::vector<float> host;
  size_t j = firstIndex;
  for (Parameter* q : parameters()) {
    SplitMixRng rng(SplitMixRng::mix(seed, j++));
    host.assign(q->numel(), 0.f);
    const bool gain = q == &norm1_.gain.param || q == &norm2_.gain.param;
    const bool weight = q->shape.size() == 2;
    const bool residual = q == &proj_.weight.param || q == &mproj_.weight.param;
    if (gain) {
      host.assign(q->numel(), 1.f);
    } else if (weight) {
      const float stdev = residual ? residualStd : 0.02f;
      for (float& v : host) v = stdev * rng.normal();
    }
    ops_->copyToDevice(q->data, host.data(), host.size() * sizeof(float));
  }
}

void GptBlock::reserve(int rows, int batch) {
  if (rows <= reservedRows_) return;
  const size_t f = sizeof(float), r = static_cast<size_t>(rows), d = c_.dModel, h = c_.hidden();
  const size_t t = c_.contextLength;
  for (kernels::DeviceBuffer* b : {&xIn_, &h1_, &att_, &xMid_, &h2_, &branch_, &dh_, &datt_}) b->reserve(r * d * f);
  for (kernels::DeviceBuffer* b : {&qkvOut_, &dqkv_}) b->reserve(r * 3 * d * f);
  for (kernels::DeviceBuffer* b : {&f_, &g_, &dg_}) b->reserve(r * h * f);
  probs_.reserve(static_cast<size_t>(batch) * c_.heads * t * t * f);
  norm1_.reserve(rows);
  norm2_.reserve(rows);
  reservedRows_ = rows;
}

void GptBlock::linearForward(Dense& l, const float* x, float* y, int rows) {
  mm_.gemm(false, true, rows, l.out, l.in, 1.f, x, static_cast<const float*>(l.weight.param.data), 0.f, y);
  ops_->biasAdd(y, static_cast<const float*>(l.bias.param.data), rows, l.out);
}

// Parameter gradients accumulate; dx (rows x in) is overwritten.
void GptBlock::linearBackward(Dense& l, const float* x, const float* dy, float* dx, int rows) {
  ops_->biasGrad(dy, rows, l.out, static_cast<float*>(l.bias.param.grad), /*accumulate=*/true);
  mm_.gemm(true, false, l.out, l.in, rows, 1.f, dy, x, 1.f, static_cast<float*>(l.weight.param.grad));
  mm_.gemm(false, false, rows, l.in, l.out, 1.f, dy, static_cast<const float*>(l.weight.param.data), 0.f, dx);
}

void GptBlock::forward(float* x, int batch, bool training, uint64_t dropoutSeed) {
  const int t = c_.contextLength, rows = batch * t, d = c_.dModel, h = c_.hidden();
  reserve(rows, batch);
  const size_t rd = static_cast<size_t>(rows) * d;
  const bool drop = training && c_.dropout > 0;
  ops_->copyOnDevice(xIn_.data(), x, rd * sizeof(float));
  norm1_.forward(*ops_, x, h1_.f32(), rows);
  linearForward(qkv_, h1_.f32(), qkvOut_.f32(), rows);
  if (c_.rope) ops_->ropeForward(qkvOut_.f32(), batch, t, c_.heads, c_.headDim(), c_.ropeBase);
  mm_.attentionForward(qkvOut_.f32(), batch, t, c_.heads, c_.headDim(), att_.f32(), probs_.f32());
  linearForward(proj_, att_.f32(), branch_.f32(), rows);
  if (drop) ops_->dropoutForward(branch_.f32(), branch_.f32(), rd, c_.dropout, SplitMixRng::mix(dropoutSeed, 0));
  ops_->addInPlace(x, branch_.f32(), rd);
  ops_->copyOnDevice(xMid_.data(), x, rd * sizeof(float));
  norm2_.forward(*ops_, x, h2_.f32(), rows);
  linearForward(fc_, h2_.f32(), f_.f32(), rows);
  ops_->activationForward(kernels::Activation::kGeluTanh, f_.f32(), g_.f32(), static_cast<size_t>(rows) * h);
  linearForward(mproj_, g_.f32(), branch_.f32(), rows);
  if (drop) ops_->dropoutForward(branch_.f32(), branch_.f32(), rd, c_.dropout, SplitMixRng::mix(dropoutSeed, 1));
  ops_->addInPlace(x, branch_.f32(), rd);
}

void GptBlock::backward(float* dx, int batch, uint64_t dropoutSeed, const GradReadyFn& ready, size_t firstIndex) {
  const int t = c_.contextLength, rows = batch * t, d = c_.dModel, h = c_.hidden();
  const size_t rd = static_cast<size_t>(rows) * d;
  const bool drop = c_.dropout > 0;
  const bool ln = c_.norm == GptNormKind::kLayerNorm;
  // Indices: norm1 (1 or 2), qkv (2), proj (2), norm2 (1 or 2), fc (2), mproj (2).
  const size_t n1 = ln ? 2 : 1, iQkv = firstIndex + n1, iProj = iQkv + 2, iNorm2 = iProj + 2, iFc = iNorm2 + n1,
               iMproj = iFc + 2;
  auto readyPair = [&](size_t weight) {  // the bias, then the weight
    if (!ready) return;
    ready(weight + 1);
    ready(weight);
  };
  // MLP branch: dx flows into the branch unchanged (a residual add).
  const float* dBranch = dx;
  if (drop) {
    ops_->dropoutBackward(dx, branch_.f32(), rd, c_.dropout, SplitMixRng::mix(dropoutSeed, 1));
    dBranch = branch_.f32();
  }
  linearBackward(mproj_, g_.f32(), dBranch, dg_.f32(), rows);
  readyPair(iMproj);
  ops_->activationBackward(kernels::Activation::kGeluTanh, f_.f32(), g_.f32(), dg_.f32(), dg_.f32(),
                           static_cast<size_t>(rows) * h);
  linearBackward(fc_, h2_.f32(), dg_.f32(), dh_.f32(), rows);
  readyPair(iFc);
  norm2_.backward(*ops_, xMid_.f32(), dh_.f32(), datt_.f32(), rows);
  norm2_.ready(ready, iNorm2);
  ops_->addInPlace(dx, datt_.f32(), rd);
  // Attention branch.
  dBranch = dx;
  if (drop) {
    ops_->dropoutBackward(dx, branch_.f32(), rd, c_.dropout, SplitMixRng::mix(dropoutSeed, 0));
    dBranch = branch_.f32();
  }
  linearBackward(proj_, att_.f32(), dBranch, datt_.f32(), rows);
  readyPair(iProj);
  mm_.attentionBackward(qkvOut_.f32(), probs_.f32(), datt_.f32(), batch, t, c_.heads, c_.headDim(), dqkv_.f32());
  if (c_.rope) ops_->ropeBackward(dqkv_.f32(), batch, t, c_.heads, c_.headDim(), c_.ropeBase);
  linearBackward(qkv_, h1_.f32(), dqkv_.f32(), dh_.f32(), rows);
  readyPair(iQkv);
  norm1_.backward(*ops_, xIn_.f32(), dh_.f32(), datt_.f32(), rows);
  norm1_.ready(ready, firstIndex);
  ops_->addInPlace(dx, datt_.f32(), rd);
}

}  // namespace ddp::model
