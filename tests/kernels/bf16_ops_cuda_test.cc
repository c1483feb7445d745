// The bf16 matmuls on CUDA (CudaLayerOps::gemmBf16 and causalAttention*Bf16: cuBLAS with
// CUDA_R_16BF operands and CUBLAS_COMPUTE_32F) against their CPU twins (kernels/bf16_ops.h, the
// oracle, checked against double references in bf16_ops_test.cc), on odd shapes. Skips when no
// GPU is visible.
//
// Tolerances:
//  - GEMM: both sides round the same fp32 operands to the same bf16 bits (round to nearest even
//    on both), and a product of two bf16 values is exact in fp32, so only the order of the fp32
//    additions differs (OpenBLAS vs the tensor cores' tree, whose fp32 accumulator may truncate
//    the bits an alignment shifts out instead of rounding them: a few ulp per addition):
//    |gpu - cpu| <= 8 (k + 2) 2^-24 sum_l |alpha a_il b_lj| + |beta c_ij| 2^-23, per element.
//  - probabilities: fp32 softmax (expf vs std::exp, 1-2 ulp) of scores from the same bf16
//    operands summed in other orders: 1e-5 (1 + |cpu|).
//  - attention outputs and gradients: the operands entering the second product of each pair (P for P V, dS for dQ and
//    dK) are themselves results, computed in fp32 in different orders (expf vs std::exp, other
//    sums), and a value that close to a bf16 rounding tie rounds to the neighbouring bf16 value
//    on the other side (one bf16 ulp, 2^-7 relative); outputs are sums of a few such products of
//    O(1) values, so 1e-2 (1 + |cpu|) bounds them with a wide margin, while a missing rounding
//    or a wrong operand moves them by O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/bf16_ops.h"
#include "kernels/layer_ops.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed, float scale = 1.f) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * r.normal();
  return v;
}

class Bf16OpsCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto ops = makeCudaLayerOps(0);
    ASSERT_TRUE(ops.isOk()) << ops.status();
    gpu_ = std::move(ops).value();
  }
  float* up(const std::vector<float>& v) {
    buffers_.emplace_back(gpu_.get());
    buffers_.back().reserve(std::max<size_t>(v.size(), 1) * sizeof(float));
    gpu_->copyToDevice(buffers_.back().data(), v.data(), v.size() * sizeof(float));
    return buffers_.back().f32();
  }
  std::vector<float> down(const float* p, size_t n) {
    std::vector<float> v(n);
    gpu_->copyToHost(v.data(), p, n * sizeof(float));
    EXPECT_TRUE(gpu_->status().isOk()) << gpu_->status();
    return v;
  }
  static void expectNear(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " index " << i;
    }
  }
  std::unique_ptr<LayerOps> gpu_;
  std::vector<DeviceBuffer> buffers_;
};

TEST_F(Bf16OpsCudaTest, GemmMatchesTheCpuTwinOnOddShapes) {
  const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {13, 17, 11}, {33, 9, 65}, {129, 67, 257}};
  const float alpha = 0.7f, beta = 0.3f;
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb);
      const auto a = rnd(static_cast<size_t>(m) * k, 1 + t), b = rnd(static_cast<size_t>(k) * n, 2 + t);
      const auto c0 = rnd(static_cast<size_t>(m) * n, 3 + t);
      auto want = c0;
      cpu::gemmBf16(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, want.data());
      float* gc = up(c0);
      gpu_->gemmBf16(ta, tb, m, n, k, alpha, up(a), up(b), beta, gc);
      const auto got = down(gc, c0.size());
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double mag = 0;
          for (int l = 0; l < k; ++l) {
            mag += std::fabs(roundToBf16(a[ta ? l * m + i : i * k + l]) * roundToBf16(b[tb ? j * k + l : l * n + j]));
          }
          const size_t e = static_cast<size_t>(i) * n + j;
          const double bound = 8 * (k + 2) * std::ldexp(1.0, -24) * std::fabs(alpha) * mag +
                               std::ldexp(std::fabs(beta * c0[e]), -23) + 1e-30;
          ASSERT_NEAR(got[e], want[e], bound) << i << "," << j;
        }
      }
    }
  }
}

TEST_F(Bf16OpsCudaTest, AttentionMatchesTheCpuTwinOnOddShapes) {
  struct Shape {
    int batch, seq, heads, hd;
  };
  // Heads >= batch and batch > heads take the two batching plans (Note [CUDA attention batching]).
  for (const Shape s : {Shape{2, 7, 3, 5}, Shape{3, 33, 2, 9}, Shape{1, 70, 1, 16}}) {
    SCOPED_TRACE(testing::Message() << s.batch << " " << s.seq << " " << s.heads << " " << s.hd);
    const size_t rows = static_cast<size_t>(s.batch) * s.seq, hd = static_cast<size_t>(s.heads) * s.hd;
    const auto qkv = rnd(rows * 3 * hd, 7), dout = rnd(rows * hd, 8);
    const size_t np = static_cast<size_t>(s.batch) * s.heads * s.seq * s.seq;
    std::vector<float> out(rows * hd), probs(np), dqkv(qkv.size());
    cpu::causalAttentionForwardBf16(qkv.data(), s.batch, s.seq, s.heads, s.hd, out.data(), probs.data());
    cpu::causalAttentionBackwardBf16(qkv.data(), probs.data(), dout.data(), s.batch, s.seq, s.heads, s.hd,
                                     dqkv.data());
    float* gq = up(qkv);
    float* go = up(std::vector<float>(out.size()));
    float* gp = up(std::vector<float>(np, -1.f));
    float* gd = up(std::vector<float>(qkv.size(), 9.f));
    gpu_->causalAttentionForwardBf16(gq, s.batch, s.seq, s.heads, s.hd, go, gp);
    gpu_->causalAttentionBackwardBf16(gq, gp, up(dout), s.batch, s.seq, s.heads, s.hd, gd);
    expectNear(down(gp, np), probs, 1e-5, "probs");
    expectNear(down(go, out.size()), out, 1e-2, "out");
    expectNear(down(gd, dqkv.size()), dqkv, 1e-2, "dqkv");
    // The same call twice gives the same bits (fixed reduction trees, no atomics).
    float* go2 = up(std::vector<float>(out.size()));
    gpu_->causalAttentionForwardBf16(gq, s.batch, s.seq, s.heads, s.hd, go2, gp);
    EXPECT_EQ(down(go2, out.size()), down(go, out.size()));
  }
}

}  // namespace
}  // namespace ddp::kernels
