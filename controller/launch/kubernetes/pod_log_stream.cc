#include "controller/launch/kubernetes/pod_log_stream.h"

#include <thread>

#include "common/log.h"
#include "controller/launch/kubernetes/worker_objects.h"

namespace ddp::controller::kube {

PodLogFollowStream::PodLogFollowStream(KubeClient& client, PodLogStreamOptions options)
    : client_(client), options_(std::move(options)) {
  for (int slot : options_.slots) sources_.push_back(Source{slot, ""});
}

Result<std::string> PodLogFollowStream::read(Deadline deadline) {
  const TimePoint now = SystemClock::instance().now();
  if (now < nextPoll_) {
    const bool due = nextPoll_ <= deadline.at();
    std::this_thread::sleep_until(due ? nextPoll_ : deadline.at());
    if (!due) return std::string();
  }
  nextPoll_ = SystemClock::instance().now() + options_.pollInterval;
  std::string out;
  for (Source& s : sources_) {
    DDP_ASSIGN_OR_RETURN(std::string text, poll(s));
    out += text;
  }
  return out;
}

Result<std::string> PodLogFollowStream::poll(Source& source) {
  const std::string pod = workerPodName(options_.job, source.slot);
  std::string path = podLogPath(options_.podsPath, options_.job, source.slot) + "&timestamps=true";
  if (!source.lastStamp.empty()) {
    path += "&sinceTime=" + source.lastStamp;  // [0-9T:.Z-] only: nothing to escape
  } else if (options_.tailLines >= 0) {
    path += "&tailLines=" + std::to_string(options_.tailLines);
  }
  auto r = client_.request("GET", path);
  Status st = r.isOk() ? apiStatus(*r, "log of " + pod) : r.status();
  if (st.code() == StatusCode::kFailedPrecondition) return st;
  if (!st.isOk()) {
    // Not there yet or replaced (404), container still starting (400), a transient error.
    DDP_LOG(Debug) << "kubernetes: following " << pod << ": " << st.message();
    return std::string();
  }
  const std::string prefix = options_.prefixLines ? "[w" + std::to_string(source.slot) + "] " : "";
  const std::string& body = r->body;
  std::string out;
  for (size_t start = 0; start < body.size();) {
    const size_t nl = body.find('\n', start);
    const size_t end = nl == std::string::npos ? body.size() : nl;
    const std::string line = body.substr(start, end - start);
    start = end + 1;
    const size_t space = line.find(' ');
    const std::string stamp = line.substr(0, space);
    if (stamp.empty() || (!source.lastStamp.empty() && stamp <= source.lastStamp)) continue;
    source.lastStamp = stamp;
    out += prefix + (space == std::string::npos ? "" : line.substr(space + 1)) + "\n";
  }
  return out;
}

}  // namespace ddp::controller::kube
