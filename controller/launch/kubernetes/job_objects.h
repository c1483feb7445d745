#pragma once
// Every Kubernetes object the controller creates for a job, without a cluster: what `ddpctl
// render` prints (Note [Rendered objects]), built by the launcher's own builders
// (worker_objects.h) from the launch the JobManager would make (makeJobLaunch), and checked for
// what the API server would refuse.
// Thread model: pure functions.
//
// Note [Rendered objects]
// renderJobObjects() gives the objects KubernetesLauncher::ensureWorkers creates for a DDPJob,
// in its order: the token Secret, the headless Service, the PodGroup of a gang scheduler
// (--gang-scheduler-name; Note [Gang scheduler PodGroups]), one worker pod per slot. Two values
// exist only on a cluster and are written as placeholders: the worker token (generated at
// submission; kRenderedToken) and the DDPJob's uid in the ownerReferences (kRenderedOwnerUid).
// The controller's flags that shape the objects are options: its namespace (--watch-namespace),
// its default worker image (--worker-image), the pods' scheduler (--gang-scheduler-name) and
// the URL workers dial (--advertise-url).
// job_objects_test compares the rendered objects with those the launcher creates in the
// fake API server; the Kubernetes checks validate ddpctl render's output against the Kubernetes
// schemas.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "controller/launch/kubernetes/worker_objects.h"
#include "controller/launch/launcher.h"

namespace ddp::controller::kube {

inline constexpr const char* kRenderedToken = "<generated at submission>";
inline constexpr const char* kRenderedOwnerUid = "<the DDPJob's uid>";

struct RenderOptions {
  std::string nameSpace = "default";  // the controller's namespace (--watch-namespace)
  std::string defaultImage;           // --worker-image
  std::string schedulerName;          // --gang-scheduler-name ("" : the default scheduler)
  WorkerLaunchSettings settings;      // settings.controllerUrl: --advertise-url
};

// The objects ensureWorkers creates for `in`, in its order: Secret, Service, the PodGroup when
// the pods' scheduler needs one (scheduling_objects.h), pods 0..workers-1.
std::vector<nlohmann::json> buildJobObjects(const WorkerObjectsInput& in);

// The objects for the DDPJob of `spec` (a validated spec: parseJobSpec), with the placeholders
// of Note [Rendered objects]. InvalidArgument naming the object and field the API server would
// refuse (checkJobObject).
Result<std::vector<nlohmann::json>> renderJobObjects(const JobSpec& spec, const RenderOptions& options);

// Ok, or InvalidArgument with what the API server would refuse in `object` ("Pod
// x-worker-0: spec.hostname: ..."): its namespace and name, its label keys and values, and for a
// pod its hostname, subdomain and container images.
Status checkJobObject(const nlohmann::json& object);

}  // namespace ddp::controller::kube
