#pragma once
// Layer ops for the built-in models: GEMM, bias, activations, im2col/col2im, max-pool and
// softmax cross-entropy. Every op exists twice behind one API:
//  - a CPU twin (free functions in ddp::kernels::cpu), the oracle, using OpenBLAS for GEMM;
//  - a CUDA implementation (kernels/layer_ops.cu, cuBLAS + kernels), built with DDP_WITH_CUDA.
// Models call ops through the LayerOps interface, so the same layer code runs on either device.
//
// Layout: all matrices are row-major and contiguous; images are NCHW.
//
// Thread model: the CPU free functions are pure (no shared state besides OpenBLAS's global
// thread count). A LayerOps object is used by one training thread at a time.
//
// Note [Sticky device errors]
// Ops return void so that layer code stays readable; a CUDA failure (launch, cuBLAS, memory) is
// recorded in the LayerOps object as its first error and every later op is skipped.
// Callers check `status()` once per step (Module::forwardBackward does) and turn it into a
// Status with context. The CPU implementation fails only to allocate (out of memory, or past
// CpuOpsOptions::maxAllocationBytes); the same sticky status then skips every later op.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/dtype.h"
#include "common/status.h"

// Lets small helpers (ConvGeometry) run in CUDA kernels too.
#if defined(__CUDACC__)
#define DDP_LAYER_OPS_HD __host__ __device__
#else
#define DDP_LAYER_OPS_HD
#endif

namespace ddp::kernels {

// kGelu is the exact (erf) GELU; kGeluTanh GPT-2's tanh approximation
// 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); kSigmoid 1/(1 + exp(-x)). New values go at the
// end (the numbers are kept).
enum class Activation : uint8_t { kIdentity = 0, kRelu, kTanh, kGelu, kGeluTanh, kSigmoid };
const char* activationName(Activation a);  // "identity", "relu", "tanh", "gelu", "gelu_tanh", "sigmoid"
bool parseActivation(const std::string& name, Activation* out);  // inverse of the above

// Geometry of a 2-D convolution / pooling window over one NCHW batch.
struct ConvGeometry {
  int batch = 1, channels = 1, height = 1, width = 1;
  int kernelH = 1, kernelW = 1, stride = 1, pad = 0;
  DDP_LAYER_OPS_HD int outHeight() const { return (height + 2 * pad - kernelH) / stride + 1; }
  DDP_LAYER_OPS_HD int outWidth() const { return (width + 2 * pad - kernelW) / stride + 1; }
  // Rows and columns of the im2col matrix: (C*kh*kw) x (N*OH*OW).
  DDP_LAYER_OPS_HD int64_t colRows() const { return int64_t{channels} * kernelH * kernelW; }
  DDP_LAYER_OPS_HD int64_t colCols() const { return int64_t{batch} * outHeight() * outWidth(); }
};

// Sets OpenBLAS's thread count for this process (a process-wide setting; default 1 per worker).
void setCpuThreads(int threads);
int cpuThreads();

namespace cpu {

// C (MxN) = alpha * op(A) * op(B) + beta * C. op(A) is MxK, op(B) is KxN; A is stored MxK
// (or KxM when transA), B KxN (or NxK when transB); all contiguous row-major.
void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c);
// y[r][c] += bias[c] for a rows x cols matrix.
void biasAdd(float* y, const float* bias, int rows, int cols);
// db[c] (+)= sum_r dy[r][c]; accumulates when `accumulate`, else overwrites.
void biasGrad(const float* dy, int rows, int cols, float* db, bool accumulate);
// y = f(x) elementwise; y may alias x.
void activationForward(Activation a, const float* x, float* y, size_t n);
// dx = f'(x) * dy, given the forward input x and output y; dx may alias dy.
void activationBackward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                        size_t n);
// Per-channel bias for a (C, P) plane set repeated over N: y[n][c][p] += bias[c].
void channelBiasAdd(float* y, const float* bias, int n, int c, int64_t p);
// db[c] (+)= sum_{n,p} dy[n][c][p].
void channelBiasGrad(const float* dy, int n, int c, int64_t p, float* db, bool accumulate);
// im2col over a whole batch: col is colRows() x colCols(), column index n*OH*OW + oy*OW + ox.
void im2col(const ConvGeometry& g, const float* image, float* col);
// Inverse scatter-add of im2col: image (N*C*H*W) is overwritten with the sum of col entries.
void col2im(const ConvGeometry& g, const float* col, float* image);
// y[b][a][p] = x[a][b][p] for x of shape (A, B, P): swaps the two leading dims.
void swapLeadingDims(const float* x, int a, int b, int64_t p, float* y);
// Max-pool with window kernelH x kernelW, stride, no padding (g.pad must be 0). argmax holds,
// per output element, the flat index of the chosen input element inside its (n, c) plane.
void maxPoolForward(const ConvGeometry& g, const float* x, float* y, int32_t* argmax);
// dx (overwritten, N*C*H*W) receives dy at the argmax positions (summed on ties of windows).
void maxPoolBackward(const ConvGeometry& g, const float* dy, const int32_t* argmax, float* dx);
// Average pooling, window kernelH x kernelW, stride, no padding (g.pad must be 0): y is the mean
// of each window. Backward overwrites dx (N*C*H*W): each input element gets dy / (kh*kw) of
// every window holding it, summed in increasing output index (kernels/sequential_ops.cc).
void avgPoolForward(const ConvGeometry& g, const float* x, float* y);
void avgPoolBackward(const ConvGeometry& g, const float* dy, float* dx);
// Mean squared error per row of pred and target (rows x cols): rowLoss[r] = sum_c (p - t)^2 / cols
// and, unless dpred is nullptr, dpred = scale * 2 (p - t) / cols (scale is usually 1/rows: the
// mean over every value, as torch.nn.MSELoss()).
void meanSquaredError(const float* pred, const float* target, int rows, int cols, float scale, float* rowLoss,
                      float* dpred);
