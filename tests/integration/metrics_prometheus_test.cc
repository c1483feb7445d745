// /metrics after a real job, read by the real tools: an in-process controller (the service
// code: HTTP API, SQLite job table, local launcher) runs a short synthetic job on two real
// ddp-worker processes over loopback; then `promtool check metrics` lints a scrape, the scrape
// holds every family of docs/METRICS.md, and a real Prometheus server (Debian's `prometheus`),
// started once per test process on a free loopback port with a scrape config for the controller,
// answers PromQL through its HTTP API; the Grafana dashboard's every query runs against it.
// Cleanup: the fault harness stops the controller and kills its workers by pid; Prometheus is
// stopped by the pid this test started.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/fault/fault_harness.h"
#include "tests/support/prometheus_server.h"
#include "tests/support/prometheus_text.h"

namespace ddp {
namespace {

using nlohmann::json;

constexpr const char* kJob = "metrics-job";
constexpr int64_t kSteps = 200;

// Runs `cmd` through the shell; its exit status and output (stdout and stderr).
int runShell(const std::string& cmd, std::string* out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class MetricsPrometheusTest : public ::testing::Test {
 protected:
  // One job, one scrape and one Prometheus for the whole suite (CI time).
  static void SetUpTestSuite() {
    harness_ = new test::FaultHarness();
    if (!harness_->ok()) {
      setupError_ = harness_->startError();
      return;
    }
    if (Status st = harness_->submit(test::faultJobYaml(kJob, harness_->dir() + "/ckpt", kSteps, 3)); !st.isOk()) {
      setupError_ = st.toString();
      return;
    }
    if (!harness_->waitPhase(kJob, "Succeeded", 120)) {
      setupError_ = "the job did not succeed:\n" + harness_->describeEvents(kJob);
      return;
    }
    scrape_ = get("/metrics");
  }
  // Started on first use (ctest runs each test in its own process: the tests that need no
  // Prometheus do not wait for one).
  static test::PrometheusServer& prometheus() {
    if (prometheus_ == nullptr) {
      prometheus_ = new test::PrometheusServer();
      test::PrometheusTarget target;
      target.address = "127.0.0.1:" + std::to_string(harness_->controller().port());
      target.tokenFile = harness_->controller().tokenFile();
      prometheusError_ = prometheus_->start(harness_->dir(), target);
    }
    return *prometheus_;
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    prometheus_ = nullptr;
    delete harness_;
    harness_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(setupError_.empty()) << setupError_; }

  static std::string get(const std::string& path) {
    httplib::Client c("127.0.0.1", harness_->controller().port());
    c.set_read_timeout(10, 0);
    auto r = c.Get(path.c_str(), {{"Authorization", "Bearer " + harness_->controller().token()}});
    return r && r->status == 200 ? r->body : "";
  }

  static test::FaultHarness* harness_;
  static test::PrometheusServer* prometheus_;
  static std::string scrape_;
  static std::string setupError_;
  static std::string prometheusError_;
};

test::FaultHarness* MetricsPrometheusTest::harness_ = nullptr;
test::PrometheusServer* MetricsPrometheusTest::prometheus_ = nullptr;
std::string MetricsPrometheusTest::scrape_;
std::string MetricsPrometheusTest::setupError_;
std::string MetricsPrometheusTest::prometheusError_;

TEST_F(MetricsPrometheusTest, PromtoolFindsTheScrapeClean) {
  ASSERT_FALSE(scrape_.empty());
  const std::string file = harness_->dir() + "/scrape.txt";
  std::ofstream(file) << scrape_;
  std::string out;
  const int status = runShell("promtool check metrics < " + file, &out);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "") << "promtool's findings";
}

TEST_F(MetricsPrometheusTest, EveryFamilyIsPresentAndTheStepsAreTheJobsSteps) {
  const auto t = test::PromText::parse(scrape_);
  for (const auto& f : test::controllerFamilies()) {
    ASSERT_TRUE(t.types.count(f.name)) << f.name << " is missing from the scrape";
    EXPECT_EQ(t.types.at(f.name), f.type) << f.name;
    EXPECT_TRUE(t.value(test::sampleName(f))) << f.name << " has no sample";
  }
  const auto rec = harness_->record(kJob);
  ASSERT_EQ(rec.progress.step, kSteps);
  EXPECT_EQ(t.value("ddp_job_steps_total", {{"job", kJob}}), static_cast<double>(rec.progress.step));
  EXPECT_EQ(t.value("ddp_job_step_seconds_count", {{"job", kJob}}), static_cast<double>(kSteps));
  EXPECT_EQ(t.value("ddp_jobs_succeeded_total"), 1);
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Succeeded"}}), 1);
  EXPECT_EQ(t.value("ddp_job_progress_ratio", {{"job", kJob}}), 1);
  EXPECT_EQ(t.value("ddp_job_world_size", {{"job", kJob}}), 2);
  // Both ranks' samples: 16 a step each.
  EXPECT_EQ(t.value("ddp_job_samples_total", {{"job", kJob}}), static_cast<double>(kSteps * 16 * 2));
  // The MLP 32 -> 32 -> 4 has 32*32+32 + 32*4+4 = 1188 float parameters: every rank hands
  // 4752 gradient bytes a step to the reduction (no compression: ratio 1).
  EXPECT_EQ(t.value("ddp_job_comm_bytes_total", {{"job", kJob}}), static_cast<double>(kSteps * 4752 * 2));
  EXPECT_EQ(t.value("ddp_job_compression_ratio", {{"job", kJob}}), 1);
  // Checkpoints every 20 steps: one commit event each; the catalog keeps the retained ones only.
  const auto cps = harness_->jobs().checkpoints(kJob);
  ASSERT_TRUE(cps.isOk());
  EXPECT_GE(cps->size(), 1u);
  // The controller's ticker writes events: the last commits' may reach the event list a moment
  // after the counter (bounded wait).
  double commits = 0;
  const auto countCommits = [&] {
    commits = 0;
    for (const auto& e : harness_->events(kJob)) commits += e.reason == "CheckpointCommitted" ? 1 : 0;
    return commits == t.value("ddp_checkpoints_committed_total", {{"job", kJob}});
  };
  harness_->waitFor(5, countCommits);
  EXPECT_GE(commits, static_cast<double>(cps->size()));
  EXPECT_EQ(t.value("ddp_checkpoints_committed_total", {{"job", kJob}}), commits);
  EXPECT_EQ(t.value("ddp_checkpoint_failures_total", {{"job", kJob}}), 0);
  // Per phase: the commit once per checkpoint, snapshot and write once per rank's shard.
  EXPECT_EQ(t.value("ddp_checkpoint_seconds_count", {{"job", kJob}, {"phase", "commit"}}), commits);
  EXPECT_EQ(t.value("ddp_checkpoint_seconds_count", {{"job", kJob}, {"phase", "snapshot"}}), 2 * commits);
  EXPECT_EQ(t.value("ddp_checkpoint_seconds_count", {{"job", kJob}, {"phase", "write"}}), 2 * commits);
  EXPECT_GT(*t.value("ddp_checkpoint_bytes_total", {{"job", kJob}}), 0);
  EXPECT_EQ(t.value("ddp_rendezvous_seconds_count"), 1);
  EXPECT_GE(*t.value("ddp_http_requests_total",
                     {{"route", "POST /v1/jobs/{name}/generations/{g}/heartbeat"}, {"code", "200"}}),
            2);
}

TEST_F(MetricsPrometheusTest, PrometheusScrapesTheControllerAndReturnsTheStepCount) {
  test::PrometheusServer& prom = prometheus();
  ASSERT_TRUE(prometheusError_.empty()) << prometheusError_;
  const json answer =
      prom.queryUntilPresent("ddp_job_steps_total{job=\"" + std::string(kJob) + "\"}", 30);
  ASSERT_EQ(answer.value("status", ""), "success") << answer.dump() << "\n" << prom.logText();
  ASSERT_EQ(answer["data"]["result"].size(), 1u) << answer.dump();
  const json& sample = answer["data"]["result"][0];
  EXPECT_EQ(sample["metric"]["job"], kJob) << "honor_labels keeps the controller's job label";
  EXPECT_EQ(std::stod(sample["value"][1].get<std::string>()), static_cast<double>(kSteps));
  const json up = prom.query("up{job=\"ddp-controller\"}");
  ASSERT_EQ(up["data"]["result"].size(), 1u) << up.dump();
  EXPECT_EQ(up["data"]["result"][0]["value"][1], "1") << "the authenticated scrape succeeds";
}

// Every `expr` of the dashboard's panels (rows' nested panels too).
void collectExprs(const json& panels, std::vector<std::string>* out, std::vector<std::string>* rows) {
  for (const auto& p : panels) {
    if (p.value("type", "") == "row") rows->push_back(p.value("title", ""));
    if (p.contains("targets")) {
      for (const auto& t : p["targets"]) out->push_back(t.value("expr", ""));
    }
    if (p.contains("panels")) collectExprs(p["panels"], out, rows);
  }
}

std::string substituteVariables(std::string expr) {
  const std::pair<std::string, std::string> vars[] = {
      {"$__rate_interval", "1m"}, {"$__interval", "15s"}, {"$__range", "5m"}, {"$job", kJob}};
  for (const auto& [name, value] : vars) {
    for (size_t at = expr.find(name); at != std::string::npos; at = expr.find(name, at + value.size())) {
      expr.replace(at, name.size(), value);
    }
  }
  return expr;
}

TEST_F(MetricsPrometheusTest, EveryDashboardQueryRunsAndUsesOnlyExportedMetrics) {
  std::ifstream in(std::string(DDP_SOURCE_DIR) + "/charts/ddp/dashboards/ddp-training.json");
  const json dash = json::parse(in, nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << "the dashboard is not valid JSON";
  std::vector<std::string> exprs, rows;
  collectExprs(dash["panels"], &exprs, &rows);
  for (const char* row : {"Jobs overview", "Throughput", "Loss and accuracy", "Language models", "Communication",
                          "Reliability", "Checkpoints", "Controller"}) {
    EXPECT_NE(std::find(rows.begin(), rows.end(), row), rows.end()) << "no row " << row;
  }
  // The `job` template variable, fed by label_values(METRIC, job).
  std::string jobQuery;
  for (const auto& v : dash["templating"]["list"]) {
    if (v.value("name", "") == "job") jobQuery = v.value("definition", "");
  }
  const std::regex labelValues(R"(label_values\((ddp_[a-z0-9_]+), job\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(jobQuery, m, labelValues)) << "job variable: " << jobQuery;
  exprs.push_back("group by (job) (" + m[1].str() + ")");
  // The queries run once Prometheus holds the job's series (the variable lists the job).
  test::PrometheusServer& prom = prometheus();
  ASSERT_TRUE(prometheusError_.empty()) << prometheusError_;
  const json jobs = prom.queryUntilPresent(exprs.back(), 30);
  ASSERT_FALSE(jobs["data"]["result"].empty()) << jobs.dump();

  const auto exported = test::PromText::parse(scrape_).types;
  const std::regex name(R"(\bddp_[a-z0-9_]+)");
  ASSERT_GE(exprs.size(), 30u);
  std::set<std::string> used;
  for (const auto& raw : exprs) {
    ASSERT_FALSE(raw.empty()) << "a panel target without an expression";
    for (auto it = std::sregex_iterator(raw.begin(), raw.end(), name); it != std::sregex_iterator(); ++it) {
      std::string metric = it->str();
      for (const char* suffix : {"_bucket", "_count", "_sum"}) {
        const std::string sfx = suffix;
        if (!exported.count(metric) && metric.size() > sfx.size() &&
            metric.compare(metric.size() - sfx.size(), sfx.size(), sfx) == 0 &&
            exported.count(metric.substr(0, metric.size() - sfx.size())) &&
            exported.at(metric.substr(0, metric.size() - sfx.size())) == "histogram") {
          metric = metric.substr(0, metric.size() - sfx.size());
        }
      }
      EXPECT_TRUE(exported.count(metric)) << it->str() << " (in " << raw << ") is not exported by the controller";
      used.insert(metric);
    }
    const std::string expr = substituteVariables(raw);
    EXPECT_EQ(expr.find('$'), std::string::npos) << "an unsubstituted variable in " << expr;
    const json answer = prom.query(expr);
    EXPECT_EQ(answer.value("status", ""), "success") << expr << "\n" << answer.dump();
  }
  // Every family the controller exports has a panel.
  for (const auto& f : test::controllerFamilies()) EXPECT_TRUE(used.count(f.name)) << f.name << " has no panel";
}

}  // namespace
}  // namespace ddp
