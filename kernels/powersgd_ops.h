#pragma once
// PowerSGD kernels (Vogels et al. 2019): error feedback, Gram-Schmidt orthogonalization and the
// three low-rank products. One API dispatched on Device: the CPU versions are the twins (the
// oracle the CUDA versions are tested against), CUDA versions live in powersgd_ops.cu.
//
// Shapes: a gradient is viewed as a ROW-MAJOR matrix M (n x m); P is n x r and Q is m x r, both
// row-major. Batched calls process `batch` matrices stored back to back (M_b at m + b*n*m, P_b
// at p + b*n*r, Q_b at q + b*m*r), which is how tensors of the same shape are batched.
//
// Thread model: stateless. On CUDA, with `stream` == nullptr a call runs on the legacy default
// stream and returns once done (the project's kernel convention); with a stream it is only
// enqueued there. All pointers live on `device`.
//
// Note [Gram-Schmidt twice]
// PyTorch orthogonalises P and Q with one Gram-Schmidt pass. When the columns are nearly
// dependent (a gradient of rank below r, e.g. from a small per-rank batch, or a zero-padded
// square in batched PowerSGD), the roundoff left in a column, once normalised, is a unit column
// far from orthogonal to the others; P P^T stops being a projection and the "approximation"
// amplifies the gradient (we measured 1.7x on a padded 4 x 4 bucket). Here each column loses its
// projections on the previous ones in two passes ("twice is enough", Giraud et al. 2005), and a
// column whose remainder is below kDependentColumnTolerance of its norm before that is
// numerically dependent: it is set to zero (Note [Zero columns in Gram-Schmidt]). In exact
// arithmetic on independent columns the result equals one pass.
//
// Note [Zero columns in Gram-Schmidt]
// With orthogonalization epsilon 0, PyTorch divides a zero column by its zero norm and the
// NaNs spread to the whole model (users then set epsilon 1e-8). Here a zero or numerically
// dependent column is left at zero: it adds nothing to P Q^T, which is the right low-rank
// answer for a gradient of lower rank than r. Any epsilon > 0 divides the other columns by
// (norm + epsilon) exactly as PyTorch does. The hooks refill zero columns of a warm-start Q from
// their seeded generator, so a rank lost once is not lost for good.

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace ddp::kernels::powersgd {

// Note [Gram-Schmidt twice]: relative size below which a column's remainder is dependent.
inline constexpr double kDependentColumnTolerance = 1e-5;

// grad[i] += error[i] (error feedback: fold last step's compression error into the gradient).
Status errorFeedbackAdd(Device device, float* grad, const float* error, size_t n, void* stream = nullptr);

// Fused end of error feedback. On entry `buffer` holds the compressed input M and `approx` the
// decompressed approximation M~; on exit buffer[i] = M~[i] and approx[i] = M[i] - M~[i] (the
// new error). Both in one pass over memory.
Status errorFeedbackUpdate(Device device, float* buffer, float* approx, size_t n, void* stream = nullptr);

// x[i] *= alpha.
Status scale(Device device, float* x, size_t n, float alpha, void* stream = nullptr);

// Gram-Schmidt on the r columns of each of `batch` row-major n x r matrices at `matrices`: for
// i = 0..r-1, column i loses its projections on columns 0..i-1 (two passes, Note [Gram-Schmidt
// twice]), then column i /= (||column i|| + epsilon), or is zeroed if dependent. Norms and dot
// products accumulate in double. See Note [Zero columns in Gram-Schmidt]. InvalidArgument if
// epsilon < 0.
Status orthogonalize(Device device, float* matrices, size_t batch, size_t n, size_t r, float epsilon,
                     void* stream = nullptr);

// P_b = M_b Q_b  (n x m times m x r).
Status computeP(Device device, const float* m, const float* q, float* p, size_t batch, size_t rows,
                size_t cols, size_t r, void* stream = nullptr);
// Q_b = M_b^T P_b  (m x n times n x r).
Status computeQ(Device device, const float* m, const float* p, float* q, size_t batch, size_t rows,
                size_t cols, size_t r, void* stream = nullptr);
// M_b = P_b Q_b^T  (n x r times r x m), overwriting M_b.
Status decompress(Device device, const float* p, const float* q, float* m, size_t batch, size_t rows,
                  size_t cols, size_t r, void* stream = nullptr);

// Fused error feedback, the two passes over each gradient that PowerSGD cannot avoid:
//  addErrorAndComputeP: M += error (M keeps the sum), then P = M Q;
//  decompressWithError: M~ = P Q^T, error = M - M~, M = M~.
// Same results as errorFeedbackAdd + computeP and decompress + errorFeedbackUpdate up to float
// rounding; on the CPU each gradient is read (and written) once per call, 3 memory passes
// instead of 4 and 5 (Note [Skinny PowerSGD products on the CPU] in powersgd_ops_cpu.h, which
// also serves the unfused CPU products).
Status addErrorAndComputeP(Device device, float* m, const float* error, const float* q, float* p, size_t rows,
                           size_t cols, size_t r, void* stream = nullptr);
Status decompressWithError(Device device, float* m, const float* p, const float* q, float* error, size_t rows,
                           size_t cols, size_t r, void* stream = nullptr);

// Note [Deferred error feedback]
// With error feedback, a step reads the gradient G and the last error E, forms M = G + E,
// compresses M to M~ = P Q^T, hands M~ on and keeps E' = M - M~. Stored as such, E' costs the
// step two passes over memory of its own: M~ written back only to be read again for E', and E'
// written. Kept deferred instead, as the compensated gradient S = M together with the small P and
// Q that were sent, the error is E' = S - P Q^T, and its two uses fold into passes that run anyway:
//  - compensateAndComputeP (the first pass of the next step): per element e = S - (P' Q'^T),
//    S = G + e, then P = S Q; G is only read;
//  - decompress (the last pass): G = P Q^T, written without being read.
// Five passes over memory per step instead of seven. P' Q'^T is evaluated exactly as decompress
// evaluates M~ (per element, a fused multiply-add chain over k from zero), so the deferred error
// equals bit for bit the error the eager form would have stored: a state saved after
// materialising E' = S - P' Q'^T (decompressWithError on a copy of S) resumes the same trajectory.

// Per element of the rows x cols matrices (row-major): e = sum - prevP prevQ^T (prevP: rows x r,
// prevQ: cols x r; with prevP == nullptr, e = sum), sum = grad + e; then P = sum Q. `grad` is
// only read. Note [Deferred error feedback].
Status compensateAndComputeP(Device device, const float* grad, float* sum, const float* prevP, const float* prevQ,
                             const float* q, float* p, size_t rows, size_t cols, size_t r, void* stream = nullptr);

// Fills out[0..n) (host memory) with standard normal samples from a counter-based generator:
// sample i depends only on (seed, i), so every replica that uses the same seed gets the same
// values, whatever else it drew before. Box-Muller over SplitMix64 in double precision.
void fillStandardNormal(float* out, size_t n, uint64_t seed);

// SplitMix64 finaliser: a well-mixed 64-bit hash of x (for deriving seeds).
uint64_t mix64(uint64_t x);

}  // namespace ddp::kernels::powersgd
