#include "controller/jobs/admission/memory_estimate.h"

#include <cmath>
#include <cstdio>

#include "common/conv_lowering.h"

// Note [Memory estimate]
// `hidden: [100000000]` was accepted, and each worker then died of the allocation (a segfault
// before the allocation was checked) three times over. The controller now estimates at submission
// what one worker holds at its peak and refuses a job that cannot fit the memory a worker gets
// (the machine's, shared by the job's workers, on the local launcher; on Kubernetes the pod's
// memory limit, shared by the spec.workers.perPod ranks the pod runs: each rank gets its share;
// nothing is checked where neither is known). The pod's memory-backed /dev/shm also counts
// against that limit as it fills; NCCL's use of it comes with device cuda, not checked here. The estimate counts what the engine
// allocates per rank, in f32: parameters and gradients; the reducer's buckets (one more copy of
// the gradients); the optimizer's state (SGD momentum one copy, Adam two; divided among the ranks
// under ZeRO-1 and DistributedFusedAdam); one batch's activations and their gradients (every
// layer's output; a convolution's buffers for one chunk of samples, not per sample, as Note
// [Conv2d layout] lowers them on the CPU: the im2col, past the first layer its gradient, the
// product); the data set decoded into floats. It
// is a lower bound of the peak (allocator overhead, the communication library's buffers and the
// process itself come on top), so a refusal is certain and an acceptance is not a promise.
// Every model type gets a rule here as it is added (gpt: gptShape; sequential: stackShape). A job on `device: cuda` is not checked: its
// model lives in GPU memory, which the controller does not know.

namespace ddp::controller {
namespace {

constexpr int64_t kF32 = 4;

struct DataShape {
  int64_t channels = 1, height = 1, width = 1, classes = 10, samples = 0;
  int64_t features() const { return channels * height * width; }
};

DataShape dataShape(const JobSpec& spec) {
  DataShape d;
  if (spec.data.dataset == DatasetKind::kSynthetic) {
    const auto& s = spec.data.synthetic;
    d.width = s.features;
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(s.features))));
    if (side * side == s.features) d.height = d.width = side;  // an image-shaped sample (CNN)
    d.classes = s.classes;
    d.samples = s.samples + s.samples / 4;
  } else {  // Fashion-MNIST: 60000 + 10000 images of 1 x 28 x 28
    d.height = d.width = 28;
    d.samples = 70000;
  }
  if (spec.data.limit > 0) d.samples = std::min<int64_t>(d.samples, spec.data.limit + 10000);
  return d;
}

// Parameters and per-sample activation floats of a chain of fully connected layers.
void addLinear(int64_t in, int64_t out, int64_t* params, int64_t* acts) {
  *params += in * out + out;
  *acts += 2 * out;  // the layer's output and its activation's
}

// A convolution's buffers of one chunk of samples (Note [Conv2d layout]), floats, not per sample:
// its im2col (`col` floats per sample), the im2col's gradient unless the layer is the model's
// first (no input gradient), and the GEMM's product (`product` floats per sample).
int64_t convChunkFloats(int64_t col, int64_t product, int64_t batch, bool firstLayer) {
  const int64_t n = convSamplesPerChunk(col * kF32, batch);
  return n * ((firstLayer ? 1 : 2) * col + product);
}

void modelShape(const JobSpec& spec, const DataShape& d, int64_t* params, int64_t* actsPerSample,
                int64_t* fixedActs) {
  int64_t width = d.features();
  if (spec.model.type == ModelType::kCnn) {
    int64_t c = d.channels, h = d.height, w = d.width;
    const int64_t k = spec.model.kernelSize;
    for (size_t i = 0; i < spec.model.convChannels.size(); ++i) {
      const int64_t out = spec.model.convChannels[i];
      *params += out * c * k * k + out;
      *fixedActs += convChunkFloats(c * k * k * h * w, out * h * w, spec.data.batchSize, i == 0);
      *actsPerSample += 2 * out * h * w;  // the conv's output and ReLU
      c = out;
      h /= 2;  // every conv block pools by 2
      w /= 2;
    }
    width = c * h * w;
  }
  for (int64_t hidden : spec.model.hidden) {
    addLinear(width, hidden, params, actsPerSample);
    width = hidden;
  }
  addLinear(width, d.classes, params, actsPerSample);
}

// A declared stack (spec.model.stack): per layer its parameters and per-sample floats: its
// output, a block's layers and its own output; a conv's chunk buffers (convChunkFloats) into
// `fixed`. `top`: the model's own stack, whose layer 0 has no input gradient. Shapes from
// inferStackShapes (a stack whose shapes fail was refused by validate: nothing is counted).
void stackShape(const std::vector<LayerSpec>& layers, std::vector<int64_t> in, int64_t batch, bool top,
                int64_t* params, int64_t* acts, int64_t* fixed) {
  const StackShapes shapes = inferStackShapes(layers, in);
  if (!shapes.ok()) return;
  const auto numel = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    return n;
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    const std::vector<int64_t>& out = shapes.outputs[i];
    *acts += numel(out);
    if (l.kind == LayerKind::kLinear) {
      *params += numel(in) * l.out + l.out;
    } else if (l.kind == LayerKind::kConv2d) {
      *params += l.out * in[0] * l.kernel * l.kernel + l.out;
      *fixed += convChunkFloats(in[0] * l.kernel * l.kernel * out[1] * out[2], numel(out), batch, top && i == 0);
    } else if (l.kind == LayerKind::kLayerNorm) {
      *params += 2 * numel(in);
    } else if (l.kind == LayerKind::kResidual) {
      stackShape(l.layers, in, batch, false, params, acts, fixed);
    }
    in = out;
  }
}

