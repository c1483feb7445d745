// `ddpctl render`: in-process on job files written by the test, the printed YAML read back
// (yaml-cpp) and compared with the launcher's renderJobObjects for the same job and flags (the
// launcher's side is checked against the fake API server in job_objects_test.cc); the exit
// statuses of an invalid job, an object the API server would refuse, bad arguments and a missing
// file; and the built ddpctl binary dispatching to it.
#include "tools/ddpctl/render_command.h"

#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "controller/launch/kubernetes/job_objects.h"
#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"
#include "tools/ddpctl/run_command.h"

namespace ddp::ddpctl {
namespace {

using nlohmann::json;
using test::TempDir;

struct Ran {
  int status = -1;
  std::string out, err;
};

Ran render(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Ran r;
  r.status = renderCommand(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

const char* kJob =
    "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm}\n"
    "spec:\n"
    "  workers: {count: 2}\n"
    "  model: {type: mlp}\n"
    "  data: {dataset: synthetic}\n"
    "  epochs: 1\n"
    "  kubernetes: {resources: {limits: {memory: 8Gi}}, nodeSelector: {pool: train}}\n";

// A YAML node as JSON: scalars as the YAML 1.2 core schema reads them (ints, bools, strings).
json toJson(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = toJson(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const YAML::Node& x : n) a.push_back(toJson(x));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.as<std::string>();
  if (n.Tag() == "!") return s;  // quoted
  if (s == "true" || s == "false") return s == "true";
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(n, i)) return i;
  return s;
}

std::vector<json> documents(const std::string& yaml) {
  std::vector<json> out;
  for (const YAML::Node& d : YAML::LoadAll(yaml)) out.push_back(toJson(d));
  return out;
}

TEST(RenderCommandTest, PrintsTheLaunchersObjectsAsYaml) {
  TempDir dir("render");
  const std::string file = dir.write("job.yaml", kJob);
  Ran r = render({file, "--worker-image", "reg.example/ddp:1", "--namespace=ml", "--advertise-url",
                  "http://ctl.ml.svc:8081"});
  ASSERT_EQ(r.status, kExitOk) << r.err;

  auto spec = parseJobSpec(kJob);
  ASSERT_TRUE(spec.isOk());
  controller::kube::RenderOptions o;
  o.nameSpace = "ml";
  o.defaultImage = "reg.example/ddp:1";
  o.settings.controllerUrl = "http://ctl.ml.svc:8081";
  auto expected = controller::kube::renderJobObjects(*spec, o);
  ASSERT_TRUE(expected.isOk()) << expected.status();
  const std::vector<json> printed = documents(r.out);
  ASSERT_EQ(printed.size(), expected->size());  // Secret, Service, 2 pods
  for (size_t i = 0; i < printed.size(); ++i) EXPECT_EQ(printed[i], (*expected)[i]) << i;
  EXPECT_EQ(printed[2]["spec"]["containers"][0]["image"], "reg.example/ddp:1");
  EXPECT_EQ(printed[3]["metadata"]["namespace"], "ml");
}

TEST(RenderCommandTest, DefaultsAreTheChartsAdvertiseUrlInNamespaceDefault) {
  TempDir dir("render");
  Ran r = render({dir.write("job.yaml", kJob), "--image", "i:1"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  const json pod = documents(r.out).at(2);
  EXPECT_EQ(pod["metadata"]["namespace"], "default");
  bool found = false;
  for (const json& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == "DDP_CONTROLLER_URL") found = e["value"] == defaultAdvertiseUrl("default");
  }
  EXPECT_TRUE(found) << pod.dump();
}

TEST(RenderCommandTest, RefusalsExitWithTheirStatusAndReason) {
  TempDir dir("render");
  const std::string job = dir.write("job.yaml", kJob);
  Ran noImage = render({job});
  EXPECT_EQ(noImage.status, kExitUsage);
  EXPECT_NE(noImage.err.find("the API server would refuse Pod fm-worker-0: spec.containers[0].image"),
            std::string::npos)
      << noImage.err;
  EXPECT_TRUE(noImage.out.empty());

  Ran badNamespace = render({job, "--image", "i:1", "--namespace", "Team_A"});
  EXPECT_EQ(badNamespace.status, kExitUsage);
  EXPECT_NE(badNamespace.err.find("metadata.namespace"), std::string::npos) << badNamespace.err;

  std::string both = kJob;
  both += "  steps: 10\n";
  Ran invalid = render({dir.write("both.yaml", both), "--image", "i:1"});
  EXPECT_EQ(invalid.status, kExitUsage);
  EXPECT_NE(invalid.err.find("spec.steps"), std::string::npos) << invalid.err;

  EXPECT_EQ(render({dir.file("missing.yaml")}).status, kExitFailed);
  EXPECT_EQ(render({}).status, kExitUsage);
  EXPECT_EQ(render({job, "--bogus"}).status, kExitUsage);
  EXPECT_EQ(render({job, job}).status, kExitUsage);
  Ran help = render({"--help"});
  EXPECT_EQ(help.status, kExitOk);
  EXPECT_EQ(help.out, renderUsage());
}

TEST(RenderCommandTest, TheBuiltDdpctlRunsIt) {
  const std::string ddpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
  if (!std::filesystem::exists(ddpctl)) GTEST_SKIP() << ddpctl << " is not built";
  TempDir dir("render");
  const std::string job = dir.write("job.yaml", kJob);
  auto r = test::runCli({ddpctl, "render", job, "--worker-image", "i:1"}, 30);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, render({job, "--worker-image", "i:1"}).out);
  auto refused = test::runCli({ddpctl, "render", job}, 30);
  EXPECT_EQ(refused.exitCode, 2);
  auto help = test::runCli({ddpctl, "help", "render"}, 30);
  EXPECT_EQ(help.out, renderUsage());
  auto top = test::runCli({ddpctl, "--help"}, 30);
  EXPECT_NE(top.out.find("render JOB.yaml"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace ddp::ddpctl
