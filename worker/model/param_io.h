#pragma once
// Parameter (de)serialization for checkpoints: the bytes of every parameter in order, each
// with its name, dtype and shape, in one CRC-checked frame (common/binary_io.h). Loading
// checks that names, dtypes and shapes match the module's parameters one by one and reports
// the first mismatch by name. Device parameters travel through the host.
// Thread model: plain functions; the module must not be training concurrently.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"

namespace ddp::model {

inline constexpr uint32_t kParamsMagic = 0x4d504444;  // "DDPM"
inline constexpr uint32_t kParamsVersion = 1;

// The parameters' values copied to the host, not yet encoded: the cheap part of a checkpoint
// that the training thread does (Note [Asynchronous checkpoints] in
// worker/checkpointing/checkpoint_writer.h); encodeParameters() frames and checksums it later.
struct ParameterSnapshot {
  struct Entry {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::vector<Entry> entries;
};
ParameterSnapshot snapshotParameters(const std::vector<Parameter*>& params, kernels::LayerOps& ops);
std::string encodeParameters(const ParameterSnapshot& snapshot);
// Serialises `params` (data, not gradients): encodeParameters(snapshotParameters(...)). `ops`
// copies device memory to the host.
std::string saveParameters(const std::vector<Parameter*>& params, kernels::LayerOps& ops);
// The entries of saveParameters' bytes (DataLoss naming what is damaged), without a model.
Result<ParameterSnapshot> decodeParameters(std::string_view bytes);
// Loads `snapshot` into `params`: names, dtypes and shapes must match one by one (the first
// mismatch is InvalidArgument naming the parameter); on a mismatch params stay untouched.
Status loadSnapshot(const ParameterSnapshot& snapshot, const std::vector<Parameter*>& params,
                    kernels::LayerOps& ops);
// Loads into `params`; on any mismatch returns InvalidArgument/DataLoss and leaves params
// untouched.
Status loadParameters(std::string_view bytes, const std::vector<Parameter*>& params,
                      kernels::LayerOps& ops);

}  // namespace ddp::model
