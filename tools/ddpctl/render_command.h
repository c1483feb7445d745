#pragma once
// `ddpctl render JOB.yaml [--worker-image IMAGE] [--watch-namespace NS] [--gang-scheduler-name
// NAME] [--advertise-url URL]`: prints, as YAML documents, every object the controller would
// create for the job on Kubernetes (its token Secret, headless Service, a gang scheduler's
// PodGroup and the worker pods), built by the launcher's own
// code without a cluster (controller/launch/kubernetes/job_objects.h; Note [Rendered objects]).
// The options are the controller's flags of the same names (--image and --namespace are
// shorter spellings). Exit 0; 2 for bad arguments, an invalid job, or an object the API server
// would refuse (the reason on the error stream); 1 when the file cannot be read.
// Runs in-process: it takes its arguments and two streams and returns the exit status.
// Thread model: the calling thread; starts no threads.

#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::ddpctl {

// The chart's defaults (charts/ddp: release ddp, the workers' port 8081) in namespace NS.
std::string defaultAdvertiseUrl(const std::string& nameSpace);

// args: everything after "render".
int renderCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
std::string renderUsage();

}  // namespace ddp::ddpctl
