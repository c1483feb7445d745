// The bf16 matmuls' CPU twins (kernels/bf16_ops.h, Note [bf16 matmuls]):
//  - the rounding against hand-computed bit patterns: ties to even, just off a tie, NaN (stays
//    NaN, quieted), inf, overflow to inf, subnormals, signed zero; the vectorized loop equals
//    the scalar helper on random bit patterns;
//  - gemmBf16 against a double-precision product of the bf16-rounded operands, on odd shapes and
//    every transpose; the bound is fp32 accumulation's, and the unrounded product is outside it;
//  - the bf16 attention, forward and backward, against double references that round the same
//    operands where they enter a product.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

double rb(double x) { return roundToBf16(static_cast<float>(x)); }

TEST(Bf16OpsTest, RoundingMatchesHandComputedBitPatterns) {
  struct Case {
    uint32_t in;
    uint16_t want;
    const char* what;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80, "1.0 is exact"},
      {0x3f808000u, 0x3f80, "tie between 0x3f80 and 0x3f81: to the even 0x3f80"},
      {0x3f818000u, 0x3f82, "tie between 0x3f81 and 0x3f82: to the even 0x3f82"},
      {0x3f808001u, 0x3f81, "just above a tie rounds up"},
      {0x3f807fffu, 0x3f80, "just below a tie rounds down"},
      {0xbf818000u, 0xbf82, "negative tie: to even, sign kept"},
      {0x3fffffffu, 0x4000, "carry into the exponent"},
      {0x7f800000u, 0x7f80, "+inf"},
      {0xff800000u, 0xff80, "-inf"},
      {0x7f7fffffu, 0x7f80, "FLT_MAX overflows to inf"},
      {0x7f7f7fffu, 0x7f7f, "just below the overflow tie stays finite"},
      {0x7fc00000u, 0x7fc0, "quiet NaN"},
      {0x7f800001u, 0x7fc0, "signalling NaN with a low payload stays NaN (not inf), quieted"},
      {0x7f810000u, 0x7fc1, "NaN payload in the kept bits is kept"},
      {0xffc00000u, 0xffc0, "negative NaN"},
      {0x00000000u, 0x0000, "+0"},
      {0x80000000u, 0x8000, "-0 keeps its sign"},
      {0x00000001u, 0x0000, "the smallest subnormal rounds to 0"},
      {0x00008000u, 0x0000, "subnormal tie: to the even 0"},
      {0x00018000u, 0x0002, "subnormal tie: to the even 0x0002"},
      {0x00010000u, 0x0001, "exact subnormal"},
      {0x0000ffffu, 0x0001, "subnormal above a tie rounds up"},
      {0x807fffffu, 0x8080, "largest negative subnormal rounds up to the smallest normal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const float x = std::bit_cast<float>(c.in);
    EXPECT_EQ(floatToBf16(x), c.want);
    EXPECT_EQ(std::bit_cast<uint32_t>(roundToBf16(x)), uint32_t{c.want} << 16);
    float vec = 0.f;
    cpu::roundToBf16N(&x, &vec, 1);
    EXPECT_EQ(std::bit_cast<uint32_t>(vec), uint32_t{c.want} << 16);
  }
}

TEST(Bf16OpsTest, VectorizedRoundingEqualsTheScalarHelperAndWorksInPlace) {
  SplitMixRng r(11);
  std::vector<float> x(100003);  // odd: a vector tail
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(r.next()));
  std::vector<float> y(x.size());
  cpu::roundToBf16N(x.data(), y.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(roundToBf16(x[i]))) << i;
  }
  cpu::roundToBf16N(x.data(), x.data(), x.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
}

