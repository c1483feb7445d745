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

Result<ParameterSnapshot> decodeParameters(std::string_view bytes) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload,
                       readFramed(bytes, kParamsMagic, kParamsVersion, &version, "model parameters"));
  BinaryReader r(payload, "model parameters");
  uint64_t count = 0;
  DDP_RETURN_IF_ERROR(r.get(&count));
  ParameterSnapshot out;
  for (uint64_t i = 0; i < count; ++i) {
    ParameterSnapshot::Entry e;
    uint8_t dtype = 0;
    DDP_RETURN_IF_ERROR(r.getString(&e.name));
    DDP_RETURN_IF_ERROR(r.get(&dtype));
    DDP_RETURN_IF_ERROR(r.getVector(&e.shape));
    DDP_RETURN_IF_ERROR(r.getString(&e.bytes));
    if (dtype > static_cast<uint8_t>(DType::kI64)) {
      return dataLoss("model parameters: '" + e.name + "' has unknown dtype " + std::to_string(dtype));
    }
    e.dtype = static_cast<DType>(dtype);
    const size_t want = static_cast<size_t>(shapeNumel(e.shape)) * dtypeSize(e.dtype);
    if (e.bytes.size() != want) {
      return dataLoss("model parameters: '" + e.name + "' has " + std::to_string(e.bytes.size()) +
                      " bytes, expected " + std::to_string(want));
    }
    out.entries.push_back(std::move(e));
  }
  if (!r.atEnd()) return dataLoss("model parameters: trailing bytes after the last parameter");
  return out;
}

Status loadSnapshot(const ParameterSnapshot& snapshot, const std::vector<Parameter*>& params,
                    kernels::LayerOps& ops) {
  if (snapshot.entries.size() != params.size()) {
    return invalidArgument("model parameters: checkpoint has " + std::to_string(snapshot.entries.size()) +
                           " parameters, the model has " + std::to_string(params.size()));
  }
  // Validate everything first, then copy, so a mismatch leaves the model untouched.
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = *params[i];
    const ParameterSnapshot::Entry& e = snapshot.entries[i];
    const std::string where = "model parameters: parameter " + std::to_string(i) + " ";
    if (e.name != p.name) {
      return invalidArgument(where + "is named '" + e.name + "' in the checkpoint, '" + p.name +
                             "' in the model");
    }
    if (e.dtype != p.dtype) {
      return invalidArgument(where + "'" + p.name + "' has another dtype in the checkpoint");
    }
    if (e.shape != p.shape) {
      return invalidArgument(where + "'" + p.name + "' has shape " + shapeString(e.shape) +
                             " in the checkpoint, " + shapeString(p.shape) + " in the model");
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& b = snapshot.entries[i].bytes;
    ops.copyToDevice(params[i]->data, b.data(), b.size());
  }
  return ops.status().withContext("loading model parameters");
}

Status loadParameters(std::string_view bytes, const std::vector<Parameter*>& params,
                      kernels::LayerOps& ops) {
  DDP_ASSIGN_OR_RETURN(ParameterSnapshot snapshot, decodeParameters(bytes));
  return loadSnapshot(snapshot, params, ops);
}

}  // namespace ddp::model
