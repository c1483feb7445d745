// Several ranks per pod end to end (Note [Several ranks per pod] in worker/control/
// pod_supervisor.h), without a cluster: a DDPJob of 4 ranks, 2 to a pod, trains on the test
// kubelet (tests/integration/test_kubelet.h: each pod is one local process, ddp-worker as the
// pod's supervisor of its 2 ranks). Oracle: the same job as 4 pods of one rank: the final
// checkpoint holds the same parameters, byte for byte. Then one rank is SIGKILLed by PID: its
// sibling is stopped, the pod ends Failed and is replaced whole, and the job still succeeds.
// FAKED: the API server and the kubelet. Real: the Controller with --launcher kubernetes, the
// supervisors, the ranks, Gloo over loopback.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "common/checkpoint/checkpoint_store.h"
#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/integration/test_kubelet.h"
#include "tests/support/temp_dir.h"

namespace ddp::controller {
namespace {

using nlohmann::json;
using kube::testing::FakeKubeApiServer;
using testing::TestKubelet;

struct PodRun {
  json status = json::object();
  int podsStarted = 0;
};

// The highest step of any job, as the controller's REST API has it (updated every heartbeat: the
// DDPJob's status carries progress at most every kStatusInterval, 10 s, and these jobs may end
// sooner), or 0.
int64_t apiStep(const Controller& controller) {
  httplib::Client c("127.0.0.1", controller.port());
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(2, 0);
  auto res = c.Get("/v1/jobs", {{"Authorization", "Bearer " + controller.token()}});
  if (!res || res->status != 200) return 0;
  const json list = json::parse(res->body, nullptr, false);
  int64_t step = 0;
  if (!list.is_object() || !list.contains("jobs")) return 0;
  for (const json& job : list["jobs"]) {
    const json progress = job.value("status", json::object()).value("progress", json::object());
    if (progress.is_object()) step = std::max(step, progress.value("step", int64_t{0}));
  }
  return step;
}

// Runs DDPJob "pods" with `workers` to its end (at most 120 s); `during` runs once the job
// reported step >= `actAtStep` (not at all when null).
PodRun runPods(const std::string& workers, const std::string& ckptDir, int steps, int actAtStep,
               const std::function<void(TestKubelet&)>& during) {
  PodRun out;
  FakeKubeApiServer api;
  EXPECT_TRUE(api.start().isOk());
  ddp::test::TempDir dir;
  auto config = parseControllerConfig({"--state-dir", dir.path(), "--listen", "127.0.0.1:0", "--launcher",
                                       "kubernetes", "--worker-image", "ddp-service:test", "--watch-namespace",
                                       "ml", "--kube-server", api.url()},
                                      [](const std::string&) { return std::optional<std::string>(); });
  EXPECT_TRUE(config.isOk()) << config.status();
  auto controller = Controller::start(*config);
  EXPECT_TRUE(controller.isOk()) << controller.status();
  if (!controller.isOk()) return out;
  TestKubelet kubelet(api, "ml", dir.path());
  api.put("ddp.dev/v1/ddpjobs", "ml", json::parse(R"({
    "metadata": {"name": "pods"},
    "spec": {"workers": )" + workers + R"(, "model": {"type": "mlp", "hidden": [32]},
             "data": {"dataset": "synthetic", "batchSize": 16,
                      "synthetic": {"samples": 2048, "features": 16, "classes": 4}},
             "optimizer": {"type": "sgd", "lr": 0.05}, "steps": )" + std::to_string(steps) + R"(,
             "eval": {"everyEpoch": false}, "seed": 7, "maxRestarts": 3, "commThreadPriority": "normal",
             "checkpoint": {"dir": ")" + ckptDir + R"(", "everySteps": 100},
             "timeouts": {"heartbeatSeconds": 0.5, "heartbeatMisses": 4, "hangSeconds": 5,
                          "collectiveSeconds": 6, "lastCallSeconds": 1},
             "kubernetes": {"capSysNice": false}}})"));
  bool acted = !during;
  for (int i = 0; i < 2400; ++i) {  // at most 120 s
    auto job = api.object("ddp.dev/v1/ddpjobs", "ml", "pods");
    if (job && job->contains("status") && (*job)["status"].is_object()) out.status = (*job)["status"];
    const std::string phase = out.status.value("phase", "");
    if (phase == "Succeeded" || phase == "Failed") break;
    if (!acted && apiStep(**controller) >= actAtStep) {
      during(kubelet);
      acted = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(acted) << "the job ended before step " << actAtStep;
  out.podsStarted = kubelet.started();
  (*controller)->stop();
  return out;
}

// The final checkpoint's model section of every rank (equal across ranks), or "" with `why`.
std::string finalModel(const std::string& dir, int64_t steps, std::string* why) {
  runtime::CheckpointStore store(dir);
  auto latest = store.findLatestComplete();
  if (!latest.isOk() || !latest->manifest) return *why = "no complete checkpoint in " + dir, "";
  if (latest->manifest->step != steps) return *why = "last checkpoint at " + std::to_string(latest->manifest->step), "";
  std::string model0;
  for (int r = 0; r < latest->manifest->worldSize; ++r) {
    auto shard = store.readShard(*latest->manifest, r);
    auto model = shard.isOk() ? shard->section("model") : Result<std::string_view>(shard.status());
    if (!model.isOk()) return *why = model.status().toString(), "";
    if (r == 0) model0 = std::string(*model);
    if (std::string(*model) != model0) return *why = "rank " + std::to_string(r) + " differs from rank 0", "";
  }
  return model0;
}

// The pids of a process's children (/proc/PID/task/PID/children).
std::vector<pid_t> childrenOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

TEST(KubernetesE2ePerPodTest, TwoPodsOfTwoRanksTrainAsFourPodsOfOne) {
  ddp::test::TempDir pods, single;
  constexpr int kSteps = 200;
  const PodRun two = runPods(R"({"count": 4, "perPod": 2})", pods.path() + "/ckpt", kSteps, 0, nullptr);
  ASSERT_EQ(two.status.value("phase", ""), "Succeeded") << two.status.dump(2);
  EXPECT_EQ(two.podsStarted, 2);
  EXPECT_EQ(two.status["worldSize"], 4);
  const PodRun four = runPods(R"({"count": 4})", single.path() + "/ckpt", kSteps, 0, nullptr);
  ASSERT_EQ(four.status.value("phase", ""), "Succeeded") << four.status.dump(2);
  EXPECT_EQ(four.podsStarted, 4);
  std::string why;
  const std::string got = finalModel(pods.path() + "/ckpt", kSteps, &why);
  ASSERT_FALSE(got.empty()) << why;
  const std::string want = finalModel(single.path() + "/ckpt", kSteps, &why);
  ASSERT_FALSE(want.empty()) << why;
  EXPECT_TRUE(got == want) << "2 pods of 2 ranks ended with other parameters than 4 pods of 1";
}

TEST(KubernetesE2ePerPodTest, ARankKilledByPidTakesItsPodAndThePodIsReplaced) {
  ddp::test::TempDir ckpt;
  constexpr int kSteps = 3000;
  std::vector<pid_t> ranks;
  const PodRun run = runPods(R"({"count": 4, "perPod": 2})", ckpt.path() + "/ckpt", kSteps, 50,
                             [&](TestKubelet& kubelet) {
                               const pid_t supervisor = kubelet.podPid("pods-worker-1");
                               ASSERT_NE(supervisor, 0);
                               ranks = childrenOf(supervisor);
                               ASSERT_EQ(ranks.size(), 2u);
                               ASSERT_EQ(::kill(ranks[0], SIGKILL), 0);
                             });
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_NE(::kill(ranks[1], 0), 0) << "the killed rank's sibling still runs";
  EXPECT_EQ(run.status.value("phase", ""), "Succeeded") << run.status.dump(2);
  EXPECT_EQ(run.podsStarted, 3);  // two pods, then pod 1 again
  EXPECT_GE(run.status.value("restarts", 0), 1) << run.status.dump(2);
  std::string why;
  EXPECT_FALSE(finalModel(ckpt.path() + "/ckpt", kSteps, &why).empty()) << why;
}

}  // namespace
}  // namespace ddp::controller
