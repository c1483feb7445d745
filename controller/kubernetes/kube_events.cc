#include "controller/kubernetes/kube_events.h"

#include <cstdio>

#include "common/log.h"
#include "controller/store/job_status_json.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

bool endsWith(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

std::string kubeEventType(const JobEvent& e) {
  if (e.type == kEventWarning) return kEventWarning;
  for (const char* s : {"Failed", "Timeout", "Exceeded", "Refused"}) {
    if (endsWith(e.reason, s)) return kEventWarning;
  }
  return kEventNormal;
}

json buildKubeEvent(const EventSubject& subject, const JobEvent& e, const std::string& instance,
                    const std::string& name) {
  std::string message = e.message;
  if (message.size() > kEventMessageLimit) message = message.substr(0, kEventMessageLimit - 3) + "...";
  const std::string at = rfc3339(e.timeMs);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", subject.ns}}},
          {"involvedObject",
           {{"apiVersion", "ddp.dev/v1"}, {"kind", "DDPJob"}, {"name", subject.name}, {"namespace", subject.ns},
            {"uid", subject.uid}}},
          {"reason", e.reason},
          {"message", message},
          {"type", kubeEventType(e)},
          {"firstTimestamp", at},
          {"lastTimestamp", at},
          {"count", 1},
          {"source", {{"component", kEventComponent}}},
          {"reportingComponent", kEventComponent},
          {"reportingInstance", instance}};
}

std::string kubeEventName(const std::string& subject, int64_t unixNanos, uint64_t seq) {
  char buf[48];
  std::snprintf(buf, sizeof buf, ".%llx%llx", static_cast<unsigned long long>(unixNanos),
                static_cast<unsigned long long>(seq));
  return subject + buf;
}

std::vector<JobEvent> eventsPast(const std::vector<JobEvent>& all, EventMark* mark) {
  std::vector<JobEvent> out;
  size_t atMark = 0;  // events seen at exactly mark->timeMs
  for (const JobEvent& e : all) {
    if (e.timeMs < mark->timeMs) continue;
    if (e.timeMs == mark->timeMs && atMark++ < mark->atTime) continue;
    out.push_back(e);
  }
  for (const JobEvent& e : out) {
    if (e.timeMs > mark->timeMs) {
      mark->timeMs = e.timeMs;
      mark->atTime = 0;
    }
    if (e.timeMs == mark->timeMs) ++mark->atTime;
  }
  return out;
}

KubeEventRecorder::KubeEventRecorder(KubeClient& client, std::string instance)
    : client_(client), instance_(std::move(instance)) {}

Status KubeEventRecorder::record(const EventSubject& subject, const JobEvent& e) {
  const int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string name = kubeEventName(subject.name, nanos, seq_.fetch_add(1));
  const std::string path = "/api/v1/namespaces/" + subject.ns + "/events";
  Result<KubeResponse> r = client_.request("POST", path, buildKubeEvent(subject, e, instance_, name).dump(),
                                           "application/json", Deadline::after(kEventPostTimeout));
  Status st = r.isOk() ? apiStatus(*r, "create events/" + name) : r.status();
  if (!st.isOk()) {
    DDP_LOG(Warning) << "kubernetes: event " << e.reason << " on DDPJob " << subject.ns << "/" << subject.name
                     << " not recorded: " << st.message();
  }
  return st;
}

Status KubeEventRecorder::record(const EventSubject& subject, const std::string& type, const std::string& reason,
                                 const std::string& message) {
  JobEvent e;
  e.timeMs = unixMillisNow();
  e.type = type;
  e.reason = reason;
  e.message = message;
  return record(subject, e);
}

}  // namespace ddp::controller::kube
