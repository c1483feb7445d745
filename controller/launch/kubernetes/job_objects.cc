// A job's Kubernetes objects without a cluster (job_objects.h; Note [Rendered objects]).
#include "controller/launch/kubernetes/job_objects.h"

#include <string_view>

#include "common/jobspec/job_names.h"
#include "common/jobspec/job_spec_kubernetes.h"
#include "controller/launch/kubernetes/scheduling_objects.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// A label value: empty, or 1-63 of alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
bool isLabelValue(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

constexpr const char* kDns1123Label = "must be a DNS-1123 label (1-63 characters of a-z, 0-9 and '-', starting and ending "
                                      "with a letter or digit)";

Status refuse(const json& object, const std::string& field, const std::string& why, const std::string& value) {
  const json& m = object.value("metadata", json::object());
  return invalidArgument(object.value("kind", "object") + " " + m.value("name", "") + ": " + field + ": " + why +
                         " (got '" + value + "')");
}

Status checkMetadata(const json& object) {
  const json& m = object.value("metadata", json::object());
  const std::string kind = object.value("kind", "");
  const std::string name = m.value("name", "");
  const std::string ns = m.value("namespace", "");
  if (!isDns1123Label(ns)) return refuse(object, "metadata.namespace", kDns1123Label, ns);
  if (kind == "Service" && !isDns1035Label(name)) {
    return refuse(object, "metadata.name",
                  "a Service's name must be a DNS-1035 label (1-63 characters of a-z, 0-9 and '-', starting with a "
                  "letter and ending with a letter or digit)",
                  name);
  }
  if (!isDnsSubdomain(name)) return refuse(object, "metadata.name", "must be a DNS-1123 subdomain", name);
  const json labels = m.value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    if (!isQualifiedName(key)) return refuse(object, "metadata.labels", "is not a valid label key", key);
    const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    if (!isLabelValue(v)) {
      return refuse(object, "metadata.labels[" + key + "]",
                    "must be a label value: at most 63 characters of alphanumerics, '-', '_' and '.', starting and "
                    "ending alphanumeric",
                    v);
    }
  }
  return Status::ok();
}

Status checkPod(const json& pod) {
  const json& spec = pod.value("spec", json::object());
  for (const char* field : {"hostname", "subdomain"}) {
    const std::string v = spec.value(field, "");
    if (spec.contains(field) && !isDns1123Label(v)) return refuse(pod, std::string("spec.") + field, kDns1123Label, v);
  }
  const json containers = spec.value("containers", json::array());
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string image = containers[i].value("image", "");
    if (image.empty()) {
      return refuse(pod, "spec.containers[" + std::to_string(i) + "].image",
                    "required: set spec.kubernetes.image or the controller's --worker-image", image);
    }
  }
  return Status::ok();
}

}  // namespace

std::vector<json> buildJobObjects(const WorkerObjectsInput& in) {
  std::vector<json> out = {buildTokenSecret(in), buildHeadlessService(in)};
  if (auto group = buildPodGroup(schedulingInput(in), out[1]["metadata"])) out.push_back(*group);
  for (int slot = 0; slot < podCount(in.launch.workers, in.spec.workers.perPod); ++slot) {
    out.push_back(buildWorkerPod(in, slot));  // a pod per slot: one rank each, or perPod ranks
  }
  return out;
}

Result<std::vector<json>> renderJobObjects(const JobSpec& spec, const RenderOptions& options) {
  WorkerObjectsInput in;
  in.nameSpace = spec.nameSpace.empty() ? options.nameSpace : spec.nameSpace;  // Note [Served namespaces]
  in.defaultImage = options.defaultImage;
  in.launch = makeJobLaunch(spec.name, spec, kRenderedToken, options.settings);
  in.spec = spec;
  in.owner = JobOwner{spec.name, kRenderedOwnerUid};
  in.schedulerName = options.schedulerName;
  DDP_RETURN_IF_ERROR(validateJobName(spec.name));
  std::vector<json> objects = buildJobObjects(in);
  for (const json& o : objects) DDP_RETURN_IF_ERROR(checkJobObject(o));
  return objects;
}

Status checkJobObject(const json& object) {
  DDP_RETURN_IF_ERROR(checkMetadata(object));
  if (object.value("kind", "") == "Pod") return checkPod(object);
  return Status::ok();
}

}  // namespace ddp::controller::kube
