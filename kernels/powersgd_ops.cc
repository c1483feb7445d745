#include "kernels/powersgd_ops.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/linalg_ops.h"
#include "kernels/powersgd_ops_cpu.h"

#if DDP_WITH_CUDA
#include "kernels/powersgd_ops_cuda.h"
#endif

namespace ddp::kernels::powersgd {
namespace {

#if DDP_WITH_CUDA
#define DDP_POWERSGD_DISPATCH(device, name, ...) \
  if ((device).isCuda()) return cuda::name(__VA_ARGS__)
#else
#define DDP_POWERSGD_DISPATCH(device, name, ...) \
  if ((device).isCuda()) return unimplemented(std::string(#name " on ") + (device).toString() + ": this build has no CUDA")
#endif

void cpuOrthogonalize(float* a, size_t n, size_t r, float epsilon) {
  auto columnNorm = [&](size_t i) {
    double sq = 0;
    for (size_t k = 0; k < n; ++k) {
      const double v = a[k * r + i];
      sq += v * v;
    }
    return std::sqrt(sq);
  };
  for (size_t i = 0; i < r; ++i) {
    const double before = i > 0 ? columnNorm(i) : 0.0;
    // Note [Gram-Schmidt twice]: remove the projections on columns 0..i-1 in two passes.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t j = 0; j < i; ++j) {
        double dot = 0;
        for (size_t k = 0; k < n; ++k) dot += static_cast<double>(a[k * r + j]) * a[k * r + i];
        const float d = static_cast<float>(dot);
        for (size_t k = 0; k < n; ++k) a[k * r + i] -= d * a[k * r + j];
      }
    }
    const double norm = columnNorm(i);
    if (i > 0 && norm <= kDependentColumnTolerance * before) {
      for (size_t k = 0; k < n; ++k) a[k * r + i] = 0.0f;  // Note [Zero columns in Gram-Schmidt]
      continue;
    }
    const float denom = static_cast<float>(norm) + epsilon;
    if (denom != 0.0f) {
      for (size_t k = 0; k < n; ++k) a[k * r + i] /= denom;
    }  // else: Note [Zero columns in Gram-Schmidt]
  }
}

}  // namespace

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fillStandardNormal(float* out, size_t n, uint64_t seed) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kInv53 = 1.0 / 9007199254740992.0;  // 2^-53
  for (size_t i = 0; i < n; i += 2) {
    const uint64_t pair = i / 2;
    // Two independent uniforms per pair; u1 in (0, 1] so log(u1) is finite.
    const double u1 = (static_cast<double>(mix64(seed ^ mix64(2 * pair)) >> 11) + 1.0) * kInv53;
    const double u2 = static_cast<double>(mix64(seed ^ mix64(2 * pair + 1)) >> 11) * kInv53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(radius * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(radius * std::sin(kTwoPi * u2));
  }
}

Status errorFeedbackAdd(Device device, float* grad, const float* error, size_t n, void* stream) {
  DDP_POWERSGD_DISPATCH(device, errorFeedbackAdd, device, grad, error, n, stream);
  (void)stream;
  for (size_t i = 0; i < n; ++i) grad[i] += error[i];
  return Status::ok();
}

Status errorFeedbackUpdate(Device device, float* buffer, float* approx, size_t n, void* stream) {
  DDP_POWERSGD_DISPATCH(device, errorFeedbackUpdate, device, buffer, approx, n, stream);
  (void)stream;
  for (size_t i = 0; i < n; ++i) {
    const float input = buffer[i];
    const float a = approx[i];
    buffer[i] = a;
    approx[i] = input - a;
  }
  return Status::ok();
}

Status scale(Device device, float* x, size_t n, float alpha, void* stream) {
  DDP_POWERSGD_DISPATCH(device, scale, device, x, n, alpha, stream);
  (void)stream;
  for (size_t i = 0; i < n; ++i) x[i] *= alpha;
  return Status::ok();
}

Status orthogonalize(Device device, float* matrices, size_t batch, size_t n, size_t r, float epsilon,
                     void* stream) {
  if (!(epsilon >= 0.0f)) {
    return invalidArgument("orthogonalize: epsilon must be >= 0, got " + std::to_string(epsilon));
  }
  if (batch == 0 || n == 0 || r == 0) return Status::ok();
  DDP_POWERSGD_DISPATCH(device, orthogonalize, device, matrices, batch, n, r, epsilon, stream);
  (void)stream;
  for (size_t b = 0; b < batch; ++b) cpuOrthogonalize(matrices + b * n * r, n, r, epsilon);
  return Status::ok();
}

namespace {

int64_t i64(size_t v) { return static_cast<int64_t>(v); }

}  // namespace

Status computeP(Device device, const float* m, const float* q, float* p, size_t batch, size_t rows,
                size_t cols, size_t r, void* stream) {
  if (device.isCpu()) {  // Note [Skinny PowerSGD products on the CPU]
    for (size_t b = 0; b < batch; ++b) {
      // With no error the kernel only reads M.
      cpu::addErrorAndComputeP(const_cast<float*>(m + b * rows * cols), nullptr, q + b * cols * r, p + b * rows * r,
                               rows, cols, r);
    }
    return Status::ok();
  }
  linalg::GemmShape s;
  s.m = i64(rows);
  s.n = i64(r);
  s.k = i64(cols);
  s.lda = i64(cols > 0 ? cols : 1);
  s.ldb = i64(r > 0 ? r : 1);
  s.ldc = s.ldb;
  s.batch = i64(batch);
  s.strideA = i64(rows * cols);
  s.strideB = i64(cols * r);
  s.strideC = i64(rows * r);
  return linalg::sgemm(device, s, 1.0f, m, q, 0.0f, p, stream);
}

Status computeQ(Device device, const float* m, const float* p, float* q, size_t batch, size_t rows,
                size_t cols, size_t r, void* stream) {
  if (device.isCpu()) {  // Note [Skinny PowerSGD products on the CPU]
    for (size_t b = 0; b < batch; ++b) cpu::computeQ(m + b * rows * cols, p + b * rows * r, q + b * cols * r, rows, cols, r);
    return Status::ok();
  }
  linalg::GemmShape s;
  s.transA = true;  // M^T
  s.m = i64(cols);
  s.n = i64(r);
  s.k = i64(rows);
  s.lda = i64(cols > 0 ? cols : 1);
  s.ldb = i64(r > 0 ? r : 1);
  s.ldc = s.ldb;
  s.batch = i64(batch);
  s.strideA = i64(rows * cols);
  s.strideB = i64(rows * r);
  s.strideC = i64(cols * r);
  return linalg::sgemm(device, s, 1.0f, m, p, 0.0f, q, stream);
}

Status decompress(Device device, const float* p, const float* q, float* m, size_t batch, size_t rows,
                  size_t cols, size_t r, void* stream) {
  if (device.isCpu()) {  // Note [Skinny PowerSGD products on the CPU]
    for (size_t b = 0; b < batch; ++b) cpu::decompress(m + b * rows * cols, p + b * rows * r, q + b * cols * r, nullptr, rows, cols, r);
    return Status::ok();
  }
  linalg::GemmShape s;
  s.transB = true;  // Q^T
  s.m = i64(rows);
  s.n = i64(cols);
  s.k = i64(r);
  s.lda = i64(r > 0 ? r : 1);
  s.ldb = s.lda;
  s.ldc = i64(cols > 0 ? cols : 1);
  s.batch = i64(batch);
  s.strideA = i64(rows * r);
  s.strideB = i64(cols * r);
  s.strideC = i64(rows * cols);
  return linalg::sgemm(device, s, 1.0f, p, q, 0.0f, m, stream);
}

Status addErrorAndComputeP(Device device, float* m, const float* error, const float* q, float* p, size_t rows,
                           size_t cols, size_t r, void* stream) {
  if (device.isCuda()) {  // unfused on CUDA: bandwidth is not the bottleneck there
    DDP_RETURN_IF_ERROR(errorFeedbackAdd(device, m, error, rows * cols, stream));
    return computeP(device, m, q, p, 1, rows, cols, r, stream);
  }
  cpu::addErrorAndComputeP(m, error, q, p, rows, cols, r);  // one pass over M and the error
  return Status::ok();
}

Status compensateAndComputeP(Device device, const float* grad, float* sum, const float* prevP, const float* prevQ,
                             const float* q, float* p, size_t rows, size_t cols, size_t r, void* stream) {
  if (device.isCuda()) {  // an element-wise pass, then the product (cuBLAS) on the sum
#if DDP_WITH_CUDA
    DDP_RETURN_IF_ERROR(cuda::compensate(device, grad, sum, prevP, prevQ, rows, cols, r, stream));
    return computeP(device, sum, q, p, 1, rows, cols, r, stream);
#else
    return unimplemented("compensateAndComputeP on " + device.toString() + ": this build has no CUDA");
#endif
  }
  (void)stream;
  cpu::compensateAndComputeP(grad, sum, prevP, prevQ, q, p, rows, cols, r);  // one pass over grad and sum
  return Status::ok();
}

Status decompressWithError(Device device, float* m, const float* p, const float* q, float* error, size_t rows,
                           size_t cols, size_t r, void* stream) {
  if (device.isCuda()) {
    DDP_RETURN_IF_ERROR(decompress(device, p, q, error, 1, rows, cols, r, stream));
    return errorFeedbackUpdate(device, m, error, rows * cols, stream);
  }
  cpu::decompress(m, p, q, error, rows, cols, r);  // one pass: read M, write M and the error
  return Status::ok();
}

}  // namespace ddp::kernels::powersgd
