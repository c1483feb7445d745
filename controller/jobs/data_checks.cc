// Note [Data checks at submission] (data_checks.h).
#include "controller/jobs/data_checks.h"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

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

}  // namespace

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
  return Status::ok();
}

}  // namespace ddp::controller
