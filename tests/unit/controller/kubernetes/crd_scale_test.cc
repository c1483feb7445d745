// The DDPJob CRD's scale subresource (Note [Elastic membership] in controller/jobs/membership/membership.h):
// `kubectl scale ddpj NAME --replicas=N` writes the path specReplicasPath names, which must be the
// integer field the reconciler reads as the job's worker count (desiredWorkerCount), and
// statusReplicasPath and labelSelectorPath must be status fields the controller writes.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "controller/kubernetes/ddpjob_reconciler.h"

namespace ddp::controller::kube {
namespace {

YAML::Node versionV1() {
  YAML::Node crd = YAML::LoadFile(DDP_SOURCE_DIR "/charts/ddp/crds/ddpjobs.ddp.dev.yaml");
  for (const YAML::Node& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() == "v1") return v;
  }
  return YAML::Node();
}

// The schema node of a JSON path such as ".spec.workers.count".
YAML::Node schemaAt(const YAML::Node& v1, const std::string& path) {
  YAML::Node node;
  node.reset(v1["schema"]["openAPIV3Schema"]);
  size_t start = 1;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    node.reset(node["properties"][key]);  // reset: assignment would write into the tree
    if (!node) return node;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node;
}

TEST(KubernetesCrdScaleTest, TheScaleSubresourceMapsReplicasToTheWorkerCount) {
  const YAML::Node v1 = versionV1();
  ASSERT_TRUE(v1);
  const YAML::Node scale = v1["subresources"]["scale"];
  ASSERT_TRUE(scale.IsMap());
  EXPECT_EQ(scale["specReplicasPath"].as<std::string>(), ".spec.workers.count");
  EXPECT_EQ(scale["statusReplicasPath"].as<std::string>(), ".status.readyWorkers");
  EXPECT_EQ(schemaAt(v1, ".spec.workers.count")["type"].as<std::string>(), "integer");
  EXPECT_EQ(schemaAt(v1, ".status.readyWorkers")["type"].as<std::string>(), "integer");
  // A HorizontalPodAutoscaler needs the selector: a string status field the controller writes
  // (ddpJobStatus; KubernetesStatusTest checks its value).
  EXPECT_EQ(scale["labelSelectorPath"].as<std::string>(), ".status.selector");
  EXPECT_EQ(schemaAt(v1, ".status.selector")["type"].as<std::string>(), "string");

  using nlohmann::json;
  EXPECT_EQ(desiredWorkerCount(json::parse(R"({"spec":{"workers":{"count":3}}})")), 3);
  EXPECT_EQ(desiredWorkerCount(json::parse(R"({"spec":{"workers":{"count":"3"}}})")), std::nullopt);
  EXPECT_EQ(desiredWorkerCount(json::parse(R"({"spec":{}})")), std::nullopt);
  EXPECT_EQ(desiredWorkerCount(json::parse(R"({"spec":{"workers":{"count":-1}}})")), std::nullopt);
}

}  // namespace
}  // namespace ddp::controller::kube
