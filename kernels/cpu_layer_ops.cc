// CpuLayerOps: the LayerOps of the CPU, forwarding to the free functions of kernels/layer_ops.h,
// kernels/transformer_ops.h and kernels/bf16_ops.h (the CPU twins); it owns only the allocation
// policy and the sticky allocation status (Note [Sticky device errors]).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/bf16_ops.h"
#include "kernels/layer_ops.h"
#include "kernels/transformer_ops.h"

namespace ddp::kernels {
namespace {

class CpuLayerOps final : public LayerOps {
 public:
  explicit CpuLayerOps(size_t maxAllocationBytes) : maxAllocationBytes_(maxAllocationBytes) {}
  Device device() const override { return Device::cpu(); }
  Status status() const override { return status_; }
  Status synchronize() override { return status_; }

  void* allocate(size_t bytes, const char* what) override {
    if (!status_.isOk()) return nullptr;
    // 64-byte alignment keeps BLAS and vector loops on whole cache lines.
    const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void* p = maxAllocationBytes_ != 0 && rounded > maxAllocationBytes_ ? nullptr : std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      char gib[32];
      std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(bytes) / (1u << 30));
      status_ = resourceExhausted(std::string("cannot allocate ") + (what != nullptr ? what : "a buffer") + ": " +
                                  std::to_string(bytes) + " bytes (" + gib + " GiB) of host memory");
    }
    return p;
  }
  void release(void* p) override { std::free(p); }
  void copyToDevice(void* dst, const void* src, size_t bytes) override { copyIfOk(dst, src, bytes); }
  void copyToHost(void* dst, const void* src, size_t bytes) override { copyIfOk(dst, src, bytes); }
  void copyOnDevice(void* dst, const void* src, size_t bytes) override { copyIfOk(dst, src, bytes); }
  void fillZero(void* p, size_t bytes) override {
    if (bytes && status_.isOk()) std::memset(p, 0, bytes);
  }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, const float* b,
            float beta, float* c) override {
    cpu::gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void biasAdd(float* y, const float* bias, int rows, int cols) override {
    cpu::biasAdd(y, bias, rows, cols);
  }
  void biasGrad(const float* dy, int rows, int cols, float* db, bool acc) override {
    cpu::biasGrad(dy, rows, cols, db, acc);
  }
  void activationForward(Activation a, const float* x, float* y, size_t n) override {
    cpu::activationForward(a, x, y, n);
  }
  void activationBackward(Activation a, const float* x, const float* y, const float* dy,
                          float* dx, size_t n) override {
    cpu::activationBackward(a, x, y, dy, dx, n);
  }
  void channelBiasAdd(float* y, const float* bias, int n, int c, int64_t p) override {
    cpu::channelBiasAdd(y, bias, n, c, p);
  }
  void channelBiasGrad(const float* dy, int n, int c, int64_t p, float* db, bool acc) override {
    cpu::channelBiasGrad(dy, n, c, p, db, acc);
  }
  void im2col(const ConvGeometry& g, const float* image, float* col) override {
    cpu::im2col(g, image, col);
  }
  void col2im(const ConvGeometry& g, const float* col, float* image) override {
    cpu::col2im(g, col, image);
  }
  void swapLeadingDims(const float* x, int a, int b, int64_t p, float* y) override {
    cpu::swapLeadingDims(x, a, b, p, y);
  }
  void maxPoolForward(const ConvGeometry& g, const float* x, float* y, int32_t* am) override {
    cpu::maxPoolForward(g, x, y, am);
  }
  void maxPoolBackward(const ConvGeometry& g, const float* dy, const int32_t* am,
                       float* dx) override {
    cpu::maxPoolBackward(g, dy, am, dx);
  }
  void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows,
                                  int classes, float* probs, float* rowLoss,
                                  int32_t* rowCorrect) override {
    cpu::softmaxCrossEntropyForward(logits, labels, rows, classes, probs, rowLoss, rowCorrect);
  }
  void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows,
                                   int classes, float scale, float* dlogits) override {
    cpu::softmaxCrossEntropyBackward(probs, labels, rows, classes, scale, dlogits);
  }

  // Transformer ops: the CPU twins of kernels/transformer_ops.h. Like the ops above they do not
  // look at status_: the only CPU failure is an allocation, and a model whose allocation failed
  // checks status() before it reaches them (Note [Sticky device errors]).
  void embeddingForward(const int32_t* ids, int n, const float* table, int dim, float* out,
                        bool acc) override {
    cpu::embeddingForward(ids, n, table, dim, out, acc);
  }
  void embeddingBackward(const int32_t* ids, int n, const float* dout, int dim, int vocab,
                         float* dtable, bool acc) override {
    cpu::embeddingBackward(ids, n, dout, dim, vocab, dtable, acc);
  }
  void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int dim,
                        float eps, float* y, float* mean, float* rstd) override {
    cpu::layerNormForward(x, gamma, beta, rows, dim, eps, y, mean, rstd);
  }
  void layerNormBackward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, int rows, int dim, float* dx, float* dgamma,
                         float* dbeta, bool acc) override {
    cpu::layerNormBackward(x, gamma, mean, rstd, dy, rows, dim, dx, dgamma, dbeta, acc);
  }
  void rmsNormForward(const float* x, const float* gamma, int rows, int dim, float eps, float* y,
                      float* rstd) override {
    cpu::rmsNormForward(x, gamma, rows, dim, eps, y, rstd);
  }
  void rmsNormBackward(const float* x, const float* gamma, const float* rstd, const float* dy,
                       int rows, int dim, float* dx, float* dgamma, bool acc) override {
    cpu::rmsNormBackward(x, gamma, rstd, dy, rows, dim, dx, dgamma, acc);
  }
  void causalAttentionForward(const float* qkv, int batch, int seq, int heads, int headDim,
                              float* out, float* probs) override {
    cpu::causalAttentionForward(qkv, batch, seq, heads, headDim, out, probs);
  }
  void causalAttentionBackward(const float* qkv, const float* probs, const float* dout, int batch,
                               int seq, int heads, int headDim, float* dqkv) override {
    cpu::causalAttentionBackward(qkv, probs, dout, batch, seq, heads, headDim, dqkv);
  }
  void ropeForward(float* qkv, int batch, int seq, int heads, int headDim, float base) override {
    cpu::ropeForward(qkv, batch, seq, heads, headDim, base);
  }
  void ropeBackward(float* dqkv, int batch, int seq, int heads, int headDim, float base) override {
    cpu::ropeBackward(dqkv, batch, seq, heads, headDim, base);
  }
  void addInPlace(float* y, const float* x, size_t n) override { cpu::addInPlace(y, x, n); }
  void crossEntropyInPlace(float* logits, const int32_t* labels, int rows, int classes,
                           float scale, float* rowLoss, int32_t* rowCorrect) override {
    cpu::crossEntropyInPlace(logits, labels, rows, classes, scale, rowLoss, rowCorrect);
  }
  void dropoutForward(const float* x, float* y, size_t n, float p, uint64_t seed) override {
    cpu::dropoutForward(x, y, n, p, seed);
  }
  void dropoutBackward(const float* dy, float* dx, size_t n, float p, uint64_t seed) override {
    cpu::dropoutBackward(dy, dx, n, p, seed);
  }
  void gemmBf16(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, const float* b,
                float beta, float* c) override {
    cpu::gemmBf16(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void causalAttentionForwardBf16(const float* qkv, int batch, int seq, int heads, int headDim,
                                  float* out, float* probs) override {
    cpu::causalAttentionForwardBf16(qkv, batch, seq, heads, headDim, out, probs);
  }
  void causalAttentionBackwardBf16(const float* qkv, const float* probs, const float* dout,
                                   int batch, int seq, int heads, int headDim,
                                   float* dqkv) override {
    cpu::causalAttentionBackwardBf16(qkv, probs, dout, batch, seq, heads, headDim, dqkv);
  }
  void avgPoolForward(const ConvGeometry& g, const float* x, float* y) override { cpu::avgPoolForward(g, x, y); }
  void avgPoolBackward(const ConvGeometry& g, const float* dy, float* dx) override { cpu::avgPoolBackward(g, dy, dx); }
  void meanSquaredError(const float* pred, const float* target, int rows, int cols, float scale, float* rowLoss,
                        float* dpred) override {
    cpu::meanSquaredError(pred, target, rows, cols, scale, rowLoss, dpred);
  }

 private:
  void copyIfOk(void* dst, const void* src, size_t bytes) const {
    if (bytes && dst != src && status_.isOk()) std::memmove(dst, src, bytes);
  }

  const size_t maxAllocationBytes_;
  Status status_;  // the first allocation failure (Note [Sticky device errors])
};

}  // namespace

std::unique_ptr<LayerOps> makeCpuLayerOps(int threads) { return makeCpuLayerOps(CpuOpsOptions{threads, 0}); }

std::unique_ptr<LayerOps> makeCpuLayerOps(const CpuOpsOptions& options) {
  setCpuThreads(options.threads);
  return std::make_unique<CpuLayerOps>(options.maxAllocationBytes);
}

}  // namespace ddp::kernels
