// bench_kernels_cuda: the memory-bound CUDA kernels (bucket pack/unpack, casts, axpby, PowerSGD
// products and error feedback, fused Adam) as a fraction of a device-to-device copy measured in
// the same run (Note [Kernel bandwidth accounting]). Built only with CUDA.
//
//   build/bin/bench_kernels_cuda [--json] [--mib 1024] [--iters 10] [--kernels pack,adam,...]
//
// Every kernel works on --mib MiB of f32 data (default 1 GiB: large enough that the 50-60 MB L2
// holds none of it between runs). Each figure is the median of --iters timed calls after two
// warm-ups; the kernels' CUDA entry points synchronise before they return, so a host clock
// around each call times it (ms-scale calls: the synchronisation is noise).
// JSON lines: {"bench":"kernel_bandwidth","kernel","elements","bytes","ms","gbps",
//   "copy_gbps","fraction_of_copy","target","meets_target","device"}; the copy itself is the
//   row with kernel "copy" (fraction 1). No CUDA device: "bench_kernels_cuda: skipped: ..." on
//   stderr and exit status 77, before allocating anything.
//
// Note [Kernel bandwidth accounting]
// `bytes` counts what the operation must move at least: every input read once and every output
// written once (the copy: n bytes read + n written, as nccl-tests and the device's own figures
// count it). A kernel that re-reads its input, or a product that makes two passes, shows as a
// fraction under 1 against a copy that moves the same bytes in one pass. The target for a
// memory-bound kernel is 0.8 of the copy (issue: memory-bound kernels >= 80%).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/common/bench_args.h"
#include "bench/common/json_line.h"
#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"
#include "kernels/layer_ops.h"
#include "kernels/optim_ops.h"
#include "kernels/powersgd_ops.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTarget = 0.8;
constexpr size_t kTensors = 64;  // pack/unpack and Adam: a bucket's worth of parameters
constexpr size_t kRank = 4;      // PowerSGD products: rank 4

struct Options {
  bool json = false;
  size_t mib = 1024;
  int iters = 10;
  std::vector<std::string> kernels;  // empty: all
};

// One device allocation, filled with small non-zero values (never time on zeros).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      std::fprintf(stderr, "bench_kernels_cuda: cudaMalloc of %zu bytes failed\n", bytes);
      std::exit(1);
    }
    std::vector<float> host(std::min<size_t>(bytes / 4, 1 << 20));
    for (size_t i = 0; i < host.size(); ++i) host[i] = 0.001f * static_cast<float>((i * 2654435761u) % 1000) + 0.5f;
    for (size_t off = 0; off < bytes; off += host.size() * 4) {
      const size_t len = std::min(bytes - off, host.size() * 4);
      cudaMemcpy(static_cast<char*>(ptr_) + off, host.data(), len, cudaMemcpyHostToDevice);
    }
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* f32() const { return static_cast<float*>(ptr_); }
  void* raw() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

