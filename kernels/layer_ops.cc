#include "kernels/layer_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cpu_vector_math.h"

namespace ddp::kernels {

const char* activationName(Activation a) {
  switch (a) {
    case Activation::kIdentity: return "identity";
    case Activation::kRelu: return "relu";
    case Activation::kTanh: return "tanh";
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSigmoid: return "sigmoid";
  }
  return "?";
}

bool parseActivation(const std::string& name, Activation* out) {
  for (Activation a : {Activation::kIdentity, Activation::kRelu, Activation::kTanh,
                       Activation::kGelu, Activation::kGeluTanh, Activation::kSigmoid}) {
    if (name == activationName(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

void setCpuThreads(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
}
int cpuThreads() { return openblas_get_num_threads(); }

namespace cpu {

void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // BLAS leaves C untouched only for beta == 1; make the k == 0 case explicit.
    for (int64_t i = 0; i < int64_t{m} * n; ++i) c[i] = beta == 0.f ? 0.f : beta * c[i];
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, transA ? m : k, b,
              transB ? k : n, beta, c, n);
}

DDP_VECTOR_CLONES void biasAdd(float* y, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* row = y + int64_t{r} * cols;
    for (int c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

DDP_VECTOR_CLONES void biasGrad(const float* dy, int rows, int cols, float* db, bool accumulate) {
  if (!accumulate) std::fill(db, db + cols, 0.f);
  for (int r = 0; r < rows; ++r) {
    const float* row = dy + int64_t{r} * cols;
    for (int c = 0; c < cols; ++c) db[c] += row[c];
  }
}

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluTanhCubic = 0.044715f;

// Note [Tanh GELU]: with u = sqrt(2/pi)(x + 0.044715x^3), 0.5(1 + tanh(u)) = 1/(1 + exp(-2u)),
// so y = x * sigmoid(2u) (no cancellation as tanh(u) -> -1) and
// dy/dx = s + 2x s(1-s) sqrt(2/pi)(1 + 3*0.044715x^2) with s = sigmoid(2u). The CUDA kernels use
// the same formulas with expf; the CPU uses expApprox (Note [Vectorizable exp]).
inline float geluTanhSigmoid(float x) {
  const float u = kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x);
  return 1.f / (1.f + expApprox(-2.f * u));
}
}  // namespace

DDP_VECTOR_CLONES void activationForward(Activation a, const float* x, float* y, size_t n) {
  switch (a) {
    case Activation::kIdentity:
      if (x != y) std::memcpy(y, x, n * sizeof(float));
      return;
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case Activation::kGelu:
      for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * kInvSqrt2));
      return;
    case Activation::kGeluTanh:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] * geluTanhSigmoid(x[i]);
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
      return;
  }
}

DDP_VECTOR_CLONES void activationBackward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                        size_t n) {
  switch (a) {
    case Activation::kIdentity:
      if (dx != dy) std::memcpy(dx, dy, n * sizeof(float));
      return;
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.f - y[i] * y[i]);
      return;
    case Activation::kGelu:
      for (size_t i = 0; i < n; ++i) {
        float cdf = 0.5f * (1.f + std::erf(x[i] * kInvSqrt2));
        float pdf = kInvSqrt2Pi * std::exp(-0.5f * x[i] * x[i]);
        dx[i] = dy[i] * (cdf + x[i] * pdf);
      }
      return;
    case Activation::kGeluTanh:
      for (size_t i = 0; i < n; ++i) {
        const float s = geluTanhSigmoid(x[i]);
        const float du = kSqrt2OverPi * (1.f + 3.f * kGeluTanhCubic * x[i] * x[i]);
        dx[i] = dy[i] * (s + 2.f * x[i] * s * (1.f - s) * du);
      }
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * (y[i] * (1.f - y[i]));
      return;
  }
}

void channelBiasAdd(float* y, const float* bias, int n, int c, int64_t p) {
  for (int i = 0; i < n; ++i) {
    for (int ch = 0; ch < c; ++ch) {
      float* plane = y + (int64_t{i} * c + ch) * p;
      const float b = bias[ch];
      for (int64_t j = 0; j < p; ++j) plane[j] += b;
    }
  }
}

void channelBiasGrad(const float* dy, int n, int c, int64_t p, float* db, bool accumulate) {
  if (!accumulate) std::fill(db, db + c, 0.f);
  for (int i = 0; i < n; ++i) {
    for (int ch = 0; ch < c; ++ch) {
      db[ch] += sum8(dy + (int64_t{i} * c + ch) * p, p);
    }
  }
}

void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows, int classes,
                                float* probs, float* rowLoss, int32_t* rowCorrect) {
  for (int r = 0; r < rows; ++r) {
    const float* z = logits + int64_t{r} * classes;
    float* p = probs + int64_t{r} * classes;
    float mx = z[0];
    int arg = 0;
    for (int c = 1; c < classes; ++c) {
      if (z[c] > mx) {
        mx = z[c];
        arg = c;
      }
    }
    float sum = 0.f;
    for (int c = 0; c < classes; ++c) {
      p[c] = std::exp(z[c] - mx);
      sum += p[c];
    }
    const float inv = 1.f / sum;
    for (int c = 0; c < classes; ++c) p[c] *= inv;
    const int y = labels[r];
    rowLoss[r] = (mx + std::log(sum)) - z[y];
    rowCorrect[r] = arg == y ? 1 : 0;
  }
}

void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows, int classes,
                                 float scale, float* dlogits) {
  for (int r = 0; r < rows; ++r) {
    const float* p = probs + int64_t{r} * classes;
    float* d = dlogits + int64_t{r} * classes;
    for (int c = 0; c < classes; ++c) d[c] = scale * p[c];
    d[labels[r]] -= scale;
  }
}

}  // namespace cpu

#if !defined(DDP_WITH_CUDA)
Result<std::unique_ptr<LayerOps>> makeCudaLayerOps(int index) {
  return unimplemented("CUDA layer ops requested (device cuda:" + std::to_string(index) +
                       ") but this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
}
int cudaDeviceCount() { return 0; }
#endif

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ops_ = o.ops_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reserve(size_t bytes, const char* what) {
  if (bytes <= bytes_ && data_ != nullptr) return;
  DDP_CHECK(ops_ != nullptr);
  reset();
  data_ = ops_->allocate(bytes, what);
  bytes_ = data_ ? bytes : 0;
}

void DeviceBuffer::reset() {
  if (data_ && ops_) ops_->release(data_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace ddp::kernels
