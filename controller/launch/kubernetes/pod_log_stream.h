#pragma once
// PodLogFollowStream: a followed worker log (LogOptions::follow) from the pod log API, for
// KubernetesLauncher::openLog (which serves a log that is not followed with one read).
//
// Note [Following pod logs]
// Following polls. Every pollInterval (kLogPollInterval) each slot's pod log is read with
// timestamps=true and sinceTime=<the last line's timestamp> (the first read: the last tailLines
// lines, or everything), and only lines newer than the last line returned are returned. The
// kubelet stamps lines in RFC 3339 with nanoseconds, fixed width, UTC, so stamps compare as text;
// sinceTime includes lines of that very instant, which the comparison drops. A slot whose pod is
// replaced carries on with the fresh pod's lines (they are newer); a pod that is not there (yet,
// or any more) or whose container has not started is skipped until it is. Cost: one GET per slot
// per interval per follower, each answer holding only the new lines; a follow=true stream would
// hold a connection and a thread per pod and follower instead. The stream does not end by itself
// (done() stays false): the API's follow loop ends it once the job finished, after one last
// read, so a follower may miss the lines of the last interval before that (`ddpctl logs`
// without -f shows them).
// Thread model: a LogStream (one thread at a time); read() sleeps at most until its deadline,
// then makes the due API calls, each with the client's request deadline. It must not outlive
// the KubeClient (the controller joins its log followers before it destroys the client).

#include <string>
#include <vector>

#include "controller/launch/kubernetes/kube_client.h"
#include "controller/launch/launcher.h"

namespace ddp::controller::kube {

inline constexpr Duration kLogPollInterval = std::chrono::milliseconds(500);

struct PodLogStreamOptions {
  std::string podsPath;       // "/api/v1/namespaces/NS/pods"
  std::string job;
  std::vector<int> slots;     // the pods workerPodName(job, slot), in this order
  bool prefixLines = false;   // "[wN] " before each line (every worker of the job, merged)
  int64_t tailLines = -1;     // the first read: this many lines per pod; -1: everything
  Duration pollInterval = kLogPollInterval;
};

class PodLogFollowStream final : public LogStream {
 public:
  PodLogFollowStream(KubeClient& client, PodLogStreamOptions options);
  // New lines of every slot (empty when none came); FailedPrecondition when the API server
  // refuses the log (401/403: RBAC). Other errors of one poll: nothing new from that pod.
  Result<std::string> read(Deadline deadline) override;
  bool done() const override { return false; }

 private:
  struct Source {
    int slot = 0;
    std::string lastStamp;  // of the last line passed on; "" before the first
  };
  Result<std::string> poll(Source& source);

  KubeClient& client_;
  const PodLogStreamOptions options_;
  std::vector<Source> sources_;
  TimePoint nextPoll_{};  // the first read polls at once
};

}  // namespace ddp::controller::kube
