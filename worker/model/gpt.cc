// Gpt (gpt.h): embeddings, the blocks, the final norm and the chunked LM head with its loss.
#include "worker/model/gpt.h"

#include <algorithm>
#include <sstream>

#include "common/split_mix_rng.h"

namespace ddp::model {
namespace {

// Rows of logits the LM head computes at once: at most 8 Mi floats (32 MiB) of them.
int headChunkRows(int rows, int vocab) { return std::max(1, std::min(rows, (1 << 23) / std::max(1, vocab))); }

}  // namespace

Result<std::unique_ptr<Gpt>> Gpt::create(const GptConfig& config, std::unique_ptr<kernels::LayerOps> ops,
                                         uint64_t seed) {
  DDP_RETURN_IF_ERROR(config.validate());
  if (ops == nullptr) return invalidArgument("Gpt: no LayerOps");
  std::unique_ptr<Gpt> gpt(new Gpt(config, std::move(ops)));
  gpt->initialize(seed);
  DDP_RETURN_IF_ERROR(gpt->status().withContext("gpt init"));
  return gpt;
}

Gpt::Gpt(const GptConfig& config, std::unique_ptr<kernels::LayerOps> ops)
    : c_(config), ops_(std::move(ops)), mm_{ops_.get(), config.precision} {
  kernels::LayerOps* o = ops_.get();
  const int64_t d = c_.dModel;
  tokens_.allocate(o, "embed.tokens", {c_.vocabSize, d});
  params_.push_back(&tokens_.param);
  if (!c_.rope) {
    positions_.allocate(o, "embed.positions", {c_.contextLength, d});
    params_.push_back(&positions_.param);
  }
  for (int l = 0; l < c_.layers; ++l) {
    blocks_.push_back(std::make_unique<GptBlock>(o, c_, l));
    blockFirst_.push_back(params_.size());
    for (Parameter* p : blocks_.back()->parameters()) params_.push_back(p);
  }
  normIndex_ = params_.size();
  norm_.allocate(o, c_, "norm");
  for (Parameter* p : norm_.parameters()) params_.push_back(p);
  if (!c_.tiedEmbeddings) {
    headIndex_ = params_.size();
    head_.allocate(o, "head.weight", {c_.vocabSize, d});
    params_.push_back(&head_.param);
  }
  for (kernels::DeviceBuffer* b : {&ids_, &labels_, &posIds_, &x_, &xf_, &dxf_, &logits_, &rowLoss_, &rowCorrect_}) {
    b->setOps(o);
  }
}

Gpt::~Gpt() = default;

void Gpt::initialize(uint64_t seed) {
  std::vector<float> host;
  for (size_t i : {size_t{0}, size_t{1}}) {
    if (i == 1 && c_.rope) break;
    Parameter* p = params_[i];
    SplitMixRng rng(SplitMixRng::mix(seed, i));
    host.resize(p->numel());
    for (float& v : host) v = 0.02f * rng.normal();
    ops_->copyToDevice(p->data, host.data(), host.size() * sizeof(float));
  }
  for (size_t l = 0; l < blocks_.size(); ++l) blocks_[l]->initialize(seed, blockFirst_[l]);
  host.assign(static_cast<size_t>(c_.dModel), 1.f);
  ops_->copyToDevice(norm_.gain.param.data, host.data(), host.size() * sizeof(float));  // bias stays 0
  if (!c_.tiedEmbeddings) {
    SplitMixRng rng(SplitMixRng::mix(seed, headIndex_));
    host.resize(head_.param.numel());
    for (float& v : host) v = 0.02f * rng.normal();
    ops_->copyToDevice(head_.param.data, host.data(), host.size() * sizeof(float));
  }
  zeroGrad();
}

std::string Gpt::describe() const {
  std::ostringstream os;
  os << "Gpt(vocab " << c_.vocabSize << ", context " << c_.contextLength << ", " << c_.layers << " layers, "
     << c_.heads << " heads, dModel " << c_.dModel << ", mlp " << c_.hidden() << ", "
     << (c_.norm == GptNormKind::kLayerNorm ? "layernorm" : "rmsnorm") << ", " << (c_.rope ? "rope" : "learned positions")
     << (c_.tiedEmbeddings ? ", tied" : ", untied") << (c_.precision == GptPrecision::kBf16 ? ", bf16 matmuls" : "")
     << ")";
  return os.str();
}

size_t Gpt::numParameters() {
  size_t n = 0;
  for (Parameter* p : params_) n += p->numel();
  return n;
}

void Gpt::zeroGrad() {
  for (Parameter* p : params_) ops_->fillZero(p->grad, p->bytes());
}

const float* Gpt::headWeight() const {
  return static_cast<const float*>(c_.tiedEmbeddings ? tokens_.param.data : head_.param.data);
}

float* Gpt::headGrad() { return static_cast<float*>(c_.tiedEmbeddings ? tokens_.param.grad : head_.param.grad); }

Status Gpt::upload(const Batch& b) {
  const int t = c_.contextLength;
  if (b.size <= 0) return invalidArgument("gpt batch: size must be > 0, got " + std::to_string(b.size));
  if (b.tokens == nullptr || b.classes == nullptr || b.tokensPerSample != t) {
    return invalidArgument("gpt batch: needs tokens and per-token classes of " + std::to_string(t) +
                           " tokens per sample (got " + std::to_string(b.tokensPerSample) + ")");
  }
  const int rows = b.size * t;
  for (int i = 0; i < rows; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= c_.vocabSize || b.classes[i] >= c_.vocabSize) {
      const int32_t bad = b.tokens[i] < 0 || b.tokens[i] >= c_.vocabSize ? b.tokens[i] : b.classes[i];
      return invalidArgument("gpt batch: token " + std::to_string(bad) + " at sample " + std::to_string(i / t) +
                             ", position " + std::to_string(i % t) + " is outside the vocabulary [0, " +
                             std::to_string(c_.vocabSize) + ")");
    }
  }
  const size_t f = sizeof(float), r = static_cast<size_t>(rows), d = static_cast<size_t>(c_.dModel);
  if (rows > reservedRows_) {
    for (kernels::DeviceBuffer* buf : {&x_, &xf_, &dxf_}) buf->reserve(r * d * f);
    for (kernels::DeviceBuffer* buf : {&ids_, &labels_, &posIds_, &rowCorrect_}) buf->reserve(r * sizeof(int32_t));
    rowLoss_.reserve(r * f);
    logits_.reserve(static_cast<size_t>(headChunkRows(rows, c_.vocabSize)) * c_.vocabSize * f);
    norm_.reserve(rows);
    std::vector<int32_t> pos(r);
    for (size_t i = 0; i < r; ++i) pos[i] = static_cast<int32_t>(i % static_cast<size_t>(t));
    ops_->copyToDevice(posIds_.data(), pos.data(), r * sizeof(int32_t));
    reservedRows_ = rows;
  }
  ops_->copyToDevice(ids_.data(), b.tokens, r * sizeof(int32_t));
  ops_->copyToDevice(labels_.data(), b.classes, r * sizeof(int32_t));
  return Status::ok();
}