// C = alpha op(A) op(B) + beta C in double, over operands `round`ed or not; also sum |terms|.
void referenceGemm(bool ta, bool tb, int m, int n, int k, double alpha, const std::vector<float>& a,
                   const std::vector<float>& b, double beta, const std::vector<float>& c, bool round,
                   std::vector<double>* out, std::vector<double>* magnitude) {
  out->assign(static_cast<size_t>(m) * n, 0);
  magnitude->assign(out->size(), 0);
  auto op = [&](double v) { return round ? rb(v) : v; };
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int l = 0; l < k; ++l) {
        const double x = op(a[ta ? l * m + i : i * k + l]) * op(b[tb ? j * k + l : l * n + j]);
        s += x;
        mag += std::fabs(x);
      }
      (*out)[i * n + j] = alpha * s + beta * c[i * n + j];
      (*magnitude)[i * n + j] = std::fabs(alpha) * mag + std::fabs(beta * c[i * n + j]);
    }
  }
}

TEST(Bf16OpsTest, GemmIsTheProductOfTheRoundedOperandsOnOddShapes) {
  const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {13, 17, 11}, {33, 9, 65}, {4, 3, 0}};
  const float alpha = 0.7f, beta = 0.3f;
  double largestRoundingEffect = 0;
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb);
      const auto a = rnd(static_cast<size_t>(m) * k, 1 + t), b = rnd(static_cast<size_t>(k) * n, 2 + t);
      const auto c0 = rnd(static_cast<size_t>(m) * n, 3 + t);
      auto c = c0;
      cpu::gemmBf16(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c.data());
      std::vector<double> want, mag, plain, plainMag;
      referenceGemm(ta, tb, m, n, k, alpha, a, b, beta, c0, true, &want, &mag);
      referenceGemm(ta, tb, m, n, k, alpha, a, b, beta, c0, false, &plain, &plainMag);
      for (size_t i = 0; i < c.size(); ++i) {
        // Products of bf16 values are exact in fp32: only the k fp32 additions (and alpha, beta)
        // round, by at most (k + 2) 2^-24 of the sum of |terms|.
        const double bound = (k + 2) * std::ldexp(1.0, -24) * mag[i] + 1e-30;
        ASSERT_NEAR(c[i], want[i], bound) << i;
        largestRoundingEffect = std::max(largestRoundingEffect, std::fabs(plain[i] - want[i]) / (bound + 1e-12));
      }
    }
  }
  EXPECT_GT(largestRoundingEffect, 100) << "the unrounded product lies far outside the fp32 bound";
}

// Double references of the bf16 attention: every GEMM operand rounded where it enters.
struct AttentionShape {
  int batch = 2, seq = 7, heads = 3, hd = 5;
  int width() const { return 3 * heads * hd; }
  size_t at(int b, int i, int part, int h, int e) const {
    return static_cast<size_t>((b * seq + i) * width() + part * heads * hd + h * hd + e);
  }
  size_t p(int b, int h, int i, int j) const { return static_cast<size_t>(((b * heads + h) * seq + i) * seq + j); }
};

TEST(Bf16OpsTest, AttentionForwardRoundsQKVAndTheProbabilities) {
  const AttentionShape s;
  const auto qkv = rnd(static_cast<size_t>(s.batch) * s.seq * s.width(), 21);
  std::vector<float> out(static_cast<size_t>(s.batch) * s.seq * s.heads * s.hd), probs(
      static_cast<size_t>(s.batch) * s.heads * s.seq * s.seq, -1.f);
  cpu::causalAttentionForwardBf16(qkv.data(), s.batch, s.seq, s.heads, s.hd, out.data(), probs.data());
  double roundingEffect = 0;
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      for (int i = 0; i < s.seq; ++i) {
        std::vector<double> sc(i + 1);
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double d = 0;
          for (int e = 0; e < s.hd; ++e) d += rb(qkv[s.at(b, i, 0, h, e)]) * rb(qkv[s.at(b, j, 1, h, e)]);
          sc[j] = d / std::sqrt(static_cast<double>(s.hd));
          mx = std::max(mx, sc[j]);
        }
        for (int j = 0; j <= i; ++j) sum += std::exp(sc[j] - mx);
        for (int j = 0; j < s.seq; ++j) {
          const double want = j <= i ? std::exp(sc[j] - mx) / sum : 0.0;
          ASSERT_NEAR(probs[s.p(b, h, i, j)], want, 2e-6) << "probs saved in fp32, unrounded";
        }
        // O = bf16(P) bf16(V), P as saved (its fp32 rounding is checked above).
        for (int e = 0; e < s.hd; ++e) {
          double o = 0, plain = 0, mag = 0;
          for (int j = 0; j <= i; ++j) {
            const double pj = probs[s.p(b, h, i, j)], v = qkv[s.at(b, j, 2, h, e)];
            o += rb(pj) * rb(v);
            plain += pj * rb(v);
            mag += std::fabs(pj * v);
          }
          const float got = out[static_cast<size_t>((b * s.seq + i) * s.heads * s.hd + h * s.hd + e)];
          ASSERT_NEAR(got, o, (i + 2) * std::ldexp(1.0, -24) * mag + 1e-30) << b << h << i << e;
          roundingEffect = std::max(roundingEffect, std::fabs(plain - o));
        }
      }
    }
  }
  EXPECT_GT(roundingEffect, 1e-4) << "P enters P V rounded to bf16";
}

