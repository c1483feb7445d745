#pragma once
// How many samples a CPU training step runs through the model at once (Note [Sample chunks]).
// Thread model: a constant and a pure function.
//
// Note [Sample chunks]
// On the CPU a training step's activations and their gradients for the whole batch outgrow the
// core's L2 cache (the CNN preset at batch 64: 61 KB of layer outputs per sample, twice that with
// their gradients, 7.8 MB), and two workers on one machine then stream them through the shared
// L3 and memory at the same time: with two workers each one's compute took 12-14 % longer than
// alone. Module::forwardBackward therefore runs the batch in equal chunks of samples whose
// outputs and gradients fit kSampleChunkBytes (1 MiB, 8 samples of the CNN preset): forward,
// loss and backward per chunk, the
// parameter gradients accumulating (every layer adds into Parameter::grad), and the DDP
// ready callback passed to the last chunk's backward only, so each parameter is reported once,
// complete. Each row's loss gradient is still gradScale / batch, so the step computes the same
// gradient; only the order of the per-sample sums inside each parameter gradient changes (the
// results agree to rounding, not bit for bit). A GPU runs the batch whole, and so does a model
// whose layers are not independent per sample (dropout draws its mask by position in the batch:
// Layer::sampleFloats() returns 0). Every chunk reads all the weights again and adds into all
// their gradients, so a chunk is never smaller than the parameters and gradients themselves
// (a wide MLP, whose weights dwarf its activations, runs its batch whole). The buffers keep their
// whole-batch sizes (the chunks save time, not memory), so Note [Memory estimate] is unchanged.
// Measured (bench_train CNN, docs/PERFORMANCE.md): one worker's step 3.59 ms whole, 3.20 ms in
// chunks of 16 samples, 3.03 in 8, 2.87 in 4, 3.14 in 2, 3.51 in 1; the MLP preset in two
// chunks of 32 computed 6 % slower than whole (its 1 MB of weights per chunk), hence the floor.
#include <algorithm>
#include <cstdint>

namespace ddp::model {

// The activations (layer outputs and their gradients) one chunk may keep, in bytes.
inline constexpr int64_t kSampleChunkBytes = int64_t{1} << 20;

// Samples per chunk for `batch` samples of `bytesPerSample` each in a model whose parameters and
// their gradients take `paramBytes`: the batch split into the fewest equal chunks (the last may
// be smaller) of at most max(kSampleChunkBytes, paramBytes), at least one sample each; `batch`
// itself when bytesPerSample <= 0 (not chunkable) or the whole batch fits.
constexpr int samplesPerChunk(int64_t bytesPerSample, int64_t paramBytes, int batch) {
  if (bytesPerSample <= 0 || batch <= 1) return batch;
  const int64_t budget = std::max(kSampleChunkBytes, paramBytes);
  const int64_t fit = std::max<int64_t>(1, budget / bytesPerSample);
  const int64_t chunks = (batch + fit - 1) / fit;
  return static_cast<int>((batch + chunks - 1) / chunks);
}

}  // namespace ddp::model
