// One source of truth for the shape of a DDPJob: the CRD's OpenAPI schema
// (charts/ddp/crds/ddpjobs.ddp.dev.yaml) and the job spec parser's field table
// (common/jobspec/job_spec_fields.cc, from which the parser takes the keys it accepts) must list the same
// fields with the same types. A field added to one and not the other fails here, naming it.
#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

const char* kCrdPath = DDP_SOURCE_DIR "/charts/ddp/crds/ddpjobs.ddp.dev.yaml";

YAML::Node loadCrd() {
  YAML::Node crd = YAML::LoadFile(kCrdPath);
  EXPECT_EQ(crd["kind"].as<std::string>(), "CustomResourceDefinition");
  return crd;
}

YAML::Node versionV1(const YAML::Node& crd) {
  for (const YAML::Node& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() == "v1") return v;
  }
  ADD_FAILURE() << "no version v1 in " << kCrdPath;
  return YAML::Node();
}

// The table's type for one schema node; "" when the schema says nothing the table can hold.
std::string typeOf(const YAML::Node& schema) {
  const std::string type = schema["type"] ? schema["type"].as<std::string>() : "";
  // A carried Kubernetes object (Note [Carried Kubernetes objects]).
  const auto carried = [](const YAML::Node& s) {
    return s["x-kubernetes-preserve-unknown-fields"] && s["x-kubernetes-preserve-unknown-fields"].as<bool>();
  };
  if (type == "object" && carried(schema)) return "Kubernetes object";
  if (type == "array" && carried(schema["items"])) return "array of Kubernetes object";
  if (type == "array") {
    const std::string item = schema["items"]["type"] ? schema["items"]["type"].as<std::string>() : "";
    return "array of " + item;
  }
  if (type == "object" && schema["additionalProperties"]) {
    const YAML::Node& a = schema["additionalProperties"];
    if (a["x-kubernetes-int-or-string"] && a["x-kubernetes-int-or-string"].as<bool>()) return "map of quantity";
    if (a["type"] && a["type"].as<std::string>() == "string") return "map of string";
    return "map of ?";
  }
  return type;
}

// Records the properties of an object schema under `path` ("" for the root).
void walk(const YAML::Node& schema, const std::string& path, std::map<std::string, std::string>* out);

void walkProperties(const YAML::Node& schema, const std::string& path,
                    std::map<std::string, std::string>* out) {
  if (!schema["properties"]) return;
  for (const auto& kv : schema["properties"]) {
    const std::string key = kv.first.as<std::string>();
    walk(kv.second, path.empty() ? key : path + "." + key, out);
  }
}

// path -> type for `schema` and every property under it (the fields of list items under
// "path[]", as in the field table).
void walk(const YAML::Node& schema, const std::string& path, std::map<std::string, std::string>* out) {
  const std::string type = typeOf(schema);
  if (!path.empty()) (*out)[path] = type;
  if (type == "array of object") walkProperties(schema["items"], path + "[]", out);
  walkProperties(schema, path, out);
}

TEST(KubernetesCrdTest, SpecSchemaAndParserFieldTableListTheSameFields) {
  YAML::Node schema = versionV1(loadCrd())["schema"]["openAPIV3Schema"];
  ASSERT_TRUE(schema.IsMap());
  std::map<std::string, std::string> crd;
  walk(schema["properties"]["spec"], "spec", &crd);
  std::map<std::string, std::string> table;
  for (const SpecField& f : jobSpecFields()) {
    const std::string path(f.path);
    if (path == "spec" || path.rfind("spec.", 0) == 0) table[path] = specFieldTypeName(f.type);
  }
  for (const auto& [path, type] : table) {
    auto it = crd.find(path);
    if (it == crd.end()) {
      ADD_FAILURE() << path << " is accepted by parseJobSpec but missing from the CRD schema";
    } else {
      EXPECT_EQ(it->second, type) << path << ": the CRD says " << it->second << ", the parser " << type;
    }
  }
  for (const auto& [path, type] : crd) {
    EXPECT_TRUE(table.count(path)) << path << " (" << type
                                   << ") is in the CRD schema but parseJobSpec refuses it";
  }
  EXPECT_GT(table.size(), 100u);  // the walk saw the whole spec
}