TEST(Bf16OpsTest, AttentionBackwardRoundsEveryGemmOperand) {
  const AttentionShape s;
  const auto qkv = rnd(static_cast<size_t>(s.batch) * s.seq * s.width(), 31);
  const auto dout = rnd(static_cast<size_t>(s.batch) * s.seq * s.heads * s.hd, 32);
  std::vector<float> out(dout.size()), probs(static_cast<size_t>(s.batch) * s.heads * s.seq * s.seq);
  std::vector<float> dqkv(qkv.size(), 99.f);
  cpu::causalAttentionForwardBf16(qkv.data(), s.batch, s.seq, s.heads, s.hd, out.data(), probs.data());
  cpu::causalAttentionBackwardBf16(qkv.data(), probs.data(), dout.data(), s.batch, s.seq, s.heads, s.hd, dqkv.data());
  const double scale = 1 / std::sqrt(static_cast<double>(s.hd)), ulp = std::ldexp(1.0, -24);
  auto dO = [&](int b, int i, int h, int e) { return rb(dout[static_cast<size_t>((b * s.seq + i) * s.heads * s.hd + h * s.hd + e)]); };
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      // dS in double from the saved P and dP = bf16(dO) bf16(V)^T; dsScale bounds the twin's
      // fp32 error of each dS (a few ulp of P (|dP| + |<P, dP>|): the difference may cancel).
      std::vector<double> ds(static_cast<size_t>(s.seq) * s.seq, 0.0), dsScale(ds.size(), 0.0);
      for (int i = 0; i < s.seq; ++i) {
        double dot = 0, dotMag = 0;
        std::vector<double> dp(i + 1);
        for (int j = 0; j <= i; ++j) {
          for (int e = 0; e < s.hd; ++e) dp[j] += dO(b, i, h, e) * rb(qkv[s.at(b, j, 2, h, e)]);
          dot += probs[s.p(b, h, i, j)] * dp[j];
          dotMag += std::fabs(probs[s.p(b, h, i, j)] * dp[j]);
        }
        for (int j = 0; j <= i; ++j) {
          const double pj = probs[s.p(b, h, i, j)];
          ds[i * s.seq + j] = pj * (dp[j] - dot);
          dsScale[i * s.seq + j] = pj * (std::fabs(dp[j]) + dotMag) * (s.seq + s.hd + 4) * ulp;
        }
      }
      for (int r = 0; r < s.seq; ++r) {
        for (int e = 0; e < s.hd; ++e) {
          // dV[r] = sum_i bf16(P[i][r]) bf16(dO[i]): the same operands, fp32 sums.
          // dQ[r] = scale sum_j bf16(dS[r][j]) bf16(K[j]); dK[r] = scale sum_i bf16(dS[i][r]) bf16(Q[i]).
          double dv = 0, dvMag = 0, dq = 0, dqTol = 0, dqFlip = 0, dk = 0, dkTol = 0, dkFlip = 0;
          for (int i = 0; i < s.seq; ++i) {
            const double t = rb(probs[s.p(b, h, i, r)]) * dO(b, i, h, e);
            dv += t;
            dvMag += std::fabs(t);
            const double kj = rb(qkv[s.at(b, i, 1, h, e)]) * scale, qi = rb(qkv[s.at(b, i, 0, h, e)]) * scale;
            const double kq = kj * rb(ds[r * s.seq + i]), qk = qi * rb(ds[i * s.seq + r]);
            dq += kq;
            dk += qk;
            // The fp32 sums, the twin's fp32 dS error (scaled up by a bf16 ulp, 2^-7 relative at
            // most, where it moves dS across a rounding boundary), and one such crossing.
            dqTol += (s.seq + 2) * ulp * std::fabs(kq) + std::fabs(kj) * dsScale[r * s.seq + i] * 1.01;
            dkTol += (s.seq + 2) * ulp * std::fabs(qk) + std::fabs(qi) * dsScale[i * s.seq + r] * 1.01;
            dqFlip = std::max(dqFlip, std::ldexp(std::fabs(kq), -7));
            dkFlip = std::max(dkFlip, std::ldexp(std::fabs(qk), -7));
          }
          const size_t rowQ = s.at(b, r, 0, h, e), rowK = s.at(b, r, 1, h, e), rowV = s.at(b, r, 2, h, e);
          ASSERT_NEAR(dqkv[rowV], dv, (s.seq + 2) * ulp * dvMag + 1e-30) << "dV " << b << h << r << e;
          ASSERT_NEAR(dqkv[rowQ], dq, dqTol + dqFlip + 1e-30) << "dQ " << b << h << r << e;
          ASSERT_NEAR(dqkv[rowK], dk, dkTol + dkFlip + 1e-30) << "dK " << b << h << r << e;
        }
      }
    }
  }
}

