#pragma once
// The fixture of the DDPJob reconciler's tests: the controller's real JobManager (SQLite job
// table in a temp dir) and KubernetesLauncher against FakeKubeApiServer (FAKED: the API server;
// no kubelet runs, so tests write pod status themselves), a DdpJobReconciler on JobCalls that a
// test may change (restartReconciler), and helpers to read what the API server holds.
// Thread model: one test's thread.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/jobs/job_manager.h"
#include "controller/kubernetes/ddpjob_reconciler.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube::testing {

using nlohmann::json;
inline const std::string kJobs = "ddp.dev/v1/ddpjobs";

class KubernetesReconcilerTest : public FakeApiTest {
 protected:
  // A test's changes to the launcher's options, before it is created.
  virtual void adjustLauncher(KubernetesLauncherOptions&) {}
  void SetUp() override {
    FakeApiTest::SetUp();
    auto store = SqliteJobStore::open(dir_.path() + "/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    store_ = std::move(*store);
    KubernetesLauncherOptions lo;
    lo.nameSpace = "ml";
    lo.defaultImage = "ddp-service:0.1.0";
    lo.specOf = [this](const std::string& job) -> std::optional<JobSpec> {
      auto s = jobs_->spec(job);
      return s.isOk() ? std::optional<JobSpec>(*s) : std::nullopt;
    };
    lo.ownerOf = [this](const std::string& job) { return reconciler_->ownerOf(job); };
    lo.onExit = [this](const WorkerExit& e) { jobs_->onWorkerExit(e); };
    adjustLauncher(lo);
    auto launcher = KubernetesLauncher::create(*client_, lo);
    ASSERT_TRUE(launcher.isOk());
    launcher_ = std::move(*launcher);
    JobManagerOptions jo;
    jo.controllerUrl = "http://ddp.ml.svc:8080";
    jo.stopGrace = std::chrono::seconds(1);
    jobs_ = std::make_unique<JobManager>(jo, *store_, *launcher_);
    ASSERT_TRUE(jobs_->start().isOk());
    calls_.submit = [this](const JobSpec& s) { return jobs_->submit(s); };
    calls_.get = [this](const std::string& n) { return jobs_->get(n); };
    calls_.cancel = [this](const std::string& n) { return jobs_->cancel(n); };
    calls_.remove = [this](const std::string& n, Deadline d) { return jobs_->remove(n, d); };
    calls_.scale = [this](const std::string& n, int w) { return jobs_->scale(n, w, "spec.workers.count"); };
    calls_.events = [this](const std::string& n) { return jobs_->events(n); };
    calls_.suspend = [this](const std::string& n) { return jobs_->suspend(n); };
    calls_.resume = [this](const std::string& n) { return jobs_->resume(n); };
    restartReconciler();
  }
  // A fresh reconciler with calls_ (and none of the last one's state).
  void restartReconciler() {
    if (reconciler_) reconciler_->stop();
    DdpJobReconcilerOptions ro;
    ro.watchNamespaces = {"ml"};
    ro.tick = std::chrono::milliseconds(50);
    ro.podListInterval = std::chrono::milliseconds(100);
    ro.eventPollInterval = std::chrono::milliseconds(100);
    ro.instance = "ddp-0";
    auto next = std::make_unique<DdpJobReconciler>(*client_, ro, calls_);
    next->start();
    reconciler_ = std::move(next);
  }
  void TearDown() override {
    if (reconciler_) reconciler_->stop();
    if (jobs_) jobs_->stop();
    launcher_.reset();
  }

  static json ddpJob(const std::string& name, const std::string& extra = "") {
    return json::parse(R"({"apiVersion":"ddp.dev/v1","kind":"DDPJob","metadata":{"name":")" + name +
                       R"("},"spec":{"workers":{"count":2},"model":{"type":"mlp"},"data":{"dataset":"synthetic"},"epochs":1)" +
                       extra + "}}");
  }

  static bool waitUntil(const std::function<bool()>& cond, int tenths = 50) {
    return ::ddp::controller::kube::testing::waitUntil(cond, std::chrono::milliseconds(100) * tenths);
  }

  // The Kubernetes Events recorded with this reason.
  std::vector<json> kubeEvents(const std::string& reason) {
    std::vector<json> out;
    for (const json& e : api_.objects("events", "ml")) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  }

  // Writes a pod's status as the kubelet or scheduler would (MODIFIED for the watches).
  void setPodStatus(const std::string& pod, const json& status) {
    auto o = api_.object("pods", "ml", pod);
    ASSERT_TRUE(o.has_value()) << pod;
    (*o)["status"] = status;
    api_.put("pods", "ml", *o);
  }
  static json unschedulable() {
    return {{"phase", "Pending"},
            {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                         {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}})}};
  }

  json statusOf(const std::string& name) {
    auto o = api_.object(kJobs, "ml", name);
    return o ? o->value("status", json::object()) : json::object();
  }

  ddp::test::TempDir dir_;
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<DdpJobReconciler> reconciler_;
  JobCalls calls_;
};

}  // namespace ddp::controller::kube::testing