// Row-wise softmax cross-entropy of logits (rows x classes) against labels in [0, classes):
// probs = softmax(logits), rowLoss[r] = -log probs[r][label], rowCorrect[r] = argmax == label.
void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows, int classes,
                                float* probs, float* rowLoss, int32_t* rowCorrect);
// dlogits = scale * (probs - onehot(labels)); scale is usually 1/rows (mean loss).
void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows, int classes,
                                 float scale, float* dlogits);

}  // namespace cpu

// The device-neutral face of the ops above. Pointers are device pointers of device().
class LayerOps {
 public:
  virtual ~LayerOps() = default;
  virtual Device device() const = 0;
  // First error seen (Note [Sticky device errors]); ok on CPU.
  virtual Status status() const = 0;
  // Waits for queued device work (no-op on CPU).
  virtual Status synchronize() = 0;

  // Device memory. allocate returns nullptr on failure and records ResourceExhausted naming
  // `what` (a tensor's name, when the caller has one) and the size; once an error is recorded
  // every later op is skipped (Note [Sticky device errors]), so nothing touches a null buffer.
  virtual void* allocate(size_t bytes, const char* what = nullptr) = 0;
  virtual void release(void* p) = 0;
  virtual void copyToDevice(void* dst, const void* hostSrc, size_t bytes) = 0;
  virtual void copyToHost(void* hostDst, const void* src, size_t bytes) = 0;
  virtual void copyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void fillZero(void* p, size_t bytes) = 0;

