// CUDA transformer ops (kernels/transformer_ops.cu and attention_ops.cu through CudaLayerOps) and
// the bf16 matmuls against their CPU twins (the oracles, checked against double references in
// transformer_ops_test.cc and bf16_ops_test.cc), on odd shapes. Skips when no GPU is visible.
//
// Tolerances, relative (|gpu - cpu| <= tol * (1 + |cpu|)):
//  - embedding forward/backward, dropout, addInPlace: 0, bit for bit (same additions in the same
//    order, Note [Embedding gradient order]; the same mask, Note [Dropout mask]);
//  - RoPE: 1e-6 (the same float cos/sin tables; the device contracts a*c - b*s into an FMA);
//  - norms, cross-entropy, tanh GELU: 1e-5 (other summation trees; expf vs expApprox);
//  - attention: 1e-4 (cuBLAS full-square FP32 GEMMs vs OpenBLAS over row blocks; no TF32).
// The bf16 matmuls (Note [bf16 matmuls] in kernels/bf16_ops.h: cuBLAS with CUDA_R_16BF operands
// and CUBLAS_COMPUTE_32F against kernels/bf16_ops_cpu.cc):
//  - GEMM: both sides round the same fp32 operands to the same bf16 bits (round to nearest even
//    on both), and a product of two bf16 values is exact in fp32, so only the order of the fp32
//    additions differs (OpenBLAS vs the tensor cores' tree, whose fp32 accumulator may truncate
//    the bits an alignment shifts out instead of rounding them: a few ulp per addition):
//    |gpu - cpu| <= 8 (k + 2) 2^-24 sum_l |alpha a_il b_lj| + |beta c_ij| 2^-23, per element;
//  - attention probabilities: fp32 softmax (expf vs std::exp, 1-2 ulp) of scores from the same
//    bf16 operands summed in other orders: 1e-5;
//  - attention outputs and gradients: 1e-2. The operands entering the second product of each
//    pair (P for P V, dS for dQ and dK) are results computed in fp32 in different orders, and
//    one that close to a bf16 rounding tie rounds to the neighbouring bf16 value (one bf16 ulp,
//    2^-7 relative) on the other device; outputs are short sums of such products of O(1)
//    values, while a missing rounding or a wrong operand moves them by O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/bf16_ops.h"
#include "kernels/layer_ops.h"
#include "kernels/transformer_ops.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed, float scale = 1.f) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * r.normal();
  return v;
}

class TransformerOpsCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto ops = makeCudaLayerOps(0);
    ASSERT_TRUE(ops.isOk()) << ops.status();
    gpu_ = std::move(ops).value();
  }
  // Device copy of a host vector (kept alive by the fixture).
  template <typename T>
  T* up(const std::vector<T>& v) {
    buffers_.emplace_back(gpu_.get());
    buffers_.back().reserve(std::max<size_t>(v.size(), 1) * sizeof(T));
    gpu_->copyToDevice(buffers_.back().data(), v.data(), v.size() * sizeof(T));
    return static_cast<T*>(buffers_.back().data());
  }
  template <typename T>
  std::vector<T> down(const T* p, size_t n) {
    std::vector<T> v(n);
    gpu_->copyToHost(v.data(), p, n * sizeof(T));
    EXPECT_TRUE(gpu_->status().isOk()) << gpu_->status();
    return v;
  }
  static void expectNear(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " index " << i;
    }
  }
  std::unique_ptr<LayerOps> gpu_;
  std::vector<DeviceBuffer> buffers_;
};