// The median ms of `iters` calls of `op` after two warm-ups; exits on the first failed call.
double medianMs(const std::string& name, int iters, const std::function<Status()>& op) {
  std::vector<double> ms;
  for (int i = -2; i < iters; ++i) {
    const auto t0 = Clock::now();
    Status st = op();
    if (cudaDeviceSynchronize() != cudaSuccess && st.isOk()) st = internalError(cudaGetErrorString(cudaGetLastError()));
    const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!st.isOk()) {
      std::fprintf(stderr, "bench_kernels_cuda: %s failed: %s\n", name.c_str(), st.toString().c_str());
      std::exit(1);
    }
    if (i >= 0) ms.push_back(elapsed);
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

struct Kernel {
  std::string name;
  double bytesPerElement;  // Note [Kernel bandwidth accounting]
  std::function<Status()> op;
};

std::vector<kernels::FlatView> pieces(float* base, size_t n) {
  std::vector<kernels::FlatView> out;
  const size_t each = n / kTensors;
  for (size_t k = 0; k < kTensors; ++k) {
    const size_t count = k + 1 == kTensors ? n - each * k : each;
    out.push_back({base + each * k, count, DType::kF32, Device::cuda(0)});
  }
  return out;
}

std::vector<Kernel> buildKernels(size_t n, DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& c, DeviceBuffer& d) {
  using kernels::FlatView;
  const Device gpu = Device::cuda(0);
  const FlatView fa{a.raw(), n, DType::kF32, gpu}, fb{b.raw(), n, DType::kF32, gpu};
  const FlatView halfB{b.raw(), n, DType::kF16, gpu}, bf16B{b.raw(), n, DType::kBF16, gpu};
  // PowerSGD: one rows x cols matrix of n elements; P and Q (rank kRank) live in d's tail.
  const size_t cols = 4096, rows = n / cols;
  float* p = d.f32() + n - 2 * (rows + cols) * kRank;
  float* q = p + rows * kRank;
  float* prevP = q + cols * kRank;  // the last step's factors (compensateAndComputeP)
  float* prevQ = prevP + rows * kRank;
  auto grads = pieces(b.f32(), n);
  std::vector<kernels::AdamTensor> adam;
  for (size_t k = 0; k < kTensors; ++k) {
    const size_t off = (n / kTensors) * k, count = k + 1 == kTensors ? n - off : n / kTensors;
    adam.push_back({a.f32() + off, b.f32() + off, c.f32() + off, d.f32() + off, count, 1});
  }
  const size_t nPs = rows * cols;
  float* const pa = a.f32();
  float* const pb = b.f32();
  return {
      {"pack", 8, [=] { return kernels::packBucket(fa, grads, 0.5); }},
      {"unpack", 8, [=] { return kernels::unpackBucket(fa, grads, 2.0); }},
      {"scale", 8, [=] { return kernels::scaleInPlace(fa, 1.0); }},
      {"axpby", 12, [=] { return kernels::axpby(fa, 0.5, fb, 0.5); }},
      {"cast_f32_to_f16", 6, [=] { return kernels::castScaled(halfB, fa, 0.5); }},
      {"cast_f16_to_f32", 6, [=] { return kernels::castScaled(fa, halfB, 2.0); }},
      {"cast_f32_to_bf16", 6, [=] { return kernels::castScaled(bf16B, fa, 0.5); }},
      {"cast_bf16_to_f32", 6, [=] { return kernels::castScaled(fa, bf16B, 2.0); }},
      {"error_feedback_add", 12, [=] { return kernels::powersgd::errorFeedbackAdd(gpu, pa, pb, n); }},
      {"error_feedback_update", 16, [=] { return kernels::powersgd::errorFeedbackUpdate(gpu, pa, pb, n); }},
      {"powersgd_compute_p", 4.0 * nPs / n,
       [=] { return kernels::powersgd::computeP(gpu, pa, q, p, 1, rows, cols, kRank); }},
      {"powersgd_compute_q", 4.0 * nPs / n,
       [=] { return kernels::powersgd::computeQ(gpu, pa, p, q, 1, rows, cols, kRank); }},
      {"powersgd_decompress", 4.0 * nPs / n,
       [=] { return kernels::powersgd::decompress(gpu, p, q, pa, 1, rows, cols, kRank); }},
      {"powersgd_add_error_compute_p", 12.0 * nPs / n,
       [=] { return kernels::powersgd::addErrorAndComputeP(gpu, pa, pb, q, p, rows, cols, kRank); }},
      {"powersgd_decompress_with_error", 12.0 * nPs / n,
       [=] { return kernels::powersgd::decompressWithError(gpu, pa, p, q, pb, rows, cols, kRank); }},
      {"powersgd_compensate_compute_p", 12.0 * nPs / n,
       [=] { return kernels::powersgd::compensateAndComputeP(gpu, pb, pa, prevP, prevQ, q, p, rows, cols, kRank); }},
      {"adam", 28, [=] { return kernels::adamStepCuda(adam, kernels::AdamHyper{}); }},
      {"sum_squares", 4, [=] { return kernels::sumSquaresCuda(pa, n).status(); }},
  };
}

void report(const Options& o, const std::string& name, size_t n, double bytes, double ms, double copyGbps,
            const std::string& device) {
  const double gbps = bytes / (ms * 1e6);
  const double fraction = copyGbps > 0 ? gbps / copyGbps : 1.0;
  if (o.json) {
    JsonLine()
        .add("bench", "kernel_bandwidth")
        .add("kernel", name)
        .add("elements", static_cast<int64_t>(n))
        .add("bytes", static_cast<int64_t>(bytes))
        .add("ms", ms)
        .add("gbps", gbps)
        .add("copy_gbps", copyGbps > 0 ? copyGbps : gbps)
        .add("fraction_of_copy", fraction)
        .add("target", kTarget)
        .add("meets_target", fraction >= kTarget)
        .add("device", device)
        .print();
  } else {
    std::printf("%-32s %12.3f ms %9.1f GB/s %6.2fx copy%s\n", name.c_str(), ms, gbps, fraction,
                fraction >= kTarget ? "" : "  (under 0.8)");
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (ArgReader a(argc, argv, "bench_kernels_cuda"); a.next();) {
    const std::string& f = a.flag();
    if (f == "--json") o.json = true;
    else if (f == "--mib") o.mib = std::max<size_t>(16, std::strtoull(a.value().c_str(), nullptr, 10));
    else if (f == "--iters") o.iters = std::max(1, std::atoi(a.value().c_str()));
    else if (f == "--kernels") o.kernels = splitList(a.value());
    else {
      std::fprintf(stderr, "bench_kernels_cuda: unknown flag %s\n", f.c_str());
      std::exit(2);
    }
  }
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (kernels::cudaDeviceCount() == 0) {
    std::fprintf(stderr, "bench_kernels_cuda: skipped: no CUDA device is visible\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const std::string device = prop.name;
  const size_t n = o.mib * (size_t{1} << 20) / 4;
  DeviceBuffer a(n * 4), b(n * 4), c(n * 4), d(n * 4);
  const double copyMs = medianMs("copy", o.iters, [&] {
    return cudaMemcpy(b.raw(), a.raw(), n * 4, cudaMemcpyDeviceToDevice) == cudaSuccess
               ? Status::ok()
               : internalError("cudaMemcpy device to device failed");
  });
  const double copyGbps = 8.0 * n / (copyMs * 1e6);
  report(o, "copy", n, 8.0 * n, copyMs, 0, device);
  for (const Kernel& k : buildKernels(n, a, b, c, d)) {
    if (!o.kernels.empty() && std::find(o.kernels.begin(), o.kernels.end(), k.name) == o.kernels.end()) continue;
    report(o, k.name, n, k.bytesPerElement * n, medianMs(k.name, o.iters, k.op), copyGbps, device);
  }
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) { return ddp::bench::run(argc, argv); }