  virtual void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
                    const float* b, float beta, float* c) = 0;
  virtual void biasAdd(float* y, const float* bias, int rows, int cols) = 0;
  virtual void biasGrad(const float* dy, int rows, int cols, float* db, bool accumulate) = 0;
  virtual void activationForward(Activation a, const float* x, float* y, size_t n) = 0;
  virtual void activationBackward(Activation a, const float* x, const float* y, const float* dy,
                                  float* dx, size_t n) = 0;
  virtual void channelBiasAdd(float* y, const float* bias, int n, int c, int64_t p) = 0;
  virtual void channelBiasGrad(const float* dy, int n, int c, int64_t p, float* db,
                               bool accumulate) = 0;
  virtual void im2col(const ConvGeometry& g, const float* image, float* col) = 0;
  virtual void col2im(const ConvGeometry& g, const float* col, float* image) = 0;
  virtual void swapLeadingDims(const float* x, int a, int b, int64_t p, float* y) = 0;
  virtual void maxPoolForward(const ConvGeometry& g, const float* x, float* y,
                              int32_t* argmax) = 0;
  virtual void maxPoolBackward(const ConvGeometry& g, const float* dy, const int32_t* argmax,
                               float* dx) = 0;
  virtual void avgPoolForward(const ConvGeometry& g, const float* x, float* y) = 0;
  virtual void avgPoolBackward(const ConvGeometry& g, const float* dy, float* dx) = 0;
  virtual void meanSquaredError(const float* pred, const float* target, int rows, int cols, float scale,
                                float* rowLoss, float* dpred) = 0;
  virtual void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows,
                                          int classes, float* probs, float* rowLoss,
                                          int32_t* rowCorrect) = 0;
  virtual void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows,
                                           int classes, float scale, float* dlogits) = 0;

  // Transformer ops (CPU twins and notes in kernels/transformer_ops.h).
  // out[i][:] (+)= table[ids[i]][:] for i in [0, n); table is vocab x dim. Overwrites unless
  // accumulate.
  virtual void embeddingForward(const int32_t* ids, int n, const float* table, int dim, float* out,
                                bool accumulate) = 0;
  // dtable[ids[i]][:] += dout[i][:] for i in order, after zeroing dtable (vocab x dim) unless
  // accumulate. Deterministic: each dtable row sums its dout rows in increasing i on both
  // devices, so CPU and CUDA give the same bits.
  virtual void embeddingBackward(const int32_t* ids, int n, const float* dout, int dim, int vocab,
                                 float* dtable, bool accumulate) = 0;
  // LayerNorm over the last dim (rows x dim): y = (x-mean)*rstd*gamma + beta with the biased
  // variance, rstd = 1/sqrt(var + eps); saves mean and rstd (rows).
  virtual void layerNormForward(const float* x, const float* gamma, const float* beta, int rows,
                                int dim, float eps, float* y, float* mean, float* rstd) = 0;
  // dx overwritten; dgamma/dbeta accumulated when accumulateParams, else overwritten.
  virtual void layerNormBackward(const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, int rows, int dim, float* dx,
                                 float* dgamma, float* dbeta, bool accumulateParams) = 0;
  // RMSNorm: y = x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps); saves rstd (rows).
  virtual void rmsNormForward(const float* x, const float* gamma, int rows, int dim, float eps,
                              float* y, float* rstd) = 0;
  // dx overwritten; dgamma accumulated when accumulateParams, else overwritten.
  virtual void rmsNormBackward(const float* x, const float* gamma, const float* rstd,
                               const float* dy, int rows, int dim, float* dx, float* dgamma,
                               bool accumulateParams) = 0;
  // Causal multi-head self-attention, materialized. qkv: (batch*seq) x (3*heads*headDim), each
  // row [q (heads x headDim) | k | v]. out: (batch*seq) x (heads*headDim), head h in columns
  // [h*headDim, (h+1)*headDim). probs: batch x heads x seq x seq, softmax(q.k / sqrt(headDim))
  // over j <= i, 0 for j > i; saved for backward.
  virtual void causalAttentionForward(const float* qkv, int batch, int seq, int heads, int headDim,
                                      float* out, float* probs) = 0;
  // dqkv (same layout as qkv) overwritten.
  virtual void causalAttentionBackward(const float* qkv, const float* probs, const float* dout,
                                       int batch, int seq, int heads, int headDim,
                                       float* dqkv) = 0;
  // Rotary position embedding, in place on the q and k parts of qkv (v untouched); row r is at
  // position r % seq; pair (2i, 2i+1) of each head turns by pos * base^(-2i/headDim) (Note
  // [RoPE angles]). headDim even. Backward turns the gradient by the negative angle (the
  // transpose), in place on dqkv.
  virtual void ropeForward(float* qkv, int batch, int seq, int heads, int headDim, float base) = 0;
  virtual void ropeBackward(float* dqkv, int batch, int seq, int heads, int headDim,
                            float base) = 0;
  // y[i] += x[i] (residual adds).
  virtual void addInPlace(float* y, const float* x, size_t n) = 0;
  // Token-level softmax cross-entropy, forward and backward at once, in place: logits (rows x
  // classes) becomes dlogits = scale*(softmax - onehot); rowLoss[r] = -log softmax[label];
  // rowCorrect[r] = (argmax == label), ties to the lowest index. A label < 0 is ignored: its
  // loss and correct are 0 and its dlogits row is 0.
  virtual void crossEntropyInPlace(float* logits, const int32_t* labels, int rows, int classes,
                                   float scale, float* rowLoss, int32_t* rowCorrect) = 0;
  // Dropout with the counter-based mask of Note [Dropout mask] (identical on CPU and CUDA):
  // element i kept iff dropoutUniform(seed, i) >= p, kept values times 1/(1-p); y may alias x.
  // Backward recomputes the mask from seed: dx = mask * dy / (1-p); dx may alias dy.
  virtual void dropoutForward(const float* x, float* y, size_t n, float p, uint64_t seed) = 0;
  virtual void dropoutBackward(const float* dy, float* dx, size_t n, float p, uint64_t seed) = 0;

  // The bf16 matmuls (kernels/bf16_ops.h, Note [bf16 matmuls]): gemm and causal attention with
  // every GEMM operand rounded to bf16 and fp32 accumulation; arguments and contracts as above.
  virtual void gemmBf16(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
                        const float* b, float beta, float* c) = 0;
  virtual void causalAttentionForwardBf16(const float* qkv, int batch, int seq, int heads,
                                          int headDim, float* out, float* probs) = 0;
  virtual void causalAttentionBackwardBf16(const float* qkv, const float* probs, const float* dout,
                                           int batch, int seq, int heads, int headDim,
                                           float* dqkv) = 0;
};

