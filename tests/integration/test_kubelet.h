#pragma once
// TestKubelet: the kubelet of the end-to-end Kubernetes tests. FAKED: it runs each pod the
// controller creates in FakeKubeApiServer as a local ddp-worker process (its own process group,
// so a deleted pod's processes all go) with the environment its pod spec carries: values, the
// token from the job's Secret, the pod IP (127.0.0.1) from the downward API; and writes the
// pod's status as a kubelet would: Running, then Succeeded or Failed with the exit code.
// Processes are killed by pid and reaped.
// Thread model: one thread of its own; started() and podPid() from any thread.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/unit/controller/kubernetes/fake_kube_api_server.h"

namespace ddp::controller::testing {

using kube::testing::FakeKubeApiServer;

class TestKubelet {
 public:
  TestKubelet(FakeKubeApiServer& api, std::string ns, std::string logDir)
      : api_(api), ns_(std::move(ns)), logDir_(std::move(logDir)), thread_([this] { run(); }) {}
  ~TestKubelet() {
    stop_ = true;
    thread_.join();
    for (auto& [uid, p] : procs_) {
      ::kill(-p.pid, SIGKILL);
      ::waitpid(p.pid, nullptr, 0);
    }
  }
  int started() const { return started_.load(); }
  // The pid of the pod's main process (the supervisor of a pod of several ranks); 0: not running.
  pid_t podPid(const std::string& podName) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [uid, p] : procs_) {
      if (p.name == podName) return p.pid;
    }
    return 0;
  }

 private:
  struct Proc {
    pid_t pid;
    std::string name;
  };

  std::vector<std::string> envOf(const nlohmann::json& pod) {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    for (const nlohmann::json& e : pod["spec"]["containers"][0]["env"]) {
      std::string value = e.value("value", "");
      if (e.contains("valueFrom")) {
        const nlohmann::json& from = e["valueFrom"];
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

  void start(nlohmann::json pod) {
    const std::string name = pod["metadata"]["name"];
    std::vector<std::string> env = envOf(pod);
    const std::string log = logDir_ + "/" + name + ".log";
    const std::string bin = std::string(DDP_TEST_BIN_DIR) + "/ddp-worker";
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);  // the pod's processes: killed together when it is deleted
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      procs_[pod["metadata"]["uid"]] = {pid, name};
    }
    ++started_;
    pod["status"] = {{"phase", "Running"}, {"podIP", "127.0.0.1"}};
    api_.put("pods", ns_, pod);
  }

  void run() {
    while (!stop_) {
      std::map<std::string, nlohmann::json> pods;
      for (const nlohmann::json& p : api_.objects("pods", ns_)) pods[p["metadata"]["uid"]] = p;
      for (auto& [uid, pod] : pods) {
        if (!procs_.count(uid) && !done_.count(uid)) start(pod);
      }
      for (auto it = procs_.begin(); it != procs_.end();) {
        int status = 0;
        const bool deleted = !pods.count(it->first);
        if (deleted) ::kill(-it->second.pid, SIGKILL);  // the pod was deleted: the kubelet kills it
        if (::waitpid(it->second.pid, &status, deleted ? 0 : WNOHANG) == it->second.pid) {
          if (!deleted) {
            nlohmann::json pod = pods[it->first];
            const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pod["status"] = {{"phase", code == 0 ? "Succeeded" : "Failed"},
                             {"containerStatuses", nlohmann::json::array({{{"name", "worker"},
                                                                 {"state", {{"terminated", {{"exitCode", code}}}}}}})}};
            api_.put("pods", ns_, pod);
          }
          done_.insert(it->first);
          std::lock_guard<std::mutex> lock(mu_);
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
  mutable std::mutex mu_;               // guards procs_ against podPid's reads
  std::map<std::string, Proc> procs_;  // written by the kubelet thread only (and the destructor after it)
  std::set<std::string> done_;
  std::atomic<int> started_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ddp::controller::testing
