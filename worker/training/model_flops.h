#pragma once
// The model FLOPs utilisation of a language model (docs/TRAINING.md, "Language-model figures"):
// PaLM's estimate of the training FLOPs per token, the peak a CPU worker measures for itself and
// the datasheet peaks of GPUs.
// Thread model: pure functions, except measureCpuPeakFlops, which computes on the calling thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"
#include "worker/model/gpt_block.h"

namespace ddp::runtime {

// 6 N + 12 layers T dModel: N counts the parameters that do matmul work, every one but the
// learned position table; a tied token embedding counts once (it is the LM head), an untied one
// not at all (head.weight does). `params` is the model's parameter list (names as model::Gpt's).
double gptFlopsPerToken(const model::GptConfig& config, const std::vector<Parameter*>& params);

// The f32 GEMM speed of `ops` (a CPU LayerOps, on the threads it trains with): 2 n^3 / seconds of
// an n x n x n product, the best of `runs` after a warm-up. Blocks for a few tenths of a second.
Result<double> measureCpuPeakFlops(kernels::LayerOps& ops, int n = 1024, int runs = 3);

// The dense f32 peak (FLOP/s) of a GPU by its CUDA device name (cudaDeviceProp::name, e.g.
// "NVIDIA H100 80GB HBM3"): the CUDA layer ops run plain FP32 GEMMs (no TF32, no tensor cores),
// so the datasheet's FP32 figure is the denominator. nullopt for a card the table does not know
// (no MFU then, rather than a made-up figure).
std::optional<double> gpuPeakFlopsF32(std::string_view cardName);
// The dense bf16 tensor-core peak, the denominator of a GPT with bf16 matmuls (spec.precision:
// bf16, Note [bf16 matmuls] in kernels/bf16_ops.h): e.g. 989 TFLOP/s for H100 SXM and H200.
// nullopt for an unknown card and for one without bf16 tensor cores (V100, T4).
std::optional<double> gpuPeakFlopsBf16(std::string_view cardName);
// The CUDA device's name (cudaGetDeviceProperties); Unimplemented in a build without CUDA.
Result<std::string> cudaDeviceName(int index);

// flopsPerToken x tokensPerSecond / (ranks x peakFlopsPerRank); 0 when the peak is not > 0.
double modelFlopsUtilisation(double flopsPerToken, double tokensPerSecond, int ranks, double peakFlopsPerRank);

}  // namespace ddp::runtime