// A gpt (worker/model/gpt.h): its parameters, and the floats one sample (a window of T tokens)
// keeps for backward: per block the residual copies, norms, QKV, attention output, MLP
// pre-activation and GELU output, and the attention probabilities (heads x T per token); once,
// the backward scratch and the embedding, final-norm and head-gradient rows. The LM head's
// logits are computed in chunks of at most 8 Mi floats (counted once, not per sample). With
// spec.precision bf16 on the CPU, each GEMM multiplies bf16-rounded fp32 copies of its operands
// (Note [bf16 matmuls] in kernels/bf16_ops.h): the LM head's copy of its V x d weight is counted.
void gptShape(const JobSpec& spec, int64_t* params, int64_t* actsPerSample, int64_t* fixedActs) {
  const GptSpec& g = spec.model.gpt;
  const int64_t v = g.vocabSize > 0 ? g.vocabSize : 256, t = g.contextLength, d = g.dModel;
  const int64_t h = g.mlpHidden > 0 ? g.mlpHidden : 4 * d, layers = g.layers, heads = g.heads;
  const int64_t norm = g.norm == GptNorm::kLayerNorm ? 2 * d : d;
  const int64_t block = 2 * norm + (3 * d * d + 3 * d) + (d * d + d) + (h * d + h) + (d * h + d);
  *params = v * d + (g.positions == GptPositions::kLearned ? t * d : 0) + layers * block + norm +
            (g.tiedEmbeddings ? 0 : v * d);
  *actsPerSample = t * (layers * (8 * d + 2 * h + heads * t) + (6 * d + h) + 3 * d);
  *fixedActs = std::min<int64_t>(int64_t{1} << 23, v * t * spec.data.batchSize) +
               (spec.precision == ComputePrecision::kBf16 ? v * d : 0);
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (int64_t{1} << 30));
  return buf;
}

}  // namespace

MemoryEstimate estimateWorkerMemory(const JobSpec& spec) {
  const DataShape d = dataShape(spec);
  int64_t params = 0, acts = 0, fixedActs = 0;
  const bool gpt = spec.model.type == ModelType::kGpt;
  if (gpt) {
    gptShape(spec, &params, &acts, &fixedActs);
  } else if (spec.model.type == ModelType::kSequential) {
    stackShape(spec.model.stack, datasetSampleShape(spec).value_or(std::vector<int64_t>{d.features()}),
               spec.data.batchSize, true, &params, &acts, &fixedActs);
  } else {
    modelShape(spec, d, &params, &acts, &fixedActs);
  }
  MemoryEstimate e;
  e.parameters = params;
  e.modelBytes = 2 * params * kF32;
  e.bucketBytes = params * kF32;
  int64_t optimizer = 0;
  if (spec.optimizer.type == OptimizerType::kAdam || spec.optimizer.type == OptimizerType::kAdamW) {
    optimizer = 2 * params * kF32;
  } else if (spec.optimizer.momentum > 0) {
    optimizer = params * kF32;
  }
  if (spec.zero != ZeroMode::kNone) optimizer /= std::max(1, spec.workers.min);
  e.optimizerBytes = optimizer;
  // A gpt's activation count already includes what backward keeps (its saved activations);
  // token files are memory-mapped (the page cache holds them, not the worker).
  e.activationBytes = ((gpt ? 1 : 2) * acts * spec.data.batchSize + fixedActs) * kF32;
  e.dataBytes = gpt ? 0 : d.samples * d.features() * kF32;
  return e;
}

Status checkWorkerMemory(const JobSpec& spec, const std::optional<WorkerMemoryBudget>& budget) {
  if (!budget || budget->bytes <= 0) return Status::ok();
  // On a GPU the model lives in device memory, which the controller does not know.
  if (spec.device == JobDevice::kCuda) return Status::ok();
  const MemoryEstimate e = estimateWorkerMemory(spec);
  if (e.totalBytes() <= budget->bytes) return Status::ok();
  return invalidArgument(
      (budget->field.empty() ? std::string("spec.model") : budget->field) + ": a worker needs at least " +
      gib(e.totalBytes()) + " (" + std::to_string(e.parameters) + " parameters: " + gib(e.modelBytes) +
      " for them and their gradients, " + gib(e.bucketBytes) + " of gradient buckets, " + gib(e.optimizerBytes) +
      " of optimizer state, " + gib(e.activationBytes) + " of activations at batch " +
      std::to_string(spec.data.batchSize) + ", " + gib(e.dataBytes) + " of data), more than " + budget->source + " (" +
      gib(budget->bytes) + "): make the model or the batch smaller, or give the workers more memory");
}

}  // namespace ddp::controller
