// The CRD's admission rules (common/jobspec/job_spec_cel_rules.h) against their oracle,
// JobSpec::validate(): every rule has an invalid example in
// tests/kubernetes/fixtures/cel-invalid-ddpjobs.yaml, which the parser refuses at the field the
// example names (the Kubernetes checks evaluate the rules' CEL on the same documents), and every
// rule is in the committed CRD at its node. A transition rule's example is an update (the
// annotation ddp.dev/old): both versions parse, and managedByChangeError() refuses the change
// at the field the example names.
#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <map>
#include <optional>
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

// RFC 7386: `patch` (JSON, which is YAML) applied to a copy of `target`.
YAML::Node mergePatch(const YAML::Node& target, const YAML::Node& patch) {
  if (!patch.IsMap()) return YAML::Clone(patch);
  YAML::Node out = target.IsMap() ? YAML::Clone(target) : YAML::Node(YAML::NodeType::Map);
  for (const auto& kv : patch) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsNull()) {
      out.remove(key);
    } else {
      out[key] = mergePatch(out[key], kv.second);
    }
  }
  return out;
}

std::string managedBy(const std::string& yaml) {
  auto spec = parseJobSpec(yaml);
  EXPECT_TRUE(spec.isOk()) << spec.status() << "\n" << yaml;
  return spec.isOk() ? spec->managedBy : "";
}

// The rule's example refused at `field`: by validate(), or as an update from ddp.dev/old.
void expectRefused(const YAML::Node& doc, const std::string& field) {
  const YAML::Node old = doc["metadata"]["annotations"]["ddp.dev/old"];
  if (!old) {
    const std::vector<SpecError> errors = spec_test::errorsOf(text(doc));
    EXPECT_NE(spec_test::find(errors, field), nullptr) << "not refused at " << field << ":\n" << text(doc);
    return;
  }
  const std::string before = text(mergePatch(doc, YAML::Load(old.as<std::string>())));
  const std::optional<SpecError> e = managedByChangeError(managedBy(before), managedBy(text(doc)));
  ASSERT_TRUE(e.has_value()) << "the update is no change:\n" << before << "\n---\n" << text(doc);
  EXPECT_EQ(e->path, field);
}

TEST(JobSpecCelRulesTest, ManagedByChangeErrorNamesTheFieldAndBothValues) {
  EXPECT_FALSE(managedByChangeError("", "").has_value());
  EXPECT_FALSE(managedByChangeError("kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/multikueue").has_value());
  const std::optional<SpecError> e = managedByChangeError("kueue.x-k8s.io/multikueue", "");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->path, "spec.managedBy");
  EXPECT_NE(e->message.find("was 'kueue.x-k8s.io/multikueue', now unset"), std::string::npos) << e->message;
  // Naming this controller explicitly is a change too, as the CRD's rule has it.
  EXPECT_TRUE(managedByChangeError("", kDdpControllerManager).has_value());
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
    expectRefused(doc, field);
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
  // The version before an update, for a transition rule.
  const CelScope old("spec", "oldSelf");
  EXPECT_EQ(old.value("spec.managedBy"), "(has(oldSelf.managedBy) ? oldSelf.managedBy : '')");
}

}  // namespace
}  // namespace ddp
