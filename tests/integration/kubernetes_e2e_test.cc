// End to end on Kubernetes, without a cluster: a DDPJob resource goes to status Succeeded with
// real workers training. FAKED: the API server (FakeKubeApiServer, real REST paths and watch
// streams) and the kubelet (TestKubelet below: it runs each pod the controller creates as a local
// ddp-worker process with the environment its pod spec carries: values, the token from the
// job's Secret, the pod IP (127.0.0.1) from the downward API; and writes the pod's status as a
// kubelet would: Running, then Succeeded or Failed with the exit code). Real: ddp-controller's
// Controller with --launcher kubernetes, the workers, Gloo over loopback. Processes are killed
// by pid and reaped.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "controller/jobs/job_manager.h"
#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_kube_api_server.h"

namespace ddp::controller {
namespace {

using nlohmann::json;
using kube::testing::FakeKubeApiServer;

class TestKubelet {
 public:
  TestKubelet(FakeKubeApiServer& api, std::string ns, std::string logDir)
      : api_(api), ns_(std::move(ns)), logDir_(std::move(logDir)), thread_([this] { run(); }) {}
  ~TestKubelet() {
    stop_ = true;
    thread_.join();
    for (auto& [uid, p] : procs_) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, nullptr, 0);
    }
  }
  int started() const { return started_.load(); }

 private:
  struct Proc {
    pid_t pid;
    std::string name;
  };

  std::vector<std::string> envOf(const json& pod) {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    for (const json& e : pod["spec"]["containers"][0]["env"]) {
      std::string value = e.value("value", "");
      if (e.contains("valueFrom")) {
        const json& from = e["valueFrom"];
        if (from.contains("fieldRef")) value = "127.0.0.1";  // status.podIP
        if (from.contains("secretKeyRef")) {
          auto secret = api_.object("secrets", ns_, from["secretKeyRef"]["name"]);
          if (secret) value = (*secret)["stringData"][from["secretKeyRef"]["key"].get<std::string>()];
        }
      }
      env.push_back(e["name"].get<std::string>() + "=" + value);
    }
    return env;
  }

  void start(json pod) {
    const std::string name = pod["metadata"]["name"];
    std::vector<std::string> env = envOf(pod);
    const std::string log = logDir_ + "/" + name + ".log";
    const std::string bin = std::string(DDP_TEST_BIN_DIR) + "/ddp-worker";
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> envp;
      for (auto& e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      char* argv[] = {const_cast<char*>(bin.c_str()), nullptr};
      ::execve(bin.c_str(), argv, envp.data());
      ::_exit(127);
    }
    procs_[pod["metadata"]["uid"]] = {pid, name};
    ++started_;
    pod["status"] = {{"phase", "Running"}, {"podIP", "127.0.0.1"}};
    api_.put("pods", ns_, pod);
  }

  void run() {
    while (!stop_) {
      std::map<std::string, json> pods;
      for (const json& p : api_.objects("pods", ns_)) pods[p["metadata"]["uid"]] = p;
      for (auto& [uid, pod] : pods) {
        if (!procs_.count(uid) && !done_.count(uid)) start(pod);
      }
      for (auto it = procs_.begin(); it != procs_.end();) {
        int status = 0;
        const bool deleted = !pods.count(it->first);
        if (deleted) ::kill(it->second.pid, SIGKILL);  // the pod was deleted: the kubelet kills it
        if (::waitpid(it->second.pid, &status, deleted ? 0 : WNOHANG) == it->second.pid) {
          if (!deleted) {
            json pod = pods[it->first];
            const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pod["status"] = {{"phase", code == 0 ? "Succeeded" : "Failed"},
                             {"containerStatuses", json::array({{{"name", "worker"},
                                                                 {"state", {{"terminated", {{"exitCode", code}}}}}}})}};
            api_.put("pods", ns_, pod);
          }
          done_.insert(it->first);
          it = procs_.erase(it);
        } else {
          ++it;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  FakeKubeApiServer& api_;
  const std::string ns_, logDir_;
  std::map<std::string, Proc> procs_;  // kubelet thread only (and the destructor after it)
  std::set<std::string> done_;
  std::atomic<int> started_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Runs one DDPJob (2 synthetic-data workers, 30 steps) with `runPolicy` to its end; returns its
// last status; `started`: the pods the kubelet ran; `podsLeft`: pods left a moment after the end.
json runJob(const std::string& runPolicy, int* started, size_t* podsLeft) {
  json status = json::object();
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
  if (!controller.isOk()) return status;
  TestKubelet kubelet(api, "ml", dir.path());
  api.put("ddp.dev/v1/ddpjobs", "ml", json::parse(std::string(R"({
    "metadata": {"name": "synthetic-k8s"},
    "spec": {"workers": {"count": 2}, "model": {"type": "mlp", "hidden": [32]},
             "data": {"dataset": "synthetic", "batchSize": 32,
                      "synthetic": {"samples": 512, "features": 16, "classes": 4}},
             "optimizer": {"type": "sgd", "lr": 0.1}, "steps": 30, "eval": {"everyEpoch": false},
             "kubernetes": {"capSysNice": false, "runPolicy": )" + runPolicy + "}}}")));
  for (int i = 0; i < 1200; ++i) {  // at most 60 s
    auto job = api.object("ddp.dev/v1/ddpjobs", "ml", "synthetic-k8s");
    if (job && job->contains("status")) status = (*job)["status"];
    const std::string phase = status.value("phase", "");
    if (phase == "Succeeded" || phase == "Failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the reconciler's next tick
  *started = kubelet.started();
  *podsLeft = api.objects("pods", "ml").size();
  (*controller)->stop();
  return status;
}

TEST(KubernetesE2eTest, ADdpJobResourceTrainsToSucceededWithRealWorkers) {
  int started = 0;
  size_t podsLeft = 0;
  const json status = runJob(R"({"cleanPodPolicy": "Running"})", &started, &podsLeft);
  EXPECT_EQ(status.value("phase", ""), "Succeeded") << status.dump(2);
  EXPECT_EQ(started, 2);
  EXPECT_EQ(status["progress"]["step"], 30) << status.dump(2);
  EXPECT_EQ(status["worldSize"], 2);
  EXPECT_TRUE(status.contains("completionTime"));
  EXPECT_EQ(podsLeft, 2u);  // cleanPodPolicy Running: the ended pods stay (for their logs)
}

TEST(KubernetesE2eTest, CleanPodPolicyAllDeletesTheFinishedPods) {
  int started = 0;
  size_t podsLeft = 0;
  const json status = runJob(R"({"cleanPodPolicy": "All"})", &started, &podsLeft);
  EXPECT_EQ(status.value("phase", ""), "Succeeded") << status.dump(2);
  EXPECT_EQ(podsLeft, 0u);
}

}  // namespace
}  // namespace ddp::controller
