// The field table is the one source of the DDPJob's shape (Note [Job spec field table]):
//  - the committed CRD and the field table of docs/JOB_SPEC.md are what the table gives
//    (regenerate both with scripts/render_manifests.sh);
//  - each plain constraint the table states is enforced by the parser, and the CRD states the
//    same one: for every bounded field, a document one step past the bound is refused, naming
//    that field, and the value on the bound is accepted (oracle: the table's own bounds, read
//    back from the generated CRD by yaml-cpp, an independent reader).
#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"
#include "common/jobspec/job_spec_schema.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(JobSpecSchemaTest, TheCommittedCrdIsWhatTheFieldTableGives) {
  auto crd = renderJobSpecCrd(readFile(DDP_SOURCE_DIR "/tools/jobspec/ddpjob_crd.template.yaml"));
  ASSERT_TRUE(crd.isOk()) << crd.status();
  EXPECT_TRUE(*crd == readFile(DDP_SOURCE_DIR "/charts/ddp/crds/ddpjobs.ddp.dev.yaml"))
      << "charts/ddp/crds/ddpjobs.ddp.dev.yaml is out of date: run scripts/render_manifests.sh";
}

TEST(JobSpecSchemaTest, TheDocsFieldTableIsWhatTheFieldTableGives) {
  const std::string doc = readFile(DDP_SOURCE_DIR "/docs/JOB_SPEC.md");
  auto rendered = renderJobSpecDocs(doc);
  ASSERT_TRUE(rendered.isOk()) << rendered.status();
  EXPECT_TRUE(*rendered == doc) << "docs/JOB_SPEC.md's field table is out of date: run scripts/render_manifests.sh";
}

TEST(JobSpecSchemaTest, TemplatesWithoutTheirMarkersAreRefusedNamingThem) {
  auto crd = renderJobSpecCrd("apiVersion: v1\n");
  ASSERT_FALSE(crd.isOk());
  EXPECT_NE(crd.status().message().find(std::string(kCrdSpecPlaceholder)), std::string::npos);
  // The spec's placeholder alone: the document rules' is missing.
  crd = renderJobSpecCrd("schema:\n  " + std::string(kCrdSpecPlaceholder) + "\n");
  ASSERT_FALSE(crd.isOk());
  EXPECT_NE(crd.status().message().find(std::string(kCrdDocumentRulesPlaceholder)), std::string::npos);
  auto docs = renderJobSpecDocs("# no table\n");
  ASSERT_FALSE(docs.isOk());
  EXPECT_NE(docs.status().message().find(std::string(kDocsTableBegin)), std::string::npos);
}

// Every field described, in the CRD too (`kubectl explain`).
TEST(JobSpecSchemaTest, EveryFieldHasADescription) {
  for (const SpecField& f : jobSpecFields()) {
    EXPECT_FALSE(f.description.empty()) << f.path;
  }
}

// The schema node of `path` ("spec.data.batchSize") in the generated CRD.
YAML::Node crdNode(const YAML::Node& specSchema, const std::string& path) {
  YAML::Node n = specSchema;
  std::stringstream parts(path.substr(std::string("spec.").size()));
  // reset(), not `=`: assigning a yaml-cpp node writes into the tree it refers to.
  for (std::string key; std::getline(parts, key, '.');) n.reset(n["properties"][key]);
  return n;
}

// A document for the bound test: every conditional group switched on where it can be (cnn,
// synthetic with 784 features, adam, a step schedule, PowerSGD), with `path` set to `value`.
std::string documentWith(const std::string& path, const std::string& value) {
  YAML::Node doc = YAML::Load(
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: bounds}\n"
      "spec:\n  model: {type: cnn}\n  data: {dataset: synthetic, synthetic: {features: 784}}\n  epochs: 1\n"
      "  optimizer: {type: adam, schedule: {type: step}}\n"
      "  commHook: {type: powerSGD, powerSGD: {startIter: 10}}\n");
  std::vector<std::string> keys;
  std::stringstream parts(path);
  for (std::string key; std::getline(parts, key, '.');) keys.push_back(key);
  std::vector<YAML::Node> chain{doc};
  for (size_t i = 0; i + 1 < keys.size(); ++i) chain.push_back(chain.back()[keys[i]]);
  chain.back()[keys.back()] = YAML::Load(value);
  YAML::Emitter out;
  out << doc;
  return out.c_str();
}

TEST(JobSpecSchemaTest, EveryBoundTheTableStatesIsEnforcedAndInTheCrd) {
  auto crd = renderJobSpecCrd(readFile(DDP_SOURCE_DIR "/tools/jobspec/ddpjob_crd.template.yaml"));
  ASSERT_TRUE(crd.isOk());
  const YAML::Node versions = YAML::Load(*crd)["spec"]["versions"];
  ASSERT_EQ(versions.size(), 1u);
  const YAML::Node specSchema = versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  int tested = 0;
  for (const SpecField& f : jobSpecFields()) {
    const bool scalar = f.type == SpecFieldType::kInteger || f.type == SpecFieldType::kNumber;
    if (!scalar || !f.get || f.checkedByRule || !f.min || f.path.rfind("spec.", 0) != 0) continue;
    const std::string path(f.path);
    SCOPED_TRACE(path);
    const YAML::Node schema = crdNode(specSchema, path);
    ASSERT_TRUE(schema["minimum"]) << "the CRD states the bound";
    EXPECT_EQ(schema["minimum"].as<double>(), f.min->value);
    const bool integer = f.type == SpecFieldType::kInteger;
    const double step = integer ? 1 : std::max(1e-6, std::fabs(f.min->value) * 1e-3);
    const double below = f.min->exclusive ? f.min->value : f.min->value - step;
    std::ostringstream text;
    text.precision(17);
    text << below;
    auto errors = spec_test::errorsOf(documentWith(path, integer ? std::to_string(static_cast<int64_t>(below)) : text.str()));
    EXPECT_NE(spec_test::find(errors, path), nullptr) << "refused at the field";
    if (!f.min->exclusive) {
      std::ostringstream on;
      on.precision(17);
      on << f.min->value;
      std::vector<SpecError> errs;
      (void)parseJobSpec(documentWith(path, integer ? std::to_string(static_cast<int64_t>(f.min->value)) : on.str()), &errs);
      for (const SpecError& e : errs) {
        // A cross-field rule may still refuse the value (epochs: 0 without steps); the table's
        // bound ("must be >= 1, got 0") does not.
        const bool boundError = e.message.rfind("must be >", 0) == 0 && e.message.find(", got ") != std::string::npos;
        EXPECT_FALSE(e.path == path && boundError) << "the bound itself is accepted: " << e.toString();
      }
    }
    ++tested;
  }
  EXPECT_GE(tested, 30) << "most bounded fields are exercised";
}

}  // namespace
}  // namespace ddp
