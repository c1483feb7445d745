#include "common/datafiles/user_data_files.h"

#include "common/datafiles/csv_file.h"
#include "common/datafiles/idx_file.h"
#include "common/datafiles/npy_file.h"

namespace ddp::datafiles {
namespace {

Result<SplitInfo> inspectNpy(const SplitFiles& f, const std::string& field) {
  auto features = readNpyHeader(f.features);
  if (!features.isOk()) return features.status().withContext(field + ".features");
  auto targets = readNpyHeader(f.targets);
  if (!targets.isOk()) return targets.status().withContext(field + ".targets");
  if (features->shape.empty()) {
    return invalidArgument(field + ".features: " + f.features + ": a scalar; features are an array of samples (N, ...)");
  }
  if (features->dtype == NpyDType::kI32 || features->dtype == NpyDType::kI64) {
    return invalidArgument(field + ".features: " + f.features + ": dtype " + npyDTypeName(features->dtype) +
                           " (features are '<f4', '<f8' or '|u1')");
  }
  const std::vector<int64_t>& ts = targets->shape;
  if (ts.empty() || ts.size() > 2 || (ts.size() == 2 && ts[1] != 1)) {
    return invalidArgument(field + ".targets: " + f.targets + ": shape " + shapeText(ts) +
                           ", expected one target per sample (N,) or (N, 1)");
  }
  if (ts[0] != features->rows()) {
    return invalidArgument(field + ".targets: " + f.targets + " has " + std::to_string(ts[0]) + " targets but " +
                           f.features + " has " + std::to_string(features->rows()) + " samples");
  }
  SplitInfo info;
  info.samples = features->rows();
  info.sampleShape = features->trailingShape();
  if (info.sampleShape.empty()) info.sampleShape = {1};
  info.floatTargets = npyDTypeIsFloat(targets->dtype);
  return info;
}

}  // namespace

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

int64_t SplitInfo::features() const {
  int64_t n = 1;
  for (int64_t d : sampleShape) n *= d;
  return n;
}

Result<SplitInfo> inspectSplit(const UserDataFiles& files, bool train) {
  const SplitFiles& f = train ? files.train : files.val;
  const std::string field = train ? "spec.data.train" : "spec.data.val";
  switch (files.format) {
    case UserDataFormat::kIdx: {
      auto s = inspectIdxSplit(f.path, train ? IdxSplit::kTrain : IdxSplit::kEval);
      if (!s.isOk()) return s.status().withContext(field + ".path");
      SplitInfo info;
      info.samples = s->samples;
      info.sampleShape = s->sampleShape;
      return info;
    }
    case UserDataFormat::kNpy:
      return inspectNpy(f, field);
    case UserDataFormat::kCsv: {
      auto columns = readCsvHeader(f.path);
      if (!columns.isOk()) return columns.status().withContext(field + ".path");
      auto target = csvTargetColumn(f.path, *columns, files.target);
      if (!target.isOk()) return target.status().withContext(field + ".path");
      SplitInfo info;
      info.sampleShape = {static_cast<int64_t>(columns->size()) - 1};
      info.floatTargets = files.regression;
      return info;
    }
  }
  return internalError("unknown data format");
}

Result<SplitInfo> inspectUserData(const UserDataFiles& files) {
  DDP_ASSIGN_OR_RETURN(SplitInfo train, inspectSplit(files, true));
  if (files.val.empty()) return train;
  DDP_ASSIGN_OR_RETURN(SplitInfo val, inspectSplit(files, false));
  if (val.sampleShape != train.sampleShape) {
    return invalidArgument("spec.data.val: samples of shape " + shapeText(val.sampleShape) +
                           ", but the training split's are " + shapeText(train.sampleShape));
  }
  if (val.floatTargets != train.floatTargets) {
    return invalidArgument(std::string("spec.data.val.targets: ") + (val.floatTargets ? "float" : "integer") +
                           " targets, but the training split's are " + (train.floatTargets ? "float" : "integer"));
  }
  return train;
}

}  // namespace ddp::datafiles
