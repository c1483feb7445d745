// Note [Mirrored events] (kube_events.h) and the status helpers of the run policy
// (ddpjob_status.h): pure functions, and the recorder against FakeKubeApiServer (FAKED: the API
// server).
#include "controller/kubernetes/kube_events.h"

#include <gtest/gtest.h>

#include "controller/kubernetes/ddpjob_status.h"
#include "controller/store/job_status_json.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

JobEvent ev(int64_t t, const std::string& reason, const std::string& type = kEventNormal) {
  JobEvent e;
  e.timeMs = t;
  e.reason = reason;
  e.type = type;
  e.message = reason + " happened";
  return e;
}

std::vector<std::string> reasons(const std::vector<JobEvent>& es) {
  std::vector<std::string> out;
  for (const auto& e : es) out.push_back(e.reason);
  return out;
}

TEST(KubernetesEventsTest, TheEventObject) {
  const json e = buildKubeEvent({"ml", "fm", "uid-7"}, ev(1767225600123, "WorkerFailed", kEventWarning), "ddp-0",
                                kubeEventName("fm", 255, 1));
  EXPECT_EQ(e["apiVersion"], "v1");
  EXPECT_EQ(e["kind"], "Event");
  EXPECT_EQ(e["metadata"]["name"], "fm.ff1");
  EXPECT_EQ(e["metadata"]["namespace"], "ml");
  EXPECT_EQ(e["involvedObject"], json({{"apiVersion", "ddp.dev/v1"}, {"kind", "DDPJob"}, {"name", "fm"},
                                       {"namespace", "ml"}, {"uid", "uid-7"}}));
  EXPECT_EQ(e["reason"], "WorkerFailed");
  EXPECT_EQ(e["message"], "WorkerFailed happened");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["firstTimestamp"], "2026-01-01T00:00:00.123Z");
  EXPECT_EQ(e["lastTimestamp"], e["firstTimestamp"]);
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["source"]["component"], "ddp-controller");
  EXPECT_EQ(e["reportingComponent"], "ddp-controller");
  EXPECT_EQ(e["reportingInstance"], "ddp-0");
  EXPECT_FALSE(e.contains("eventTime"));
  JobEvent long_ = ev(0, "X");
  long_.message = std::string(5000, 'x');
  EXPECT_EQ(buildKubeEvent({"ml", "fm", ""}, long_, "i", "n")["message"].get<std::string>().size(), kEventMessageLimit);
}

TEST(KubernetesEventsTest, FailureIshReasonsAreWarnings) {
  EXPECT_EQ(kubeEventType(ev(0, "Created")), "Normal");
  EXPECT_EQ(kubeEventType(ev(0, "Anything", kEventWarning)), "Warning");
  for (const char* r : {"LaunchFailed", "ScheduleTimeout", "DeadlineExceeded", "ScaleRefused"}) {
    EXPECT_EQ(kubeEventType(ev(0, r)), "Warning") << r;
  }
}

TEST(KubernetesEventsTest, EventNamesAreUniqueDnsSubdomains) {
  EXPECT_EQ(kubeEventName("fm", 0x1a2b, 0), "fm.1a2b0");
  EXPECT_NE(kubeEventName("fm", 0x1a2b, 1), kubeEventName("fm", 0x1a2b, 2));
}

