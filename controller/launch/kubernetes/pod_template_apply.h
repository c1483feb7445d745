#pragma once
// applyPodTemplate: a job's spec.kubernetes.template merged into one of its worker pods as
// buildWorkerPod made it (Note [Pod template] in common/jobspec/pod_template.h). The template was
// validated at submission, so nothing it holds overrides what the controller owns; the merge
// still never replaces a value the controller set, except through the security contexts, which
// merge by design.
// Thread model: pure functions.

#include <nlohmann/json.hpp>

#include "common/jobspec/pod_template.h"

namespace ddp::controller::kube {

// `over` merged into `base`: mappings key by key, lists of strings joined (each string once),
// anything else replaced by `over`'s value.
void mergeOver(nlohmann::json& base, const nlohmann::json& over);

// Adds the template's values to `pod` (a core/v1 Pod whose first container named `container`
// is the worker's).
void applyPodTemplate(const PodTemplateSpec& t, const char* container, nlohmann::json& pod);

}  // namespace ddp::controller::kube