void Gpt::forwardTrunk(int batch, bool training, uint64_t dropoutSeed) {
  const int rows = batch * c_.contextLength, d = c_.dModel;
  ops_->embeddingForward(ids_.i32(), rows, static_cast<const float*>(tokens_.param.data), d, x_.f32(), false);
  if (!c_.rope) {
    ops_->embeddingForward(posIds_.i32(), rows, static_cast<const float*>(positions_.param.data), d, x_.f32(), true);
  }
  for (size_t l = 0; l < blocks_.size(); ++l) blocks_[l]->forward(x_.f32(), batch, training, SplitMixRng::mix(dropoutSeed, l));
  norm_.forward(*ops_, x_.f32(), xf_.f32(), rows);
}

void Gpt::headAndLoss(int rows, float scale, bool train) {
  const int v = c_.vocabSize, d = c_.dModel, chunk = headChunkRows(rows, v);
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int n = std::min(chunk, rows - r0);
    const float* xf = xf_.f32() + static_cast<size_t>(r0) * d;
    mm_.gemm(false, true, n, v, d, 1.f, xf, headWeight(), 0.f, logits_.f32());
    ops_->crossEntropyInPlace(logits_.f32(), labels_.i32() + r0, n, v, scale, rowLoss_.f32() + r0, rowCorrect_.i32() + r0);
    if (!train) continue;
    mm_.gemm(false, false, n, d, v, 1.f, logits_.f32(), headWeight(), 0.f, dxf_.f32() + static_cast<size_t>(r0) * d);
    mm_.gemm(true, false, v, d, n, 1.f, logits_.f32(), xf, 1.f, headGrad());
  }
}

