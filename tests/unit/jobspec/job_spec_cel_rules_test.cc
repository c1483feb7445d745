// The CRD's admission rules (common/jobspec/job_spec_cel_rules.h) against their oracle,
// JobSpec::validate(): every rule has an invalid example in
// tests/kubernetes/fixtures/cel-invalid-ddpjobs.yaml, which the parser refuses at the field the
// example names (the Kubernetes checks evaluate the rules' CEL on the same documents), and every
// rule is in the committed CRD at its node.
#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_cel_rules.h"
#include "common/jobspec/job_spec_fields.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

const char* kFixture = DDP_SOURCE_DIR "/tests/kubernetes/fixtures/cel-invalid-ddpjobs.yaml";
const char* kCrdPath = DDP_SOURCE_DIR "/charts/ddp/crds/ddpjobs.ddp.dev.yaml";

std::string text(const YAML::Node& doc) {
  YAML::Emitter out;
  out << doc;
  return out.c_str();
}

TEST(JobSpecCelRulesTest, EveryRuleHasAnExampleThatValidationRefusesAtItsField) {
  std::set<std::string> ids;
  for (const SpecCelRule& r : jobSpecCelRules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << "two rules named " << r.id;
  }
  std::map<std::string, int> examples;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kFixture)) {
    const YAML::Node annotations = doc["metadata"]["annotations"];
    ASSERT_TRUE(annotations) << text(doc);
    const std::string rule = annotations["ddp.dev/violates"].as<std::string>();
    const std::string field = annotations["ddp.dev/refused-at"].as<std::string>();
    SCOPED_TRACE(rule);
    EXPECT_TRUE(ids.count(rule)) << "the fixture names a rule the table lacks";
    ++examples[rule];
    const std::vector<SpecError> errors = spec_test::errorsOf(text(doc));
    EXPECT_NE(spec_test::find(errors, field), nullptr) << "not refused at " << field << ":\n" << text(doc);
  }
  for (const std::string& id : ids) EXPECT_EQ(examples[id], 1) << "examples of rule " << id;
}

TEST(JobSpecCelRulesTest, TheCrdCarriesEveryRuleAtItsNode) {
  YAML::Node crd = YAML::LoadFile(kCrdPath);
  YAML::Node schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  for (const SpecCelRule& r : jobSpecCelRules()) {
    SCOPED_TRACE(r.id);
    YAML::Node node = YAML::Clone(schema);
    std::string rest = r.at;
    while (!rest.empty()) {
      const size_t dot = rest.find('.');
      node.reset(node["properties"][rest.substr(0, dot)]);  // rebinds (operator= would assign)
      rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
      ASSERT_TRUE(node.IsMap()) << "no schema node " << r.at;
    }
    bool found = false;
    for (const YAML::Node& v : node["x-kubernetes-validations"]) {
      found = found || (v["rule"].as<std::string>() == r.rule && v["message"].as<std::string>() == celRuleMessage(r));
    }
    EXPECT_TRUE(found) << "run scripts/render_manifests.sh";
  }
}

TEST(JobSpecCelRulesTest, ScopeReadsAFieldOrTheTablesDefault) {
  const CelScope spec("spec");
  EXPECT_EQ(spec.value("spec.zero"), "(has(self.zero) ? self.zero : 'none')");
  EXPECT_EQ(spec.value("spec.join.enabled"), "(has(self.join) && has(self.join.enabled) ? self.join.enabled : false)");
  EXPECT_EQ(spec.present("spec.data.uneven.enabled"),
            "has(self.data) && has(self.data.uneven) && has(self.data.uneven.enabled)");
  // A number's default is a double literal, an integer's an int (CEL has no implicit conversion).
  const CelScope timeouts("spec.timeouts");
  EXPECT_EQ(timeouts.value("spec.timeouts.hangSeconds"),
            "(has(self.hangSeconds) ? self.hangSeconds : " + specNumberText(JobSpec{}.timeouts.hangSeconds) + ".0)");
  EXPECT_EQ(timeouts.value("spec.timeouts.heartbeatMisses"),
            "(has(self.heartbeatMisses) ? self.heartbeatMisses : " +
                std::to_string(JobSpec{}.timeouts.heartbeatMisses) + ")");
  const CelScope root("");
  EXPECT_EQ(root.relative("metadata.name"), ".metadata.name");
}

}  // namespace
}  // namespace ddp
