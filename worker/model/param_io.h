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

// Serialises `params` (data, not gradients). `ops` copies device memory to the host.
std::string saveParameters(const std::vector<Parameter*>& params, kernels::LayerOps& ops);
// Loads into `params`; on any mismatch returns InvalidArgument/DataLoss and leaves params
// untouched.
Status loadParameters(std::string_view bytes, const std::vector<Parameter*>& params,
                      kernels::LayerOps& ops);

}  // namespace ddp::model
