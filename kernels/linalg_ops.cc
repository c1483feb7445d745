#include "kernels/linalg_ops.h"

#include <cblas.h>

#include <climits>
#include <string>

#if DDP_WITH_CUDA
#include "kernels/linalg_ops_cuda.h"
#endif

namespace ddp::kernels::linalg {

Status validateGemm(const GemmShape& s) {
  auto bad = [](const char* field, int64_t v, const std::string& why) {
    return invalidArgument("sgemm: " + std::string(field) + " = " + std::to_string(v) + " " + why);
  };
  if (s.m < 0) return bad("m", s.m, "is negative");
  if (s.n < 0) return bad("n", s.n, "is negative");
  if (s.k < 0) return bad("k", s.k, "is negative");
  if (s.batch < 0) return bad("batch", s.batch, "is negative");
  if (s.m > INT_MAX || s.n > INT_MAX || s.k > INT_MAX) {
    return invalidArgument("sgemm: dimensions exceed the BLAS int range");
  }
  // Row-major: the row length of the stored A is k (no trans) or m (trans).
  const int64_t aCols = s.transA ? s.m : s.k;
  const int64_t bCols = s.transB ? s.k : s.n;
  if (s.lda < (aCols > 0 ? aCols : 1)) return bad("lda", s.lda, "is smaller than A's row length " + std::to_string(aCols));
  if (s.ldb < (bCols > 0 ? bCols : 1)) return bad("ldb", s.ldb, "is smaller than B's row length " + std::to_string(bCols));
  if (s.ldc < (s.n > 0 ? s.n : 1)) return bad("ldc", s.ldc, "is smaller than C's row length " + std::to_string(s.n));
  if (s.strideA < 0 || s.strideB < 0 || s.strideC < 0) return invalidArgument("sgemm: negative batch stride");
  return Status::ok();
}

namespace {

void cpuSgemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c) {
  for (int64_t i = 0; i < s.batch; ++i) {
    cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans, s.transB ? CblasTrans : CblasNoTrans,
                static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), alpha,
                a + i * s.strideA, static_cast<int>(s.lda), b + i * s.strideB, static_cast<int>(s.ldb),
                beta, c + i * s.strideC, static_cast<int>(s.ldc));
  }
}

}  // namespace

Status sgemm(Device device, const GemmShape& shape, float alpha, const float* a, const float* b,
             float beta, float* c, void* stream) {
  DDP_RETURN_IF_ERROR(validateGemm(shape));
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return Status::ok();
  if (device.isCuda()) {
#if DDP_WITH_CUDA
    return cuda::sgemm(device, shape, alpha, a, b, beta, c, stream);
#else
    (void)stream;
    return unimplemented("sgemm on " + device.toString() + ": this build has no CUDA");
#endif
  }
  cpuSgemm(shape, alpha, a, b, beta, c);
  return Status::ok();
}

}  // namespace ddp::kernels::linalg