TEST(KubernetesCrdTest, TopLevelFieldsMatchAndRequiredFieldsAgree) {
  YAML::Node schema = versionV1(loadCrd())["schema"]["openAPIV3Schema"];
  std::vector<std::string> top;
  for (const auto& kv : schema["properties"]) top.push_back(kv.first.as<std::string>());
  std::vector<std::string> keys = jobSpecFieldKeys("");
  std::sort(top.begin(), top.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(top, keys);
  // What the CRD requires, the parser requires: a document without it is refused there.
  const YAML::Node spec = schema["properties"]["spec"];
  for (const YAML::Node& r : spec["required"]) {
    const std::string field = r.as<std::string>();
    std::string doc = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: r}\nspec:\n  epochs: 1\n";
    if (field != "model") doc += "  model: {type: mlp}\n";
    if (field != "data") doc += "  data: {dataset: synthetic}\n";
    std::vector<SpecError> errors;
    EXPECT_FALSE(parseJobSpec(doc, &errors).isOk()) << field;
    bool named = false;
    for (const SpecError& e : errors) named = named || e.path == "spec." + field;
    EXPECT_TRUE(named) << "spec." << field;
  }
}

TEST(KubernetesCrdTest, NamesSubresourcesAndPrinterColumns) {
  YAML::Node crd = loadCrd();
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "ddpjobs.ddp.dev");
  EXPECT_EQ(crd["spec"]["group"].as<std::string>(), "ddp.dev");
  EXPECT_EQ(std::string(kJobApiVersion), "ddp.dev/v1");
  EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(), kJobKind);
  EXPECT_EQ(crd["spec"]["names"]["shortNames"][0].as<std::string>(), "ddpj");
  YAML::Node v1 = versionV1(crd);
  EXPECT_TRUE(v1["served"].as<bool>());
  EXPECT_TRUE(v1["storage"].as<bool>());
  EXPECT_TRUE(v1["subresources"]["status"].IsMap());
  std::vector<std::string> columns;
  for (const YAML::Node& c : v1["additionalPrinterColumns"]) columns.push_back(c["name"].as<std::string>());
  EXPECT_EQ(columns, (std::vector<std::string>{"Phase", "Workers", "Step", "Accuracy", "ValLoss", "Age"}));
  for (const YAML::Node& c : v1["additionalPrinterColumns"]) {
    if (c["name"].as<std::string>() == "ValLoss") EXPECT_EQ(c["priority"].as<int>(), 1) << "-o wide only";
  }
  // Every column points at a field the status schema has.
  std::map<std::string, std::string> fields;
  walk(v1["schema"]["openAPIV3Schema"], "", &fields);
  for (const YAML::Node& c : v1["additionalPrinterColumns"]) {
    std::string path = c["jsonPath"].as<std::string>().substr(1);
    if (path == "metadata.creationTimestamp") continue;
    EXPECT_TRUE(fields.count(path)) << c["name"] << " -> " << path;
  }
  // The status a kubectl user reads (the list; rendezvousGeneration, not generation).
  for (const char* f : {"status.phase", "status.conditions", "status.readyWorkers", "status.worldSize",
                        "status.rendezvousGeneration", "status.restarts", "status.progress",
                        "status.progress.valLoss", "status.progress.perplexity", "status.progress.tokensPerSecond",
                        "status.progress.mfu"}) {
    EXPECT_TRUE(fields.count(f)) << f;
  }
  EXPECT_FALSE(fields.count("status.generation"));
}

// The Kubernetes examples are real jobs: the parser (the controller's gate) takes them, with
// their spec.kubernetes, and they round-trip. (Their check against the CRD schema:
// KubernetesCrdExamples, tests/kubernetes/check.sh.)
TEST(KubernetesCrdTest, ManifestExamplesParseAndRoundTrip) {
  const std::vector<JobSpec> specs = spec_test::loadRoundTripping(DDP_SOURCE_DIR "/manifests/examples");
  EXPECT_GE(specs.size(), 2u);
  for (const JobSpec& s : specs) {
    if (s.device == JobDevice::kCuda) EXPECT_EQ(s.kubernetes.resources.limits.at(kNvidiaGpuResource), "1") << s.name;
  }
}

}  // namespace
}  // namespace ddp