TEST_F(TransformerOpsCudaTest, GeluTanhMatchesCpu) {
  auto x = rnd(1001, 1, 4.f), dy = rnd(1001, 2);
  x[0] = -50.f, x[1] = 50.f, x[2] = 0.f;
  std::vector<float> y(x.size()), dx(x.size());
  cpu::activationForward(Activation::kGeluTanh, x.data(), y.data(), x.size());
  cpu::activationBackward(Activation::kGeluTanh, x.data(), y.data(), dy.data(), dx.data(), x.size());
  float* gx = up(x);
  float* gy = up(std::vector<float>(x.size()));
  float* gdy = up(dy);
  gpu_->activationForward(Activation::kGeluTanh, gx, gy, x.size());
  gpu_->activationBackward(Activation::kGeluTanh, gx, gy, gdy, gdy, x.size());  // dx aliases dy
  expectNear(down(gy, x.size()), y, 1e-5, "y");
  expectNear(down(gdy, x.size()), dx, 1e-5, "dx");
}

TEST_F(TransformerOpsCudaTest, EmbeddingMatchesCpuBitForBit) {
  const int n = 301, dim = 37, vocab = 53;
  SplitMixRng r(3);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(r.below(r.uniform() < 0.3f ? 3 : vocab));  // many repeats
  const auto table = rnd(vocab * dim, 4), dout = rnd(n * dim, 5), base = rnd(vocab * dim, 6);
  int32_t* gids = up(ids);
  for (bool acc : {false, true}) {
    std::vector<float> out = rnd(n * dim, 7), dtable = base;
    float* gout = up(out);
    float* gtable = up(dtable);
    cpu::embeddingForward(ids.data(), n, table.data(), dim, out.data(), acc);
    cpu::embeddingBackward(ids.data(), n, dout.data(), dim, vocab, dtable.data(), acc);
    gpu_->embeddingForward(gids, n, up(table), dim, gout, acc);
    gpu_->embeddingBackward(gids, n, up(dout), dim, vocab, gtable, acc);
    EXPECT_EQ(down(gout, out.size()), out) << acc;
    EXPECT_EQ(down(gtable, dtable.size()), dtable) << acc;
  }
}

TEST_F(TransformerOpsCudaTest, NormsMatchCpu) {
  const int rows = 151, dim = 97;  // three 64-row chunks of the parameter gradients
  auto x = rnd(rows * dim, 8, 2.f);
  for (int c = 0; c < dim; ++c) x[c] += 30.f;
  const auto gamma = rnd(dim, 9), beta = rnd(dim, 10), dy = rnd(rows * dim, 11);
  for (bool acc : {false, true}) {
    std::vector<float> y(x.size()), mean(rows), rstd(rows), dx(x.size()), dg = rnd(dim, 12), db = rnd(dim, 13);
    float *gx = up(x), *gg = up(gamma), *gb = up(beta), *gdy = up(dy), *gy = up(y), *gm = up(mean),
          *gr = up(rstd), *gdx = up(dx), *gdg = up(dg), *gdb = up(db);
    cpu::layerNormForward(x.data(), gamma.data(), beta.data(), rows, dim, 1e-5f, y.data(), mean.data(), rstd.data());
    cpu::layerNormBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), rows, dim, dx.data(),
                           dg.data(), db.data(), acc);
    gpu_->layerNormForward(gx, gg, gb, rows, dim, 1e-5f, gy, gm, gr);
    gpu_->layerNormBackward(gx, gg, gm, gr, gdy, rows, dim, gdx, gdg, gdb, acc);
    expectNear(down(gy, y.size()), y, 1e-5, "ln y");
    expectNear(down(gm, rows), mean, 1e-5, "ln mean");
    expectNear(down(gr, rows), rstd, 1e-5, "ln rstd");
    expectNear(down(gdx, dx.size()), dx, 1e-5, "ln dx");
    expectNear(down(gdg, dim), dg, 1e-5, "ln dgamma");
    expectNear(down(gdb, dim), db, 1e-5, "ln dbeta");

    cpu::rmsNormForward(x.data(), gamma.data(), rows, dim, 1e-6f, y.data(), rstd.data());
    cpu::rmsNormBackward(x.data(), gamma.data(), rstd.data(), dy.data(), rows, dim, dx.data(), dg.data(), acc);
    gpu_->rmsNormForward(gx, gg, rows, dim, 1e-6f, gy, gr);
    gpu_->rmsNormBackward(gx, gg, gr, gdy, rows, dim, gdx, gdg, acc);
    expectNear(down(gy, y.size()), y, 1e-5, "rms y");
    expectNear(down(gr, rows), rstd, 1e-5, "rms rstd");
    expectNear(down(gdx, dx.size()), dx, 1e-5, "rms dx");
    expectNear(down(gdg, dim), dg, 1e-5, "rms dgamma");
  }
}

