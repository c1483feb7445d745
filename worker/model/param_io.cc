#include "worker/model/param_io.h"

#include "common/binary_io.h"
#include "worker/model/layer.h"

namespace ddp::model {

ParameterSnapshot snapshotParameters(const std::vector<Parameter*>& params, kernels::LayerOps& ops) {
  ParameterSnapshot out;
  out.entries.reserve(params.size());
  for (const Parameter* p : params) {
    ParameterSnapshot::Entry e{p->name, p->dtype, p->shape, std::string(p->bytes(), '\0')};
    ops.copyToHost(e.bytes.data(), p->data, p->bytes());
    out.entries.push_back(std::move(e));
  }
  return out;
}

std::string encodeParameters(const ParameterSnapshot& snapshot) {
  BinaryWriter w;
  w.put<uint64_t>(snapshot.entries.size());
  for (const auto& e : snapshot.entries) {
    w.putString(e.name);
    w.put<uint8_t>(static_cast<uint8_t>(e.dtype));
    w.putVector(e.shape);
    w.putString(e.bytes);
  }
  return writeFramed(kParamsMagic, kParamsVersion, w.data());
}

std::string saveParameters(const std::vector<Parameter*>& params, kernels::LayerOps& ops) {
  return encodeParameters(snapshotParameters(params, ops));
}

Status loadParameters(std::string_view bytes, const std::vector<Parameter*>& params,
                      kernels::LayerOps& ops) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload,
                       readFramed(bytes, kParamsMagic, kParamsVersion, &version, "model parameters"));
  BinaryReader r(payload, "model parameters");
  uint64_t count = 0;
  DDP_RETURN_IF_ERROR(r.get(&count));
  if (count != params.size()) {
    return invalidArgument("model parameters: checkpoint has " + std::to_string(count) +
                           " parameters, the model has " + std::to_string(params.size()));
  }
  // Validate everything first, then copy, so a mismatch leaves the model untouched.
  std::vector<std::string> blobs(count);
  for (size_t i = 0; i < count; ++i) {
    const Parameter& p = *params[i];
    std::string name;
    uint8_t dtype = 0;
    std::vector<int64_t> shape;
    DDP_RETURN_IF_ERROR(r.getString(&name));
    DDP_RETURN_IF_ERROR(r.get(&dtype));
    DDP_RETURN_IF_ERROR(r.getVector(&shape));
    DDP_RETURN_IF_ERROR(r.getString(&blobs[i]));
    const std::string where = "model parameters: parameter " + std::to_string(i) + " ";
    if (name != p.name) {
      return invalidArgument(where + "is named '" + name + "' in the checkpoint, '" + p.name +
                             "' in the model");
    }
    if (dtype != static_cast<uint8_t>(p.dtype)) {
      return invalidArgument(where + "'" + p.name + "' has another dtype in the checkpoint");
    }
    if (shape != p.shape) {
      return invalidArgument(where + "'" + p.name + "' has shape " + shapeString(shape) +
                             " in the checkpoint, " + shapeString(p.shape) + " in the model");
    }
    if (blobs[i].size() != p.bytes()) {
      return dataLoss(where + "'" + p.name + "' has " + std::to_string(blobs[i].size()) +
                      " bytes, expected " + std::to_string(p.bytes()));
    }
  }
  if (!r.atEnd()) return dataLoss("model parameters: trailing bytes after the last parameter");
  for (size_t i = 0; i < count; ++i) ops.copyToDevice(params[i]->data, blobs[i].data(), blobs[i].size());
  return ops.status().withContext("loading model parameters");
}

}  // namespace ddp::model
