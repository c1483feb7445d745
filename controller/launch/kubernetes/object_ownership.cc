#include "controller/launch/kubernetes/object_ownership.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
constexpr const char* kManager = "ddp-controller";  // the value metadata() gives (worker_objects.cc)

}  // namespace

Ownership ownershipOf(const json& object, const std::string& job, const std::optional<JobOwner>& owner) {
  const json meta = object.value("metadata", json::object());
  const json refs = meta.value("ownerReferences", json::array());
  const json labels = meta.value("labels", json::object());
  const json* controllerRef = nullptr;
  for (const json& ref : refs) {
    if (owner && !owner->uid.empty() && ref.value("uid", "") == owner->uid) return Ownership::kJobs;
    if (ref.value("controller", false)) controllerRef = &ref;
  }
  if (controllerRef) {
    const bool sameNamedJob = controllerRef->value("kind", "") == kJobKind &&
                              controllerRef->value("apiVersion", "") == kJobApiVersion &&
                              controllerRef->value("name", "") == (owner ? owner->name : job);
    return sameNamedJob ? Ownership::kEarlierIncarnation : Ownership::kAnother;
  }
  const bool labelled = labels.value(kJobLabel, "") == job && labels.value(kManagedBy, "") == kManager;
  if (labelled) return Ownership::kJobs;
  return Ownership::kAnother;
}

std::string describeOwner(const json& object) {
  const json meta = object.value("metadata", json::object());
  const json refs = meta.value("ownerReferences", json::array());
  if (!refs.empty()) {
    std::string out = "owned by";
    for (const json& ref : refs) out += " " + ref.value("kind", "?") + " " + ref.value("name", "?");
    return out;
  }
  std::string out = "no owner reference, labels {";
  bool first = true;
  const json labels = meta.value("labels", json::object());
  for (const auto& [k, v] : labels.items()) {
    out += (first ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    first = false;
  }
  return out + "}";
}

}  // namespace ddp::controller::kube
