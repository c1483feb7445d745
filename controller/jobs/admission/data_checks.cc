// Note [Data checks at submission] (data_checks.h).
#include "controller/jobs/admission/data_checks.h"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "common/datafiles/user_data_files.h"
#include "common/tokens/token_file.h"

namespace ddp::controller {
namespace {

Status checkTokens(const std::string& field, const DataSplitSpec& split, int64_t window) {
  std::optional<tokens::TokenDType> raw;
  if (!split.dtype.empty()) {
    auto d = tokens::parseTokenDType(split.dtype);
    if (!d.isOk()) return d.status().withContext(field);
    raw = *d;
  }
  return tokens::checkTokenSource(split.path, raw, window).withContext(field);
}

Status checkText(const std::string& field, const std::string& pattern, int64_t window) {
  auto files = tokens::expandTokenPaths(pattern);
  if (!files.isOk()) return files.status().withContext(field);
  int64_t bytes = 0;
  for (const std::string& f : *files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (ec) return notFound(field + ": " + f + ": " + ec.message());
    bytes += static_cast<int64_t>(size);
  }
  if (bytes < window) {
    return invalidArgument(field + ": " + pattern + " holds " + std::to_string(bytes) +
                           " bytes, fewer than one window of " + std::to_string(window) +
                           " (spec.model.contextLength + 1)");
  }
  return Status::ok();
}

bool isUserData(DatasetKind k) { return k == DatasetKind::kIdx || k == DatasetKind::kNpy || k == DatasetKind::kCsv; }

datafiles::UserDataFiles userFiles(const JobSpec& spec) {
  const DataSpec& d = spec.data;
  datafiles::UserDataFiles f;
  f.format = d.dataset == DatasetKind::kIdx   ? datafiles::UserDataFormat::kIdx
             : d.dataset == DatasetKind::kNpy ? datafiles::UserDataFormat::kNpy
                                              : datafiles::UserDataFormat::kCsv;
  f.train = {d.train.path, d.train.features, d.train.targets};
  f.val = {d.val.path, d.val.features, d.val.targets};
  f.target = d.target;
  f.regression = spec.loss == LossType::kMse;  // csv: the target column is read as floats
  return f;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> userDataPaths(const JobSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!isUserData(spec.data.dataset)) return out;
  for (const auto& [name, split] :
       {std::pair{"spec.data.train", &spec.data.train}, std::pair{"spec.data.val", &spec.data.val}}) {
    if (!split->path.empty()) out.emplace_back(std::string(name) + ".path", split->path);
    if (!split->features.empty()) out.emplace_back(std::string(name) + ".features", split->features);
    if (!split->targets.empty()) out.emplace_back(std::string(name) + ".targets", split->targets);
  }
  return out;
}

Status checkUserDataFiles(const JobSpec& spec) {
  if (!isUserData(spec.data.dataset)) return Status::ok();
  DDP_ASSIGN_OR_RETURN(datafiles::SplitInfo info, datafiles::inspectUserData(userFiles(spec)));
  const std::string shape = datafiles::shapeText(info.sampleShape);
  const bool mse = spec.loss == LossType::kMse;
  if (info.floatTargets && !mse) {
    return invalidArgument("spec.data.train.targets: " + spec.data.train.targets +
                           " holds float targets (regression): train them with spec.loss: mse, or give integer "
                           "class labels ('<i4' or '<i8')");
  }
  if (mse && !info.floatTargets) {
    return invalidArgument("spec.loss: mse needs float targets, but the training targets are class labels (save "
                           "them as '<f4' or '<f8')");
  }
  if (spec.model.type == ModelType::kSequential) {
    const StackShapes shapes = inferStackShapes(spec.model.stack, info.sampleShape);
    if (!shapes.ok()) {
      return invalidArgument(shapes.errorPath + ": " + shapes.error + " (the training samples are " + shape + ")");
    }
    if (mse && shapes.output() != std::vector<int64_t>{1}) {
      return invalidArgument("spec.model.stack: ends in " + datafiles::shapeText(shapes.output()) +
                             " but mse needs [1]: one float target per sample (the last layer's out)");
    }
  }
  if (spec.model.type == ModelType::kCnn && info.sampleShape != std::vector<int64_t>{1, 28, 28} &&
      info.sampleShape != std::vector<int64_t>{28, 28}) {
    return invalidArgument("spec.model.type: cnn takes 1x28x28 images, but the training samples are " + shape +
                           " (save the features as (N, 1, 28, 28), or use an mlp)");
  }
  const StandardizeSpec& st = spec.data.standardize;
  const int64_t features = info.features();
  for (const auto& [name, list] : {std::pair{"mean", &st.mean}, std::pair{"std", &st.std}}) {
    const int64_t n = static_cast<int64_t>(list->size());
    if (n > 1 && n != features) {
      return invalidArgument(std::string("spec.data.standardize.") + name + ": " + std::to_string(n) +
                             " values, but the data has " + std::to_string(features) + " features (samples of " +
                             shape + "): give one value for every feature, or one per feature");
    }
  }
  return Status::ok();
}

Status checkDataFiles(const JobSpec& spec) {
  const int64_t window = int64_t{spec.model.gpt.contextLength} + 1;
  const DataSpec& d = spec.data;
  if (d.dataset == DatasetKind::kTokens) {
    DDP_RETURN_IF_ERROR(checkTokens("spec.data.train.path", d.train, window));
    if (!d.val.path.empty()) DDP_RETURN_IF_ERROR(checkTokens("spec.data.val.path", d.val, window));
  } else if (d.dataset == DatasetKind::kText) {
    DDP_RETURN_IF_ERROR(checkText("spec.data.train.path", d.train.path, window));
    if (!d.val.path.empty()) DDP_RETURN_IF_ERROR(checkText("spec.data.val.path", d.val.path, window));
  }
  return checkUserDataFiles(spec);
}

}  // namespace ddp::controller
