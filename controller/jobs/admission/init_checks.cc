#include "controller/jobs/admission/init_checks.h"

#include "common/safetensors/safetensors.h"

namespace ddp::controller {

Status checkInitFile(const JobSpec& spec) {
  const std::string& path = spec.init.from;
  if (path.empty()) return Status::ok();
  const std::string field = "spec.init.from";
  auto file = safetensors::readHeader(path);
  if (!file.isOk()) return Status(file.status().code(), field + ": " + file.status().message());
  for (const safetensors::Tensor& t : file->tensors) {
    if (t.dtype != "F32") return invalidArgument(field + ": " + path + ": tensor '" + t.name + "' is " + t.dtype + ", not F32");
  }
  const auto model = file->metadata.find("model");
  if (model != file->metadata.end()) {
    const std::string type = std::string("type: ") + modelTypeName(spec.model.type) + "\n";
    if (model->second.rfind(type, 0) != 0) {
      const std::string theirs = model->second.substr(0, model->second.find('\n'));
      return invalidArgument(field + ": " + path + " holds a model of " + theirs + ", this job's is " +
                             modelTypeName(spec.model.type));
    }
  }
  return Status::ok();
}

}  // namespace ddp::controller