// Both batching orientations of Note [CUDA attention batching] (heads >= batch and batch > heads).
TEST_F(TransformerOpsCudaTest, CausalAttentionMatchesCpuAndIsDeterministic) {
  struct Shape { int batch, seq, heads, headDim; };
  for (Shape s : {Shape{2, 37, 3, 10}, Shape{5, 19, 2, 7}, Shape{1, 1, 1, 3}, Shape{3, 70, 1, 9}}) {
    SCOPED_TRACE(::testing::Message() << s.batch << "x" << s.seq << " heads " << s.heads << " dim " << s.headDim);
    const size_t n = size_t(s.batch) * s.seq * 3 * s.heads * s.headDim;
    const size_t no = size_t(s.batch) * s.seq * s.heads * s.headDim, np = size_t(s.batch) * s.heads * s.seq * s.seq;
    const auto qkv = rnd(n, 14), dout = rnd(no, 15);
    std::vector<float> out(no), probs(np), dqkv(n);
    cpu::causalAttentionForward(qkv.data(), s.batch, s.seq, s.heads, s.headDim, out.data(), probs.data());
    cpu::causalAttentionBackward(qkv.data(), probs.data(), dout.data(), s.batch, s.seq, s.heads, s.headDim,
                                 dqkv.data());
    float *gq = up(qkv), *go = up(std::vector<float>(no, -1.f)), *gp = up(std::vector<float>(np, -1.f)),
          *gdo = up(dout), *gd = up(std::vector<float>(n, -1.f));
    gpu_->causalAttentionForward(gq, s.batch, s.seq, s.heads, s.headDim, go, gp);
    gpu_->causalAttentionBackward(gq, gp, gdo, s.batch, s.seq, s.heads, s.headDim, gd);
    const auto gotProbs = down(gp, np);
    expectNear(down(go, no), out, 1e-4, "out");
    expectNear(gotProbs, probs, 1e-4, "probs");
    const auto gotDqkv = down(gd, n);
    expectNear(gotDqkv, dqkv, 1e-4, "dqkv");
    for (size_t i = 0; i < np; ++i) {
      if (probs[i] == 0.f) ASSERT_EQ(gotProbs[i], 0.f) << i;  // masked entries are exactly 0
    }
    gpu_->causalAttentionBackward(gq, gp, gdo, s.batch, s.seq, s.heads, s.headDim, gd);
    EXPECT_EQ(down(gd, n), gotDqkv);  // same bits on a second run
  }
}

TEST_F(TransformerOpsCudaTest, CausalAttentionIgnoresFutureTokens) {
  const int batch = 2, seq = 23, heads = 3, hd = 6, width = 3 * heads * hd, t = 17;
  auto qkv = rnd(size_t(batch) * seq * width, 16);
  float *go = up(std::vector<float>(batch * seq * heads * hd)), *gp = up(std::vector<float>(batch * heads * seq * seq));
  gpu_->causalAttentionForward(up(qkv), batch, seq, heads, hd, go, gp);
  const auto before = down(go, batch * seq * heads * hd);
  for (int c = heads * hd; c < width; ++c) qkv[size_t(t) * width + c] -= 2.f;
  gpu_->causalAttentionForward(up(qkv), batch, seq, heads, hd, go, gp);
  const auto after = down(go, batch * seq * heads * hd);
  for (int i = 0; i < batch * seq; ++i) {
    const std::vector<float> a(before.begin() + i * heads * hd, before.begin() + (i + 1) * heads * hd);
    const std::vector<float> b(after.begin() + i * heads * hd, after.begin() + (i + 1) * heads * hd);
    if (i >= t && i < seq) {
      EXPECT_NE(a, b) << i;
    } else {
      EXPECT_EQ(a, b) << i;
    }
  }
}