TEST(Bf16OpsTest, AttentionIsCloseToTheFp32Attention) {
  // The bf16 products sit within bf16's precision of the fp32 ones: 8 significant bits, so a few
  // 2^-8 relative (the operands' rounding errors add up over the short sums).
  const AttentionShape s;
  const auto qkv = rnd(static_cast<size_t>(s.batch) * s.seq * s.width(), 41, 0.5f);
  const auto dout = rnd(static_cast<size_t>(s.batch) * s.seq * s.heads * s.hd, 42);
  std::vector<float> o16(dout.size()), o32(dout.size()), p16(static_cast<size_t>(s.batch) * s.heads * s.seq * s.seq),
      p32(p16.size()), d16(qkv.size()), d32(qkv.size());
  cpu::causalAttentionForwardBf16(qkv.data(), s.batch, s.seq, s.heads, s.hd, o16.data(), p16.data());
  cpu::causalAttentionForward(qkv.data(), s.batch, s.seq, s.heads, s.hd, o32.data(), p32.data());
  cpu::causalAttentionBackwardBf16(qkv.data(), p16.data(), dout.data(), s.batch, s.seq, s.heads, s.hd, d16.data());
  cpu::causalAttentionBackward(qkv.data(), p32.data(), dout.data(), s.batch, s.seq, s.heads, s.hd, d32.data());
  double diff = 0;
  for (size_t i = 0; i < o16.size(); ++i) {
    EXPECT_NEAR(o16[i], o32[i], 0.03 * (1 + std::fabs(o32[i]))) << i;
    diff = std::max(diff, static_cast<double>(std::fabs(o16[i] - o32[i])));
  }
  for (size_t i = 0; i < d16.size(); ++i) EXPECT_NEAR(d16[i], d32[i], 0.03 * (1 + std::fabs(d32[i]))) << i;
  EXPECT_GT(diff, 0) << "the two precisions are different computations";
}

}  // namespace
}  // namespace ddp::kernels
