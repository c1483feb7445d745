#pragma once
// Writing .npy files (Note [NPY files] in npy_file.h): version 1.0, C order, little-endian;
// what `ddpctl predict` answers with.
// Thread model: free functions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/datafiles/npy_file.h"
#include "common/status.h"

namespace ddp::datafiles {

// The file's bytes: the header (padded so that the data starts at a multiple of 64) and
// prod(shape) values of `dtype` from `data`.
std::string encodeNpy(NpyDType dtype, const std::vector<int64_t>& shape, const void* data);
// encodeNpy written to `path` (Unavailable naming it when it cannot be written).
Status writeNpy(const std::string& path, NpyDType dtype, const std::vector<int64_t>& shape, const void* data);

}  // namespace ddp::datafiles