TEST_F(TransformerOpsCudaTest, RopeMatchesCpu) {
  const int batch = 3, seq = 41, heads = 5, hd = 14;
  const auto x = rnd(size_t(batch) * seq * 3 * heads * hd, 17);
  auto fwd = x;
  float* g = up(x);
  cpu::ropeForward(fwd.data(), batch, seq, heads, hd, 10000.f);
  gpu_->ropeForward(g, batch, seq, heads, hd, 10000.f);
  expectNear(down(g, x.size()), fwd, 1e-6, "forward");
  cpu::ropeBackward(fwd.data(), batch, seq, heads, hd, 10000.f);
  gpu_->ropeBackward(g, batch, seq, heads, hd, 10000.f);
  expectNear(down(g, x.size()), fwd, 1e-6, "backward");
}

TEST_F(TransformerOpsCudaTest, CrossEntropyMatchesCpu) {
  const int rows = 9, classes = 1031;  // more classes than threads in a block
  auto z = rnd(rows * classes, 18, 4.f);
  z[5] = 100.f;
  z[classes + 3] = z[classes + 700] = 60.f;  // tie: the lower index wins
  const std::vector<int32_t> labels = {5, 3, -1, 0, 1030, 17, -5, 2, 999};
  std::vector<float> loss(rows);
  std::vector<int32_t> correct(rows);
  float* gz = up(z);
  float* gl = up(std::vector<float>(rows, -1.f));
  int32_t* gc = up(std::vector<int32_t>(rows, -1));
  cpu::crossEntropyInPlace(z.data(), labels.data(), rows, classes, 1.f / 7, loss.data(), correct.data());
  gpu_->crossEntropyInPlace(gz, up(labels), rows, classes, 1.f / 7, gl, gc);
  expectNear(down(gz, z.size()), z, 1e-5, "dlogits");
  expectNear(down(gl, rows), loss, 1e-5, "loss");
  EXPECT_EQ(down(gc, rows), correct);
  EXPECT_EQ(correct[0], 1);
  EXPECT_EQ(correct[1], 1);
}

TEST_F(TransformerOpsCudaTest, DropoutAndAddMatchCpuBitForBit) {
  const size_t n = 300007;
  const auto x = rnd(n, 19), dy = rnd(n, 20);
  for (float p : {0.f, 0.1f, 0.5f, 1.f}) {
    std::vector<float> y(n), dx(n);
    cpu::dropoutForward(x.data(), y.data(), n, p, 1234);
    cpu::dropoutBackward(dy.data(), dx.data(), n, p, 1234);
    float* gx = up(x);
    float* gy = up(std::vector<float>(n));
    float* gdy = up(dy);
    gpu_->dropoutForward(gx, gy, n, p, 1234);
    gpu_->dropoutForward(gx, gx, n, p, 1234);  // in place
    gpu_->dropoutBackward(gdy, gdy, n, p, 1234);
    EXPECT_EQ(down(gy, n), y) << p;
    EXPECT_EQ(down(gx, n), y) << p;
    EXPECT_EQ(down(gdy, n), dx) << p;
  }
  auto a = x;
  float* ga = up(a);
  cpu::addInPlace(a.data(), dy.data(), n);
  gpu_->addInPlace(ga, up(dy), n);
  EXPECT_EQ(down(ga, n), a);
  EXPECT_TRUE(gpu_->status().isOk()) << gpu_->status();
}

TEST_F(TransformerOpsCudaTest, Bf16GemmMatchesTheCpuTwinOnOddShapes) {
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

TEST_F(TransformerOpsCudaTest, Bf16AttentionMatchesTheCpuTwinOnOddShapes) {
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
