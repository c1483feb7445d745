#pragma once
// How many samples a CPU convolution lowers at once (Note [Conv2d layout] in
// worker/model/conv2d.cc): Conv2d's chunks, and the controller's memory estimate, which counts
// the same buffers (Note [Memory estimate]). Thread model: a constant and a pure function.

#include <algorithm>
#include <cstdint>

namespace ddp {

// The largest im2col chunk a CPU convolution lowers at once, in bytes.
inline constexpr int64_t kConvChunkColBytes = int64_t{256} << 10;

// Samples per chunk when one sample's im2col takes `colBytesPerSample`: as many as fit in
// kConvChunkColBytes, at least 1, at most `batch`.
constexpr int64_t convSamplesPerChunk(int64_t colBytesPerSample, int64_t batch) {
  return std::clamp<int64_t>(kConvChunkColBytes / std::max<int64_t>(colBytesPerSample, 1), 1,
                             std::max<int64_t>(batch, 1));
}

}  // namespace ddp
