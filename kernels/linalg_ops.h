#pragma once
// Dense single-precision matrix products for the kernels that need them (PowerSGD's
// P = M Q, Q = M^T P, M = P Q^T). One API, dispatched on Device: OpenBLAS cblas_sgemm on the
// CPU (the twin), cuBLAS on CUDA.
//
// Layout: every matrix is ROW-MAJOR with an explicit leading dimension (elements between the
// starts of two consecutive rows), as a C++ array `float a[rows][ld]`.
//
// Thread model: stateless on the CPU (OpenBLAS may use its own worker threads inside a call).
// On CUDA, each calling thread gets its own cuBLAS handle per device (created on first use);
// with `stream` == nullptr a call runs on the legacy default stream and returns once done, with
// a stream it is only enqueued there.

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace ddp::kernels::linalg {

// Shape and layout of C[batch][m][n] = alpha * op(A)[batch][m][k] * op(B)[batch][k][n] + beta * C.
// op(X) is X, or X transposed when the trans flag is set (then A is stored k x m, B is n x k).
// Batch item b uses A + b * strideA, B + b * strideB, C + b * strideC.
struct GemmShape {
  bool transA = false;
  bool transB = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0;
  int64_t strideB = 0;
  int64_t strideC = 0;
};

// Checks dimensions and leading dimensions (InvalidArgument naming the bad field).
Status validateGemm(const GemmShape& s);

// C = alpha * op(A) op(B) + beta * C for every batch item. m, n or batch of 0 is a no-op;
// k == 0 scales C by beta. All pointers live on `device`. InvalidArgument on bad shapes,
// Unimplemented for CUDA in a CPU-only build, Internal on a cuBLAS failure.
Status sgemm(Device device, const GemmShape& shape, float alpha, const float* a, const float* b,
             float beta, float* c, void* stream = nullptr);

}  // namespace ddp::kernels::linalg
