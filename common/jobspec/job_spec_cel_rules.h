#pragma once
// The admission rules of the DDPJob CRD: the cross-field rules of JobSpec::validate() that can be
// stated in CEL over the document as submitted, written into the CRD as x-kubernetes-validations
// (job_spec_schema.cc), so that `kubectl apply` refuses such a job at once instead of the
// controller reporting it in the resource's status (Note [CRD admission rules]).
// Thread model: immutable data and pure functions.
//
// Note [CRD admission rules]
// The API server applies no defaults to a DDPJob (the CRD has none), so a rule sees only the
// fields the document sets. Each rule reads a field through its value in the document or, when
// absent, the default the field table gives (CelScope::value), so that a rule and the parser
// agree on what an absent field means and the defaults cannot drift. Every rule mirrors a
// refusal of validate(): tests/unit/jobspec/job_spec_cel_rules_test.cc runs each invalid example
// of tests/kubernetes/fixtures/cel-invalid-ddpjobs.yaml through parseJobSpec and expects the
// refusal at the field the example names; the Kubernetes checks (tests/kubernetes/
// validate_cel_rules.mjs) evaluate every rule with a CEL evaluator against the same examples and
// against every example job. A real API server estimates each rule's cost and refuses a CRD whose
// rules may cost too much: every string and list a rule reads has maxLength or maxItems in the
// schema (enumerations get the length of their longest spelling; the job's name the 253
// characters of any object name), which the same check verifies. Rules not stated here: what
// needs list iteration or quantities (uneven counts per worker, GPU limits, tolerations), and
// the name of a data file or directory that a dataset needs.
// One rule is a transition rule, between a DDPJob and its update (`oldSelf`):
// managed-by-immutable. It stands on spec, not on spec.managedBy, because the API server runs a
// field's transition rule only when both versions have the field, and setting or removing
// spec.managedBy is a change too (the CRD has no defaults). Its oracle is
// managedByChangeError() (job_spec.h), which the controller's front end applies as well; its
// examples carry the version before the update in the annotation ddp.dev/old.

#include <string>
#include <string_view>
#include <vector>

namespace ddp {

struct SpecCelRule {
  std::string id;         // names the rule in tests and fixtures: "epochs-or-steps"
  std::string at;         // the schema node the rule is on: "" (the document), "spec", "spec.workers"
  std::string rule;       // CEL; `self` is the node at `at`
  std::string message;    // what kubectl prints, naming the fields
  std::string fieldPath;  // the field blamed, relative to `at` (".steps"); "" for the node itself
};

// Every rule, in the order the CRD lists them.
const std::vector<SpecCelRule>& jobSpecCelRules();

// The message the CRD gives: the rule's, naming the rule ("... (rule epochs-or-steps)"), so that
// a user can look it up in docs/JOB_SPEC.md and the checks can tell which rule refused.
std::string celRuleMessage(const SpecCelRule& rule);

// The rules on the schema node `at`.
std::vector<const SpecCelRule*> jobSpecCelRulesAt(std::string_view at);

// A CEL expression for the fields under a schema node `at`: value("spec.zero") is the field's
// value in the document, or the table's default when the document leaves it out. `root` is the
// variable the node is: `self`, or `oldSelf` for the version before an update (a transition
// rule, which the API server evaluates on updates only).
class CelScope {
 public:
  explicit CelScope(std::string at, std::string root = "self") : at_(std::move(at)), root_(std::move(root)) {}
  // `path` (a field of the table under at_) or its default; aborts on a field the table lacks
  // or one without a constant default (a programming error in the rule table).
  std::string value(std::string_view path) const;
  // `path` or `fallback` (a CEL expression) when absent.
  std::string valueOr(std::string_view path, const std::string& fallback) const;
  // Whether the document sets `path`: has(self.a) && has(self.a.b) (with root_ for self).
  std::string present(std::string_view path) const;
  // ".a.b": `path` relative to at_, as fieldPath writes it.
  std::string relative(std::string_view path) const;

 private:
  std::string at_;
  std::string root_;
};

}  // namespace ddp
