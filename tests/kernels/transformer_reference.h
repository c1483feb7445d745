#pragma once
// Naive double-precision references of the transformer ops (kernels/transformer_ops.h), written
// from the definitions for tests/kernels/transformer_ops_test.cc: loops over every index, no
// blocking, no tricks; and central finite differences over them.

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace ddp::kernels::reference {

using Vec = std::vector<double>;

inline Vec toDouble(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// d loss / d x_i by central differences, for every i.
inline Vec numericGradient(Vec x, const std::function<double(const Vec&)>& loss, double h = 1e-5) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = loss(x);
    x[i] = keep - h;
    const double down = loss(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

inline double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// LayerNorm (withMean) or RMSNorm (!withMean, beta ignored) of each row.
inline Vec norm(const Vec& x, const Vec& gamma, const Vec* beta, int rows, int dim, double eps,
                bool withMean, Vec* mean = nullptr, Vec* rstd = nullptr) {
  Vec y(x.size());
  if (mean) mean->assign(rows, 0);
  if (rstd) rstd->assign(rows, 0);
  for (int r = 0; r < rows; ++r) {
    double mu = 0, q = 0;
    if (withMean) {
      for (int c = 0; c < dim; ++c) mu += x[r * dim + c];
      mu /= dim;
    }
    for (int c = 0; c < dim; ++c) q += (x[r * dim + c] - mu) * (x[r * dim + c] - mu);
    const double rs = 1 / std::sqrt(q / dim + eps);
    for (int c = 0; c < dim; ++c) {
      y[r * dim + c] = (x[r * dim + c] - mu) * rs * gamma[c] + (beta ? (*beta)[c] : 0.0);
    }
    if (mean) (*mean)[r] = mu;
    if (rstd) (*rstd)[r] = rs;
  }
  return y;
}

// Causal attention: qkv (b*seq) x (3*h*d) -> out (b*seq) x (h*d); probs b x h x seq x seq.
inline Vec attention(const Vec& qkv, int batch, int seq, int heads, int hd, Vec* probs = nullptr) {
  const int width = 3 * heads * hd;
  Vec out(static_cast<size_t>(batch) * seq * heads * hd, 0.0);
  if (probs) probs->assign(static_cast<size_t>(batch) * heads * seq * seq, 0.0);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < seq; ++i) {
        const double* q = &qkv[(b * seq + i) * width + h * hd];
        Vec s(i + 1);
        double mx = -1e300;
        for (int j = 0; j <= i; ++j) {
          const double* k = &qkv[(b * seq + j) * width + heads * hd + h * hd];
          double v = 0;
          for (int e = 0; e < hd; ++e) v += q[e] * k[e];
          s[j] = v / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int j = 0; j <= i; ++j) {
          const double p = s[j] / sum;
          if (probs) (*probs)[((b * heads + h) * seq + i) * seq + j] = p;
          const double* v = &qkv[(b * seq + j) * width + 2 * heads * hd + h * hd];
          for (int e = 0; e < hd; ++e) out[(b * seq + i) * heads * hd + h * hd + e] += p * v[e];
        }
      }
    }
  }
  return out;
}

// RoPE on the q and k parts, turning by sign * pos * base^(-2i/hd).
inline Vec rope(Vec qkv, int batch, int seq, int heads, int hd, double base, double sign) {
  const int width = 3 * heads * hd;
  for (int r = 0; r < batch * seq; ++r) {
    for (int h = 0; h < 2 * heads; ++h) {
      for (int i = 0; i < hd / 2; ++i) {
        const double angle = sign * (r % seq) * std::pow(base, -2.0 * i / hd);
        double* x = &qkv[r * width + h * hd + 2 * i];
        const double a = x[0], b = x[1];
        x[0] = a * std::cos(angle) - b * std::sin(angle);
        x[1] = a * std::sin(angle) + b * std::cos(angle);
      }
    }
  }
  return qkv;
}

// -log softmax(z_r)[label_r] per row (0 for labels < 0).
inline Vec crossEntropy(const Vec& z, const std::vector<int32_t>& labels, int rows, int classes) {
  Vec loss(rows, 0.0);
  for (int r = 0; r < rows; ++r) {
    if (labels[r] < 0) continue;
    double mx = -1e300, sum = 0;
    for (int c = 0; c < classes; ++c) mx = std::max(mx, z[r * classes + c]);
    for (int c = 0; c < classes; ++c) sum += std::exp(z[r * classes + c] - mx);
    loss[r] = mx + std::log(sum) - z[r * classes + labels[r]];
  }
  return loss;
}

}  // namespace ddp::kernels::reference