TEST(KubernetesEventsTest, EachEventIsMirroredOnceInOrder) {
  EventMark mark;
  std::vector<JobEvent> all = {ev(10, "A"), ev(20, "B"), ev(20, "C")};
  EXPECT_EQ(reasons(eventsPast(all, &mark)), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_TRUE(eventsPast(all, &mark).empty());
  all.push_back(ev(20, "D"));  // the same millisecond as the last two
  all.push_back(ev(30, "E"));
  EXPECT_EQ(reasons(eventsPast(all, &mark)), (std::vector<std::string>{"D", "E"}));
  EXPECT_TRUE(eventsPast(all, &mark).empty());
  // Older events pruned from the store: the mark still holds.
  std::vector<JobEvent> pruned = {ev(30, "E"), ev(40, "F")};
  EXPECT_EQ(reasons(eventsPast(pruned, &mark)), (std::vector<std::string>{"F"}));
}

TEST(KubernetesEventsTest, AMarkAtATimeSkipsWhatCameBefore) {
  EventMark mark{25, 0};  // a restarted controller: from the time it started tracking
  EXPECT_EQ(reasons(eventsPast({ev(10, "A"), ev(20, "B"), ev(25, "C"), ev(30, "D")}, &mark)),
            (std::vector<std::string>{"C", "D"}));
}

class KubernetesEventRecorderTest : public testing::FakeApiTest {};

TEST_F(KubernetesEventRecorderTest, PostsTheEventToTheNamespace) {
  KubeEventRecorder recorder(*client_, "ddp-0");
  ASSERT_TRUE(recorder.record({"ml", "fm", "u"}, ev(1000, "Created")).isOk());
  ASSERT_TRUE(recorder.record({"ml", "fm", "u"}, kEventWarning, "ScheduleTimeout", "too slow").isOk());
  const auto events = api_.objects("events", "ml");
  ASSERT_EQ(events.size(), 2u);  // two names, no conflict
  const auto r = api_.requests();
  EXPECT_NE(std::find(r.begin(), r.end(), "POST /api/v1/namespaces/ml/events"), r.end());
}

TEST_F(KubernetesEventRecorderTest, AFailureIsReturnedNotThrown) {
  KubeEventRecorder recorder(*client_, "ddp-0");
  EXPECT_FALSE(recorder.record({"ml", "Bad_Name", "u"}, ev(1000, "Created")).isOk());  // 422 from the fake
  api_.stop();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(recorder.record({"ml", "fm", "u"}, ev(1000, "Created")).isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - start, kEventPostTimeout + std::chrono::seconds(1));
}

TEST(KubernetesStatusTest, AFailureTheReconcilerCarriedOut) {
  JobRecord r;
  r.name = "j";
  r.phase = JobPhase::kCancelled;
  r.completionMs = 2000;
  r.setCondition(kConditionRunning, false, "JobCancelled", "cancelled", 2000);
  r.setCondition(kConditionCancelled, true, "JobCancelled", "cancelled", 2000);
  const json s = withFailure(ddpJobStatus(r, 1), "ScheduleTimeout", "pods waited", 1000);
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["message"], "pods waited");
  bool failed = false, cancelled = false;
  for (const json& c : s["conditions"]) {
    failed = failed || (c["type"] == "Failed" && c["status"] == "True" && c["reason"] == "ScheduleTimeout");
    cancelled = cancelled || c["type"] == "Cancelled";
  }
  EXPECT_TRUE(failed) << s;
  EXPECT_FALSE(cancelled) << s;
  EXPECT_EQ(s["completionTime"], ddpJobStatus(r, 1)["completionTime"]);  // the record's, when it has one
}

TEST(KubernetesStatusTest, FinishedBeforeForTheCurrentSpecOnly) {
  auto job = [](const std::string& phase, int64_t generation) {
    return json{{"metadata", {{"generation", generation}}}, {"status", {{"phase", phase}, {"observedGeneration", 1}}}};
  };
  EXPECT_TRUE(finishedBefore(job("Succeeded", 1)));
  EXPECT_TRUE(finishedBefore(job("Failed", 1)));
  EXPECT_TRUE(finishedBefore(job("Cancelled", 2)));  // a finished job's spec edited: still finished
  EXPECT_FALSE(finishedBefore(job("Running", 1)));
  EXPECT_FALSE(finishedBefore(json::object()));
  json refused = {{"metadata", {{"generation", 1}}}, {"status", invalidJobStatus("bad", 1, 0)}};
  EXPECT_TRUE(finishedBefore(refused));
  refused["metadata"]["generation"] = 2;  // edited since the refusal
  EXPECT_FALSE(finishedBefore(refused));
}

TEST(KubernetesStatusTest, Rfc3339) {
  EXPECT_EQ(parseRfc3339Ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parseRfc3339Ms("2026-01-01T00:00:00Z"), 1767225600000);
  EXPECT_EQ(parseRfc3339Ms("2026-01-01T00:00:00.5Z"), 1767225600500);
  EXPECT_EQ(parseRfc3339Ms("2026-01-01T00:00:00.123456Z"), 1767225600123);
  EXPECT_EQ(parseRfc3339Ms(rfc3339(1767225600123)), 1767225600123);
  EXPECT_FALSE(parseRfc3339Ms("").has_value());
  EXPECT_FALSE(parseRfc3339Ms("2026-01-01").has_value());
  EXPECT_FALSE(parseRfc3339Ms("2026-01-01T00:00:00+01:00").has_value());
}

}  // namespace
}  // namespace ddp::controller::kube