void Gpt::backwardTrunk(int batch, uint64_t dropoutSeed, const GradReadyFn& ready) {
  const int rows = batch * c_.contextLength, d = c_.dModel;
  if (!c_.tiedEmbeddings && ready) ready(headIndex_);
  float* dx = xf_.f32();  // the head is done with xf_: it holds the residual stream's gradient now
  norm_.backward(*ops_, x_.f32(), dxf_.f32(), dx, rows);
  norm_.ready(ready, normIndex_);
  for (size_t l = blocks_.size(); l-- > 0;) {
    blocks_[l]->backward(dx, batch, SplitMixRng::mix(dropoutSeed, l), ready, blockFirst_[l]);
  }
  if (!c_.rope) {
    ops_->embeddingBackward(posIds_.i32(), rows, dx, d, c_.contextLength, static_cast<float*>(positions_.param.grad),
                            true);
    if (ready) ready(1);
  }
  ops_->embeddingBackward(ids_.i32(), rows, dx, d, c_.vocabSize, static_cast<float*>(tokens_.param.grad), true);
  if (ready) ready(0);
}

Result<BatchStats> Gpt::readStats(int rows) {
  hostLoss_.resize(static_cast<size_t>(rows));
  hostCorrect_.resize(static_cast<size_t>(rows));
  ops_->copyToHost(hostLoss_.data(), rowLoss_.data(), hostLoss_.size() * sizeof(float));
  ops_->copyToHost(hostCorrect_.data(), rowCorrect_.data(), hostCorrect_.size() * sizeof(int32_t));
  DDP_RETURN_IF_ERROR(ops_->status().withContext("gpt step"));
  BatchStats s;
  for (int i = 0; i < rows; ++i) {
    s.lossSum += hostLoss_[static_cast<size_t>(i)];
    s.correct += hostCorrect_[static_cast<size_t>(i)];
  }
  s.count = rows;
  return s;
}

Result<BatchStats> Gpt::forwardBackward(const Batch& batch, const GradReadyFn& ready, float gradScale,
                                        uint64_t dropoutSeed) {
  DDP_RETURN_IF_ERROR(upload(batch));
  const int rows = batch.size * c_.contextLength;
  forwardTrunk(batch.size, /*training=*/true, dropoutSeed);
  headAndLoss(rows, gradScale / static_cast<float>(rows), /*train=*/true);
  backwardTrunk(batch.size, dropoutSeed, ready);
  return readStats(rows);
}

Result<BatchStats> Gpt::evaluate(const Batch& batch) {
  DDP_RETURN_IF_ERROR(upload(batch));
  const int rows = batch.size * c_.contextLength;
  forwardTrunk(batch.size, /*training=*/false, 0);
  headAndLoss(rows, 1.f, /*train=*/false);
  return readStats(rows);
}

Result<std::vector<float>> Gpt::logits(const int32_t* tokens, int batch) {
  const int rows = batch * c_.contextLength, v = c_.vocabSize, d = c_.dModel;
  const std::vector<int32_t> noClasses(static_cast<size_t>(rows), 0);
  DDP_RETURN_IF_ERROR(upload(Batch{.size = batch, .tokensPerSample = c_.contextLength, .tokens = tokens,
                                   .classes = noClasses.data()}));
  forwardTrunk(batch, /*training=*/false, 0);
  std::vector<float> out(static_cast<size_t>(rows) * v);
  const int chunk = headChunkRows(rows, v);
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int n = std::min(chunk, rows - r0);
    mm_.gemm(false, true, n, v, d, 1.f, xf_.f32() + static_cast<size_t>(r0) * d, headWeight(), 0.f, logits_.f32());
    ops_->copyToHost(out.data() + static_cast<size_t>(r0) * v, logits_.data(), static_cast<size_t>(n) * v * sizeof(float));
  }
  DDP_RETURN_IF_ERROR(ops_->status().withContext("gpt logits"));
  return out;
}

}  // namespace ddp::model