// The CPU implementation (kernels/cpu_layer_ops.cc; OpenBLAS with `threads` threads, 0 keeps
// the current setting).
std::unique_ptr<LayerOps> makeCpuLayerOps(int threads = 0);
struct CpuOpsOptions {
  int threads = 0;
  // A single allocation above this fails as if the memory were not there (0: no limit): tests
  // inject an allocation failure with it (a real giant malloc aborts under AddressSanitizer).
  size_t maxAllocationBytes = 0;
};
std::unique_ptr<LayerOps> makeCpuLayerOps(const CpuOpsOptions& options);
// The CUDA implementation on device `index`; Unimplemented in a build without CUDA,
// Unavailable when no GPU is present.
Result<std::unique_ptr<LayerOps>> makeCudaLayerOps(int index = 0);
// Number of visible CUDA devices (0 without CUDA or without a GPU).
int cudaDeviceCount();

// A growable device buffer owned through a LayerOps (RAII). Thread model: none.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(LayerOps* ops) : ops_(ops) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void setOps(LayerOps* ops) { reset(); ops_ = ops; }
  // Grows to at least `bytes` (contents are lost on growth); never shrinks.
  void reserve(size_t bytes, const char* what = nullptr);  // `what` names it in an allocation error
  void reset();
  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  int32_t* i32() const { return static_cast<int32_t*>(data_); }
  size_t capacity() const { return bytes_; }

 private:
  LayerOps* ops_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ddp::kernels
